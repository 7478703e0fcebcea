//! `wis`: the harness's command line. See `wis --help`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use lockref_harness::options::Options;
use lockref_harness::{compare, machine, plot, report, run_replay, run_testcases, trace};

fn main() -> ExitCode {
    let opts = match Options::parse(std::env::args().skip(1)) {
        Ok(o) => o,
        // Prints the help or the error naming the option; exits 0 or 2.
        Err(e) => e.exit(),
    };
    match real_main(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wis: {e}");
            ExitCode::from(2)
        }
    }
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn read_file(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn read_reports(paths: &[std::path::PathBuf]) -> Result<Vec<report::JsonReport>, String> {
    paths
        .iter()
        .map(|p| serde_json::from_str(&read_file(p)?).map_err(|e| format!("{}: {e}", p.display())))
        .collect()
}

fn real_main(opts: &Options) -> Result<(), String> {
    if !opts.compare.is_empty() {
        let (base, other) = (read_reports(&opts.compare)?, read_reports(&opts.against)?);
        let rows = compare::compare(&base, &other)?;
        print!("{}", compare::table(&rows, &base, &other));
        return Ok(());
    }
    if let Some(log) = &opts.convert {
        let text = trace::read_text(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let conv = trace::convert_strace(&text, opts.cwd.as_deref());
        match &opts.out {
            Some(path) => write_file(path, &conv.trace)?,
            None => print!("{}", conv.trace),
        }
        eprint!("{}", conv.report());
        return Ok(());
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let machine = machine();
    let _ = writeln!(
        out,
        "lockref harness on {machine}; dentries on the {} word; threads {:?}; {:?} per run after {:?} warm-up; {}",
        lockref_dcache::DENTRY_WORD,
        opts.threads,
        opts.duration,
        opts.warmup,
        if opts.pin { "pinned" } else { "not pinned" }
    );
    if cfg!(feature = "testing") {
        // `cargo test -p lockref-harness` builds this binary too, with its
        // dev-dependency's `testing` feature, which turns on lockref's
        // `stats`: counters on every lockref operation, which halve the
        // lockref rows.
        let _ = writeln!(
            out,
            "NOT FOR MEASURING: built with the `testing` feature (a `cargo test` build: lockref's `stats`\n\
             count every lockref operation). `cargo build --release -p lockref-harness` builds the one to run."
        );
    }
    let results = match &opts.replay {
        Some(path) => {
            let text = trace::read_text(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let ops = trace::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            if ops.is_empty() {
                return Err(format!("{}: no operations in the trace", path.display()));
            }
            run_replay(&ops, opts, &mut out).map_err(|e| e.to_string())?
        }
        None => run_testcases(opts, &mut out).map_err(|e| e.to_string())?,
    };
    let _ = writeln!(out, "\n{}", report::summary(&results));
    let _ = write!(out, "{}", report::legend(&results));
    if let Some(p) = &opts.csv {
        write_file(p, &report::csv(&results).map_err(|e| e.to_string())?)?;
    }
    if let Some(p) = &opts.json {
        write_file(p, &report::json(&results, &machine))?;
    }
    if let Some(p) = &opts.svg {
        plot::svg(p, &results, &machine)?;
    }
    if let Some(p) = &opts.png {
        plot::png(p, &results, &machine)?;
    }
    Ok(())
}
