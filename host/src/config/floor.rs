//! Every duration and size flag has a floor. A value below it would run hot or fail every time
//! (a 0 s resync spins, a 0 ms deadline fails every decision, a 0 s poll floods the KFP
//! apiserver), so it is refused at start-up, in one line naming the flag and its minimum. Each
//! flag struct lists its own floors beside its flags.

use std::time::Duration;

use anyhow::bail;

use super::duration::show_duration;

/// One flag's value against its floor.
pub struct Floor {
    flag: &'static str,
    env: Option<&'static str>,
    value: u64,
    minimum: u64,
    show: fn(u64) -> String,
}

impl Floor {
    pub fn count(flag: &'static str, env: &'static str, value: u64, minimum: u64) -> Self {
        Floor {
            flag,
            env: Some(env),
            value,
            minimum,
            show: |n| n.to_string(),
        }
    }

    pub fn duration(
        flag: &'static str,
        env: Option<&'static str>,
        value: Duration,
        min: Duration,
    ) -> Self {
        Floor {
            flag,
            env,
            value: value.as_millis() as u64,
            minimum: min.as_millis() as u64,
            show: |millis| show_duration(Duration::from_millis(millis)),
        }
    }
}

/// The first value below its floor, named with the minimum.
pub fn check(floors: &[Floor]) -> anyhow::Result<()> {
    if let Some(floor) = floors.iter().find(|f| f.value < f.minimum) {
        let env = floor.env.map(|e| format!(" ({e})")).unwrap_or_default();
        bail!(
            "{}{env} is {}; the minimum is {}",
            floor.flag,
            (floor.show)(floor.value),
            (floor.show)(floor.minimum)
        );
    }
    Ok(())
}

pub const SECOND: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_value_below_its_floor_is_named_with_the_minimum_in_one_line() {
        let floors = [
            Floor::count("--concurrency", "PIPEWARDEN_CONCURRENCY", 4, 1),
            Floor::duration(
                "--swf-resync",
                Some("PIPEWARDEN_SWF_RESYNC"),
                Duration::ZERO,
                SECOND,
            ),
            Floor::duration("--kfp-api-poll", None, Duration::ZERO, SECOND),
        ];
        let error = check(&floors).unwrap_err().to_string();
        assert_eq!(
            error,
            "--swf-resync (PIPEWARDEN_SWF_RESYNC) is 0s; the minimum is 1s"
        );
        assert!(check(&floors[..1]).is_ok());
    }
}
