//! Every duration and size flag has a floor. A value below it would run hot or fail every time
//! (a 0 s resync spins, a 0 ms deadline fails every decision, a 0 s poll floods the KFP
//! apiserver), so it is refused at start-up, in one line naming the flag and its minimum.

use std::time::Duration;

use anyhow::bail;

use super::eval::EvalArgs;
use super::policy_args::PolicyArgs;
use crate::controller::RunArgs;

/// One flag's value against its floor.
struct Floor {
    flag: &'static str,
    env: Option<&'static str>,
    value: u64,
    minimum: u64,
    show: fn(u64) -> String,
}

impl Floor {
    fn count(flag: &'static str, env: &'static str, value: u64, minimum: u64) -> Self {
        Floor {
            flag,
            env: Some(env),
            value,
            minimum,
            show: |n| n.to_string(),
        }
    }

    fn duration(
        flag: &'static str,
        env: Option<&'static str>,
        value: Duration,
        min: Duration,
    ) -> Self {
        Floor {
            flag,
            env,
            value: value.as_secs(),
            minimum: min.as_secs(),
            show: show_seconds,
        }
    }
}

/// `90s`, `2m`, `1h`: the way the duration flags are written.
fn show_seconds(seconds: u64) -> String {
    match seconds {
        s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

fn check(floors: &[Floor]) -> anyhow::Result<()> {
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

fn policy_floors(args: &PolicyArgs) -> Vec<Floor> {
    let budget = args.resolved_budget();
    vec![
        Floor::count(
            "--render-timeout-ms",
            "PIPEWARDEN_RENDER_TIMEOUT_MS",
            budget.render_timeout.as_millis() as u64,
            10,
        ),
        Floor::count(
            "--decision-timeout-ms",
            "PIPEWARDEN_DECISION_TIMEOUT_MS",
            budget.decision_timeout.as_millis() as u64,
            5,
        ),
        Floor::count(
            "--memory-limit-mib",
            "PIPEWARDEN_MEMORY_LIMIT_MIB",
            budget.memory_mib as u64,
            8,
        ),
        Floor::count(
            "--policy-pool-size",
            "PIPEWARDEN_POLICY_POOL_SIZE",
            budget.pool_size.into(),
            1,
        ),
        Floor::count(
            "--policy-core-instances",
            "PIPEWARDEN_POLICY_CORE_INSTANCES",
            budget.core_instances.into(),
            1,
        ),
    ]
}

/// The policy flags every command shares.
pub fn check_policy(args: &PolicyArgs) -> anyhow::Result<()> {
    check(&policy_floors(args))
}

/// `pipewarden eval`; `policy` is its policy flags with the settings' budget filled in.
pub fn check_eval(args: &EvalArgs, policy: &PolicyArgs) -> anyhow::Result<()> {
    let mut floors = policy_floors(policy);
    floors.push(Floor::duration(
        "--tombstone-ttl",
        None,
        args.tombstone_ttl,
        SECOND,
    ));
    check(&floors)
}

/// `pipewarden run`; `policy` is its policy flags with the settings' budget filled in.
pub fn check_run(args: &RunArgs, policy: &PolicyArgs) -> anyhow::Result<()> {
    let mut floors = policy_floors(policy);
    floors.extend([
        Floor::count(
            "--concurrency",
            "PIPEWARDEN_CONCURRENCY",
            args.concurrency as u64,
            1,
        ),
        Floor::count(
            "--lease-duration-seconds",
            "PIPEWARDEN_LEASE_DURATION_SECONDS",
            args.leader.lease_duration_seconds,
            3,
        ),
        Floor::duration(
            "--watch-grace",
            Some("PIPEWARDEN_WATCH_GRACE"),
            args.watch_grace,
            SECOND,
        ),
        Floor::duration(
            "--swf-resync",
            Some("PIPEWARDEN_SWF_RESYNC"),
            args.swf.swf_resync,
            SECOND,
        ),
        Floor::duration(
            "--kfp-api-poll",
            Some("PIPEWARDEN_KFP_API_POLL"),
            args.swf.kfp_api_poll,
            SECOND,
        ),
        Floor::count(
            "--exit-attempts",
            "PIPEWARDEN_EXIT_ATTEMPTS",
            u64::from(args.exit.exit_attempts),
            1,
        ),
        Floor::count(
            "--exit-delivery-concurrency",
            "PIPEWARDEN_EXIT_DELIVERY_CONCURRENCY",
            args.exit.exit_delivery_concurrency as u64,
            1,
        ),
        Floor::count(
            "--exit-delivery-queue",
            "PIPEWARDEN_EXIT_DELIVERY_QUEUE",
            args.exit.exit_delivery_queue as u64,
            1,
        ),
        Floor::duration(
            "--exit-webhook-timeout",
            Some("PIPEWARDEN_EXIT_WEBHOOK_TIMEOUT"),
            args.exit.exit_webhook_timeout,
            SECOND,
        ),
        Floor::duration(
            "--exit-retry-max-delay",
            Some("PIPEWARDEN_EXIT_RETRY_MAX_DELAY"),
            args.exit.exit_retry_max_delay,
            SECOND,
        ),
        Floor::duration(
            "--exit-give-up-after",
            Some("PIPEWARDEN_EXIT_GIVE_UP_AFTER"),
            args.exit.exit_give_up_after,
            Duration::from_secs(60),
        ),
        Floor::duration(
            "--exit-sweep-interval",
            Some("PIPEWARDEN_EXIT_SWEEP_INTERVAL"),
            args.exit.exit_sweep_interval,
            SECOND,
        ),
        Floor::duration(
            "--exit-catchup-window",
            Some("PIPEWARDEN_EXIT_CATCHUP_WINDOW"),
            args.exit.exit_catchup_window,
            SECOND,
        ),
        Floor::duration(
            "--exit-retry-delay",
            Some("PIPEWARDEN_EXIT_RETRY_DELAY"),
            args.exit.exit_retry_delay,
            SECOND,
        ),
        Floor::duration(
            "--tombstone-ttl",
            Some("PIPEWARDEN_TOMBSTONE_TTL"),
            args.exit.tombstone_ttl,
            SECOND,
        ),
        Floor::count(
            "--tombstone-max-entries",
            "PIPEWARDEN_TOMBSTONE_MAX_ENTRIES",
            args.exit.tombstone_max_entries,
            100,
        ),
    ]);
    check(&floors)?;
    check_pool(args, policy)
}

/// Each loop makes up to `--concurrency` decisions at once, each in its own pooled instance;
/// beyond the pool a decision fails instead of waiting, so the pool must hold both loops' worth.
fn check_pool(args: &RunArgs, policy: &PolicyArgs) -> anyhow::Result<()> {
    let pool = policy.resolved_budget().pool_size as usize;
    let needed = 2 * args.concurrency;
    if pool < needed {
        bail!(
            "--policy-pool-size (PIPEWARDEN_POLICY_POOL_SIZE) is {pool}; --concurrency {} lets \
             the two loops run {needed} decisions at once: raise the pool or lower --concurrency",
            args.concurrency
        );
    }
    Ok(())
}

const SECOND: Duration = Duration::from_secs(1);

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

    #[test]
    fn durations_read_as_they_are_written() {
        assert_eq!(show_seconds(0), "0s");
        assert_eq!(show_seconds(90), "90s");
        assert_eq!(show_seconds(600), "10m");
        assert_eq!(show_seconds(7200), "2h");
    }
}
