//! Durations as flags are written: `90s`, `10m`, `2h`, or plain seconds.

use std::time::Duration;

/// Parses `90s`, `10m`, `2h` or plain seconds.
pub fn humantime_secs(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let value: u64 = number
        .parse()
        .map_err(|_| format!("not a duration: {text:?}"))?;
    let seconds = match unit {
        "" | "s" => value,
        "m" => value * 60,
        "h" => value * 3600,
        _ => return Err(format!("unknown unit in {text:?}; use s, m or h")),
    };
    Ok(Duration::from_secs(seconds))
}

/// `90s`, `2m`, `1h`: a whole number of seconds the way the duration flags are written.
pub fn show_seconds(seconds: u64) -> String {
    match seconds {
        s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_they_are_written() {
        assert_eq!(show_seconds(0), "0s");
        assert_eq!(show_seconds(90), "90s");
        assert_eq!(show_seconds(600), "10m");
        assert_eq!(show_seconds(7200), "2h");
        assert_eq!(humantime_secs("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(humantime_secs("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(humantime_secs("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(humantime_secs("45"), Ok(Duration::from_secs(45)));
        assert!(humantime_secs("5d").is_err());
        assert!(humantime_secs("m").is_err());
    }
}
