//! `wis`: the harness's command line. See `wis --help`.

use std::io::Write;
use std::process::ExitCode;

use lockref_harness::options::{Options, HELP};
use lockref_harness::{machine, report, run_replay, run_testcases, trace};

fn main() -> ExitCode {
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wis: {e}");
            ExitCode::from(2)
        }
    }
}

fn write_file(path: &str, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))
}

fn real_main() -> Result<(), String> {
    let opts = Options::parse(std::env::args().skip(1))?;
    if opts.help {
        print!("{HELP}");
        return Ok(());
    }
    if let Some(log) = &opts.convert {
        let text = std::fs::read_to_string(log).map_err(|e| format!("{log}: {e}"))?;
        let conv = trace::convert_strace(&text);
        match &opts.out {
            Some(path) => write_file(path, &conv.trace)?,
            None => print!("{}", conv.trace),
        }
        eprintln!(
            "wis: {} operations written, {} lines skipped",
            conv.ops, conv.skipped
        );
        return Ok(());
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let machine = machine();
    let _ = writeln!(
        out,
        "lockref harness on {machine}; threads {:?}; {:?} per run after {:?} warm-up",
        opts.threads, opts.duration, opts.warmup
    );
    let results = match &opts.replay {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
            let ops = trace::parse(&text).map_err(|e| format!("{path}: {e}"))?;
            if ops.is_empty() {
                return Err(format!("{path}: no operations in the trace"));
            }
            run_replay(&ops, &opts, &mut out).map_err(|e| e.to_string())?
        }
        None => run_testcases(&opts, &mut out).map_err(|e| e.to_string())?,
    };
    let _ = writeln!(out, "\n{}", report::summary(&results));
    if let Some(p) = &opts.csv {
        write_file(p, &report::csv(&results))?;
    }
    if let Some(p) = &opts.json {
        write_file(p, &report::json(&results, &machine))?;
    }
    if let Some(p) = &opts.svg {
        write_file(p, &report::svg(&results, &machine))?;
    }
    Ok(())
}
