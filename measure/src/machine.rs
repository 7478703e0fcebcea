//! What machine a measurement ran on.

/// CPUs this process may run on.
///
/// ```
/// assert!(lockref_measure::cpus() >= 1);
/// ```
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A one-line description of this machine: the CPU model (from
/// `/proc/cpuinfo` where there is one, else the architecture) and the CPUs
/// available.
///
/// ```
/// assert!(lockref_measure::machine().ends_with("CPUs"));
/// ```
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.into());
    format!("{cpu}, {} CPUs", cpus())
}
