//! Log setup: human-readable by default, JSON lines with `PIPEWARDEN_LOG_FORMAT=json`.
//! Colour only on a terminal, and never with `NO_COLOR` set (https://no-color.org).

use std::ffi::OsStr;
use std::io::IsTerminal as _;
use std::path::Path;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// kube-client logs every failed request at ERROR level, without saying which object or
/// server it was about; the loops log each failure once, with both. Off unless asked for by
/// `PIPEWARDEN_LOG`.
const QUIET_BY_DEFAULT: &str = "kube_client::client::builder=off";

pub fn init() {
    init_with_default("info");
}

/// Like [`init`], with `default` as the filter when `PIPEWARDEN_LOG` is not set.
pub fn init_with_default(default: &str) {
    let colour = colour(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    );
    install(std::io::stderr, colour, default);
}

/// Log to `path` (created or truncated) instead of stderr, without colour.
pub fn init_to_file(path: &Path, default: &str) -> std::io::Result<()> {
    let file = std::fs::File::create(path)?;
    install(std::sync::Mutex::new(file), false, default);
    Ok(())
}

/// Whether human-readable lines get ANSI colour: only on a terminal, and not when `NO_COLOR`
/// is set to anything but the empty string.
pub fn colour(is_terminal: bool, no_color: Option<&OsStr>) -> bool {
    is_terminal && no_color.is_none_or(OsStr::is_empty)
}

/// The filter: `PIPEWARDEN_LOG` as given, else `default` with kube-client's request errors off.
fn filter(default: &str) -> EnvFilter {
    EnvFilter::try_from_env("PIPEWARDEN_LOG")
        .unwrap_or_else(|_| EnvFilter::new(format!("{default},{QUIET_BY_DEFAULT}")))
}

fn install<W>(writer: W, colour: bool, default: &str)
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter(default))
        .with_writer(writer)
        .with_ansi(colour);
    let json = std::env::var("PIPEWARDEN_LOG_FORMAT").is_ok_and(|f| f == "json");
    // A second init (tests) is harmless, so its error is ignored.
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::colour;

    #[test]
    fn colour_only_on_a_terminal_and_never_with_no_color() {
        assert!(colour(true, None));
        assert!(!colour(false, None), "a file or a pipe gets no colour");
        assert!(!colour(true, Some(OsStr::new("1"))));
        assert!(
            colour(true, Some(OsStr::new(""))),
            "an empty NO_COLOR does not count (no-color.org)"
        );
        assert!(!colour(false, Some(OsStr::new(""))));
    }
}
