//! The CPUs workers run on, as will-it-scale places its tasks: one worker
//! per CPU this process may use (`sched_getaffinity`), physical cores
//! before their SMT siblings; and how idle the machine was during a run
//! (`/proc/stat`), for the CSV's idle column.

use std::collections::HashSet;
use std::fmt;

/// A pin that did not take.
#[derive(Debug)]
pub struct PinError {
    /// The CPU asked for.
    pub cpu: usize,
    /// What `sched_setaffinity` said.
    pub error: std::io::Error,
}

impl fmt::Display for PinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "pinning a worker to CPU {}: {} (run with --no-pin to skip pinning)",
            self.cpu, self.error
        )
    }
}

impl std::error::Error for PinError {}

/// The CPUs this process may run on, ascending.
#[cfg(target_os = "linux")]
pub fn allowed() -> Vec<usize> {
    // SAFETY: `set` is a plain bitmask on our stack, of the size passed;
    // pid 0 is the calling thread.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return (0..lockref_measure::cpus()).collect();
        }
        set
    };
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, the set's size.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// The CPUs this process may run on, ascending.
#[cfg(not(target_os = "linux"))]
pub fn allowed() -> Vec<usize> {
    (0..lockref_measure::cpus()).collect()
}

/// The core a CPU belongs to (package, core id), from sysfs; `None` where
/// the topology is not exposed.
fn core_of(cpu: usize) -> Option<(u32, u32)> {
    let read = |f: &str| -> Option<u32> {
        std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/topology/{f}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    Some((read("physical_package_id")?, read("core_id")?))
}

/// `cpus` in the order workers take them: the first CPU of each physical
/// core, then the second of each, and so on. Without topology, as given.
pub fn placement_order(
    cpus: &[usize],
    core_of: impl Fn(usize) -> Option<(u32, u32)>,
) -> Vec<usize> {
    let mut rounds: Vec<Vec<usize>> = Vec::new();
    let mut seen: Vec<((u32, u32), usize)> = Vec::new();
    for &cpu in cpus {
        let round = match core_of(cpu) {
            Some(core) => match seen.iter_mut().find(|(c, _)| *c == core) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    seen.push((core, 0));
                    0
                }
            },
            None => 0,
        };
        if rounds.len() <= round {
            rounds.resize_with(round + 1, Vec::new);
        }
        rounds[round].push(cpu);
    }
    rounds.concat()
}

/// The CPUs workers 0, 1, 2, ... are pinned to (then around again).
pub fn worker_cpus() -> Vec<usize> {
    placement_order(&allowed(), core_of)
}

/// Pins the calling thread to `cpu`.
///
/// # Errors
///
/// [`PinError`] if the system refuses (a CPU not allowed, offline).
#[cfg(target_os = "linux")]
pub fn pin_to(cpu: usize) -> Result<(), PinError> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(PinError {
            cpu,
            error: std::io::Error::from_raw_os_error(libc::EINVAL),
        });
    }
    // SAFETY: as in `allowed`; `cpu` is below CPU_SETSIZE.
    let r = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if r == 0 {
        Ok(())
    } else {
        Err(PinError {
            cpu,
            error: std::io::Error::last_os_error(),
        })
    }
}

/// Pinning is Linux-only: elsewhere it is refused.
///
/// # Errors
///
/// Always, off Linux.
#[cfg(not(target_os = "linux"))]
pub fn pin_to(cpu: usize) -> Result<(), PinError> {
    Err(PinError {
        cpu,
        error: std::io::Error::new(std::io::ErrorKind::Unsupported, "no sched_setaffinity"),
    })
}

/// The machine's CPU time counters at one moment (`/proc/stat`'s `cpu`
/// line, in ticks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTimes {
    /// Idle and iowait.
    pub idle: u64,
    /// Every column.
    pub total: u64,
}

impl CpuTimes {
    /// Now, or `None` where `/proc/stat` cannot be read.
    pub fn now() -> Option<CpuTimes> {
        Self::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// From the text of `/proc/stat`.
    pub fn parse(stat: &str) -> Option<CpuTimes> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map_while(|n| n.parse().ok())
            .collect();
        if v.len() < 4 {
            return None;
        }
        // user nice system idle iowait irq softirq steal (guest columns are
        // already counted in user and nice).
        let total = v.iter().take(8).sum();
        let idle = v[3] + v.get(4).copied().unwrap_or(0);
        Some(CpuTimes { idle, total })
    }

    /// The share of CPU time idle between `self` and the later `end`, in
    /// percent; `None` if no time passed.
    pub fn idle_percent(self, end: CpuTimes) -> Option<f64> {
        let total = end.total.checked_sub(self.total)?;
        let idle = end.idle.checked_sub(self.idle)?;
        (total > 0).then(|| 100.0 * idle as f64 / total as f64)
    }
}

/// Distinct values, in first-seen order.
pub(crate) fn distinct<T: Clone + Eq + std::hash::Hash>(
    items: impl IntoIterator<Item = T>,
) -> Vec<T> {
    let mut seen = HashSet::new();
    items
        .into_iter()
        .filter(|i| seen.insert(i.clone()))
        .collect()
}
