//! `wis --compare BASE.json... --against OTHER.json...`: the same runs
//! from two builds (the dcache on the compare-and-swap word and on the
//! `fetch_add` word), side by side. Each configuration's ops/s is the
//! median over the files given for its side, so rounds run alternately
//! (base, other, base, other, ...) share the machine's drift; the ratio is
//! other over base.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::report::JsonReport;

/// One configuration measured on both sides.
#[derive(Clone, Debug, PartialEq)]
pub struct Compared {
    /// Testcase name.
    pub testcase: String,
    /// Variant name.
    pub variant: String,
    /// Worker threads.
    pub threads: usize,
    /// Median ops/s of the base side.
    pub base: f64,
    /// Median ops/s of the other side.
    pub other: f64,
}

impl Compared {
    /// Other over base.
    pub fn ratio(&self) -> f64 {
        self.other / self.base
    }
}

type Key = (String, String, usize);

/// Each configuration's totals over the files, the configurations in the
/// order they first ran.
fn totals(reports: &[JsonReport]) -> (Vec<Key>, HashMap<Key, Vec<f64>>) {
    let mut order = Vec::new();
    let mut by_key: HashMap<Key, Vec<f64>> = HashMap::new();
    for r in reports.iter().flat_map(|rep| &rep.results) {
        let key = (r.testcase.clone(), r.variant.clone(), r.threads);
        let runs = by_key.entry(key.clone()).or_default();
        if runs.is_empty() {
            order.push(key);
        }
        runs.push(r.total);
    }
    (order, by_key)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The configurations both sides measured, in the order the base side ran
/// them.
///
/// # Errors
///
/// A side with no results, or sides that share no configuration.
pub fn compare(base: &[JsonReport], other: &[JsonReport]) -> Result<Vec<Compared>, String> {
    let ((order, mut b), (_, mut o)) = (totals(base), totals(other));
    if b.is_empty() || o.is_empty() {
        return Err("--compare and --against each need results".into());
    }
    let rows: Vec<Compared> = order
        .into_iter()
        .filter_map(|key| {
            let (ours, theirs) = (b.remove(&key)?, o.remove(&key)?);
            Some(Compared {
                base: median(ours),
                other: median(theirs),
                testcase: key.0,
                variant: key.1,
                threads: key.2,
            })
        })
        .collect();
    if rows.is_empty() {
        return Err("the two sides share no testcase, variant and thread count".into());
    }
    Ok(rows)
}

/// The table `wis --compare` prints, headed by each side's dentry word and
/// file count.
pub fn table(rows: &[Compared], base: &[JsonReport], other: &[JsonReport]) -> String {
    let word = |side: &[JsonReport]| {
        let mut words: Vec<&str> = side.iter().map(|r| r.dentry_word.as_str()).collect();
        words.dedup();
        words.join("+")
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "base: {} file(s), dentries on the {} word; other: {} file(s), on the {} word; medians over the files",
        base.len(),
        word(base),
        other.len(),
        word(other)
    );
    let _ = writeln!(
        s,
        "{:<10} {:>20} {:>7} {:>14} {:>14} {:>7}",
        "testcase", "variant", "threads", "base ops/s", "other ops/s", "ratio"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<10} {:>20} {:>7} {:>14.0} {:>14.0} {:>6.2}x",
            r.testcase,
            r.variant,
            r.threads,
            r.base,
            r.other,
            r.ratio()
        );
    }
    s
}
