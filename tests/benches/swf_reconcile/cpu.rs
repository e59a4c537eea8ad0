//! CPU time of this process (user + system, every thread), from `/proc/self/stat` (Linux).

/// Clock ticks per second of `/proc/*/stat` times: USER_HZ, 100 on every Linux architecture
/// this runs on.
const TICKS_PER_SECOND: f64 = 100.0;

/// Seconds of CPU this process used so far; 0 where the file is missing.
pub fn seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
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
