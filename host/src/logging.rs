//! Log setup: human-readable by default, JSON lines with `PIPEWARDEN_LOG_FORMAT=json`.

use tracing_subscriber::EnvFilter;

pub fn init() {
    init_with_default("info");
}

/// Like [`init`], with `default` as the filter when `PIPEWARDEN_LOG` is not set.
pub fn init_with_default(default: &str) {
    let filter =
        EnvFilter::try_from_env("PIPEWARDEN_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let json = std::env::var("PIPEWARDEN_LOG_FORMAT").is_ok_and(|f| f == "json");
    // A second init (tests) is harmless, so its error is ignored.
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
