//! Writing to the controller's log through the host's `log` import.
//!
//! Outside a component (native unit tests, benchmarks) there is no host to call, so lines go to
//! stderr instead; the same policy code runs in both places.

use crate::LogLevel;

/// Writes `message` to the host log at `level`, attributed to this policy.
pub fn log(level: LogLevel, message: &str) {
    #[cfg(target_arch = "wasm32")]
    crate::bindings::pipewarden::policy::host::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("[policy {level:?}] {message}");
}

pub fn debug(message: &str) {
    log(LogLevel::Debug, message);
}

pub fn info(message: &str) {
    log(LogLevel::Info, message);
}

pub fn warn(message: &str) {
    log(LogLevel::Warn, message);
}

pub fn error(message: &str) {
    log(LogLevel::Error, message);
}
