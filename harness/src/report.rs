//! The summary table and the CSV, JSON and SVG outputs.

use std::fmt::Write as _;

use crate::runner::Measurement;
use crate::testcases::Testcase;

/// The summary: per testcase and thread count, the baseline variant's
/// ops/s, each other variant's, the ratio, and the seed's figure.
pub fn summary(results: &[Measurement]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<10} {:>7} {:>16} {:>14} {:>16} {:>14} {:>7}  seed reported",
        "testcase", "threads", "before", "ops/s", "after", "ops/s", "ratio"
    );
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for m in results {
        if !seen.contains(&(&m.testcase, m.threads)) {
            seen.push((&m.testcase, m.threads));
        }
    }
    for (testcase, threads) in seen {
        let group: Vec<&Measurement> = results
            .iter()
            .filter(|m| m.testcase == testcase && m.threads == threads)
            .collect();
        let Some(base) = group.first() else { continue };
        let figure = Testcase::from_name(testcase).map_or("", Testcase::seed_figure);
        for after in group.iter().skip(1) {
            let _ = writeln!(
                out,
                "{:<10} {:>7} {:>16} {:>14.0} {:>16} {:>14.0} {:>6.2}x  {}",
                testcase,
                threads,
                base.variant,
                base.total,
                after.variant,
                after.total,
                after.total / base.total.max(f64::MIN_POSITIVE),
                figure
            );
        }
    }
    out
}

/// CSV with will-it-scale's `runtest.py` columns (`tasks, processes,
/// processes_idle, threads, threads_idle, linear`), one row per thread
/// count, prefixed by the testcase and variant. Only threads are run, so
/// the process and idle columns are 0; `linear` is the one-task rate times
/// the tasks.
pub fn csv(results: &[Measurement]) -> String {
    let mut out = String::from("testcase,variant,tasks,processes,processes_idle,threads,threads_idle,linear,min_thread,max_thread\n");
    for m in results {
        let one = results
            .iter()
            .find(|o| o.testcase == m.testcase && o.variant == m.variant && o.threads == 1)
            .map_or(0.0, |o| o.total);
        let _ = writeln!(
            out,
            "{},{},{},0,0,{:.0},0,{:.0},{:.0},{:.0}",
            m.testcase,
            m.variant.replace(',', ";"),
            m.threads,
            m.total,
            one * m.threads as f64,
            m.min,
            m.max
        );
    }
    out
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The results as a JSON array of objects.
pub fn json(results: &[Measurement], machine: &str) -> String {
    let mut out = format!("{{\"machine\":{},\"results\":[", json_str(machine));
    for (i, m) in results.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "{{\"testcase\":{},\"variant\":{},\"threads\":{},\"ops_per_sec\":{:.1},\"min_thread\":{:.1},\"max_thread\":{:.1}}}",
            json_str(&m.testcase),
            json_str(&m.variant),
            m.threads,
            m.total,
            m.min,
            m.max
        );
    }
    out.push_str("]}\n");
    out
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

/// One SVG with a chart per testcase: ops/s against threads, a line per
/// variant.
pub fn svg(results: &[Measurement], machine: &str) -> String {
    let mut testcases: Vec<&str> = Vec::new();
    for m in results {
        if !testcases.contains(&m.testcase.as_str()) {
            testcases.push(&m.testcase);
        }
    }
    let (w, h, pad) = (460.0, 300.0, 55.0);
    let cols = 2;
    let rows = testcases.len().div_ceil(cols).max(1);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"11\">\n",
        w * cols as f64,
        h * rows as f64 + 30.0
    );
    let _ = writeln!(out, "<text x=\"10\" y=\"20\" font-size=\"14\">lockref harness: ops/s against threads ({})</text>", xml(machine));
    for (i, tc) in testcases.iter().enumerate() {
        let (ox, oy) = ((i % cols) as f64 * w, (i / cols) as f64 * h + 30.0);
        let ms: Vec<&Measurement> = results.iter().filter(|m| m.testcase == *tc).collect();
        let max_t = ms.iter().map(|m| m.threads).max().unwrap_or(1).max(2) as f64;
        let max_y = ms.iter().map(|m| m.total).fold(1.0, f64::max) * 1.1;
        let x = |t: f64| ox + pad + (t - 1.0) / (max_t - 1.0) * (w - 2.0 * pad);
        let y = |v: f64| oy + h - pad - v / max_y * (h - 2.0 * pad);
        let _ = writeln!(
            out,
            "<g><text x=\"{}\" y=\"{}\" font-size=\"13\">{}</text>",
            ox + pad,
            oy + 20.0,
            xml(tc)
        );
        let _ = writeln!(
            out,
            "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/><line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{3}\" stroke=\"black\"/>",
            ox + pad,
            oy + h - pad,
            ox + w - pad,
            oy + pad
        );
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\">threads</text>",
            ox + w / 2.0,
            oy + h - 15.0
        );
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\">{:.3e} ops/s</text>",
            ox + 5.0,
            oy + pad - 8.0,
            max_y
        );
        let mut variants: Vec<&str> = Vec::new();
        for m in &ms {
            if !variants.contains(&m.variant.as_str()) {
                variants.push(&m.variant);
            }
        }
        for (vi, v) in variants.iter().enumerate() {
            let color = COLORS[vi % COLORS.len()];
            let mut pts: Vec<(f64, f64)> = ms
                .iter()
                .filter(|m| m.variant == *v)
                .map(|m| (x(m.threads as f64), y(m.total)))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let poly: Vec<String> = pts
                .iter()
                .map(|(px, py)| format!("{px:.1},{py:.1}"))
                .collect();
            let _ = writeln!(
                out,
                "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
                poly.join(" ")
            );
            for (px, py) in &pts {
                let _ = writeln!(
                    out,
                    "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"3\" fill=\"{color}\"/>"
                );
            }
            let _ = writeln!(
                out,
                "<text x=\"{}\" y=\"{}\" fill=\"{color}\">{}</text>",
                ox + w - pad - 110.0,
                oy + pad + 14.0 * vi as f64,
                xml(v)
            );
        }
        for t in ms
            .iter()
            .map(|m| m.threads)
            .collect::<std::collections::BTreeSet<_>>()
        {
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{t}</text>",
                x(t as f64),
                oy + h - pad + 14.0
            );
        }
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
    out
}
