//! CPU time and resident memory of a process, from `/proc` (Linux): this one (`"self"`) or a
//! server the harness started.

/// Clock ticks per second of `/proc/*/stat` times: USER_HZ, 100 on every Linux architecture
/// this runs on.
const TICKS_PER_SECOND: f64 = 100.0;

/// Seconds of CPU (user + system, every thread) process `pid` used so far; 0 where it is gone.
pub fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The command name (field 2) may hold spaces; fields after its `)` are plain.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    // utime and stime are fields 14 and 15: 11 and 12 after the `)`.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|t| t.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(11) + ticks(12)) as f64 / TICKS_PER_SECOND
}

/// `VmRSS` (now) or `VmHWM` (peak) of process `pid`, in KiB; 0 where it or the field is missing.
pub fn memory_kib(pid: &str, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status_kib(&status, field)
}

/// A `kB` field of a `/proc/PID/status` text; 0 where it is missing.
fn status_kib(status: &str, field: &str) -> u64 {
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_cpu_time_and_memory_and_a_missing_one_has_none() {
        let spin = std::time::Instant::now();
        while cpu_seconds("self") < 0.02 && spin.elapsed().as_secs() < 5 {}
        assert!(cpu_seconds("self") >= 0.02);
        // One reading: the other test threads allocate between two.
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        assert!(status_kib(&status, "VmHWM") >= status_kib(&status, "VmRSS"));
        assert!(memory_kib("self", "VmRSS") > 0);
        assert_eq!(cpu_seconds("0"), 0.0);
        assert_eq!(memory_kib("0", "VmRSS"), 0);
    }
}
