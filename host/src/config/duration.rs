//! Durations as flags are written: `500ms`, `90s`, `10m`, `1h30m` (humantime's syntax), or a
//! plain number of seconds.

use std::time::Duration;

/// Parses a duration flag: humantime's `500ms`, `90s`, `1h30m`, or plain seconds (`45`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    humantime::parse_duration(text)
        .map_err(|e| format!("not a duration: {text:?} ({e}); write e.g. 500ms, 90s, 10m or 1h30m"))
}

/// `500ms`, `90s`, `1h30m`: a duration the way the flags are written.
pub fn show_duration(duration: Duration) -> String {
    if duration.is_zero() {
        return "0s".into();
    }
    humantime::format_duration(duration)
        .to_string()
        .replace(' ', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_they_are_written() {
        let read = |text| parse_duration(text).unwrap();
        assert_eq!(read("500ms"), Duration::from_millis(500));
        assert_eq!(read("90s"), Duration::from_secs(90));
        assert_eq!(read("10m"), Duration::from_secs(600));
        assert_eq!(read("1h30m"), Duration::from_secs(5400));
        assert_eq!(read("2h"), Duration::from_secs(7200));
        assert_eq!(read("45"), Duration::from_secs(45));
        for bad in ["m", "5 parsecs", "-3s", ""] {
            let error = parse_duration(bad).unwrap_err();
            assert!(error.contains("500ms, 90s"), "{bad:?}: {error}");
        }
        for (duration, shown) in [(0, "0s"), (90, "1m30s"), (600, "10m"), (5400, "1h30m")] {
            assert_eq!(show_duration(Duration::from_secs(duration)), shown);
        }
        assert_eq!(show_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(
            read(&show_duration(Duration::from_millis(90_500))),
            Duration::from_millis(90_500)
        );
    }
}
