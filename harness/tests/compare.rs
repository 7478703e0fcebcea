//! `wis --compare`: medians over each side's files, the ratio, the base's
//! run order, and the errors.

use lockref_harness::compare::{compare, table};
use lockref_harness::report::JsonReport;
use lockref_harness::runner::Measurement;

fn report(word: &str, runs: &[(&str, &str, usize, f64)]) -> JsonReport {
    JsonReport {
        schema: 2,
        machine: "test".into(),
        dentry_word: word.into(),
        results: runs
            .iter()
            .map(|&(testcase, variant, threads, total)| Measurement {
                testcase: testcase.into(),
                variant: variant.into(),
                threads,
                total,
                min: total / 2.0,
                max: total / 2.0,
                idle_percent: None,
                slowest_round: total,
            })
            .collect(),
    }
}

#[test]
fn medians_over_rounds_and_the_ratio_in_run_order() {
    let base = [
        report(
            "compare-and-swap",
            &[("open3", "get/put", 1, 10.0), ("open3", "consume", 1, 40.0)],
        ),
        report(
            "compare-and-swap",
            &[("open3", "get/put", 1, 30.0), ("open3", "consume", 1, 20.0)],
        ),
        report(
            "compare-and-swap",
            &[("open3", "get/put", 1, 20.0), ("open3", "consume", 1, 30.0)],
        ),
    ];
    let other = [
        report(
            "fetch_add",
            &[("open3", "consume", 1, 60.0), ("open3", "get/put", 1, 40.0)],
        ),
        report(
            "fetch_add",
            &[("open3", "consume", 1, 90.0), ("open3", "get/put", 1, 20.0)],
        ),
        // Only on this side: left out.
        report("fetch_add", &[("stat2", "padded", 2, 1.0)]),
    ];
    let rows = compare(&base, &other).unwrap();
    let got: Vec<_> = rows
        .iter()
        .map(|r| (r.variant.as_str(), r.base, r.other, r.ratio()))
        .collect();
    // The base's order (get/put ran first); medians 20 and 30 over three
    // rounds, 30 and 75 over two.
    assert_eq!(
        got,
        [("get/put", 20.0, 30.0, 1.5), ("consume", 30.0, 75.0, 2.5)]
    );
    let text = table(&rows, &base, &other);
    assert!(text.starts_with(
        "base: 3 file(s), dentries on the compare-and-swap word; other: 3 file(s), on the fetch_add word"
    ));
    assert!(text.lines().nth(2).unwrap().ends_with("1.50x"), "{text}");
}

#[test]
fn sides_without_results_or_in_common_are_errors() {
    let one = [report("compare-and-swap", &[("open3", "consume", 1, 1.0)])];
    let empty = [report("fetch_add", &[])];
    let elsewhere = [report("fetch_add", &[("open3", "consume", 2, 1.0)])];
    assert!(compare(&one, &empty).unwrap_err().contains("need results"));
    assert!(compare(&one, &elsewhere).unwrap_err().contains("share no"));
}
