//! The harness's CPUs: the order workers take them in, pinning, and the
//! idle share read from `/proc/stat`.

use std::time::Duration;

use lockref_harness::runner::{self, RunConfig};

#[test]
fn workers_take_physical_cores_before_smt_siblings() {
    use lockref_harness::cpus::placement_order;
    // Four cores with two threads each, siblings numbered n and n+4.
    let core = |cpu: usize| Some((0, (cpu % 4) as u32));
    assert_eq!(
        placement_order(&[0, 1, 2, 3, 4, 5, 6, 7], core),
        [0, 1, 2, 3, 4, 5, 6, 7]
    );
    // Siblings adjacent (0,1 on core 0, ...): cores first all the same.
    let adjacent = |cpu: usize| Some((0, (cpu / 2) as u32));
    assert_eq!(
        placement_order(&[0, 1, 2, 3, 4, 5], adjacent),
        [0, 2, 4, 1, 3, 5]
    );
    // Only some CPUs allowed; no topology: as given.
    assert_eq!(placement_order(&[1, 3, 4], adjacent), [1, 3, 4]);
    assert_eq!(placement_order(&[5, 2], |_| None), [5, 2]);
}

#[test]
fn pinning_uses_allowed_cpus_and_a_failed_pin_is_an_error() {
    use lockref_harness::cpus;
    let allowed = cpus::allowed();
    assert!(!allowed.is_empty());
    assert_eq!(cpus::worker_cpus().len(), allowed.len());
    // On a thread of its own: pinning sticks to the calling thread.
    std::thread::spawn(move || {
        cpus::pin_to(allowed[0]).unwrap();
        let e = cpus::pin_to(100_000).unwrap_err();
        assert_eq!(e.cpu, 100_000);
        assert!(e.to_string().contains("--no-pin"));
    })
    .join()
    .unwrap();
    // A pinned run works on the allowed CPUs.
    assert!(runner::run(
        ("x", "y"),
        1,
        &RunConfig {
            duration: Duration::from_millis(5),
            warmup: Duration::ZERO,
            pin: true,
            background: 0,
            progress: false
        },
        &mut Vec::new(),
        |_| Ok(()),
        |()| Ok(()),
    )
    .is_ok());
}

#[test]
fn idle_share_comes_from_proc_stat() {
    use lockref_harness::cpus::CpuTimes;
    let a = CpuTimes::parse("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4\n").unwrap();
    let b = CpuTimes::parse("cpu  200 0 100 1000 100 0 0 0 0 0\n").unwrap();
    assert_eq!(
        a,
        CpuTimes {
            idle: 850,
            total: 1000
        }
    );
    assert_eq!(a.idle_percent(b), Some(62.5));
    assert_eq!(a.idle_percent(a), None, "no time passed");
    assert_eq!(CpuTimes::parse("intr 1 2 3\n"), None);
    assert!(CpuTimes::now().is_some());
}
