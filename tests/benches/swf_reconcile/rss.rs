//! Resident memory of this process, from `/proc/self/status` (Linux).

/// `VmRSS` (now) or `VmHWM` (peak), in KiB; 0 where the file or field is missing.
pub fn kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

pub fn now_kib() -> u64 {
    kib("VmRSS")
}

pub fn peak_kib() -> u64 {
    kib("VmHWM")
}
