//! Log setup: human-readable by default, JSON lines with `PIPEWARDEN_LOG_FORMAT=json`.

use tracing_subscriber::EnvFilter;

pub fn init() {
    let filter =
        EnvFilter::try_from_env("PIPEWARDEN_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
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
