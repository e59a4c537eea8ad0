//! Every duration and size flag below its floor is refused, in one line naming it.

use super::{pipewarden_with_env, refusal};

#[test]
fn every_duration_and_size_flag_below_its_floor_is_refused_naming_the_flag_and_minimum() {
    let run = ["run", "--policy", "unused.wasm"];
    let cases: [(&[&str], &str, &str, &str); 18] = [
        (
            &run,
            "--render-timeout-ms",
            "0",
            "(PIPEWARDEN_RENDER_TIMEOUT_MS) is 0; the minimum is 10",
        ),
        (
            &run,
            "--decision-timeout-ms",
            "1",
            "(PIPEWARDEN_DECISION_TIMEOUT_MS) is 1; the minimum is 5",
        ),
        (
            &run,
            "--memory-limit-mib",
            "1",
            "(PIPEWARDEN_MEMORY_LIMIT_MIB) is 1; the minimum is 8",
        ),
        (
            &run,
            "--concurrency",
            "0",
            "(PIPEWARDEN_CONCURRENCY) is 0; the minimum is 1",
        ),
        (
            &run,
            "--lease-duration-seconds",
            "0",
            "(PIPEWARDEN_LEASE_DURATION_SECONDS) is 0; the minimum is 3",
        ),
        (
            &run,
            "--watch-grace",
            "0s",
            "(PIPEWARDEN_WATCH_GRACE) is 0s; the minimum is 1s",
        ),
        (
            &run,
            "--swf-resync",
            "0s",
            "(PIPEWARDEN_SWF_RESYNC) is 0s; the minimum is 1s",
        ),
        (
            &run,
            "--kfp-api-poll",
            "0s",
            "(PIPEWARDEN_KFP_API_POLL) is 0s; the minimum is 1s",
        ),
        (
            &run,
            "--exit-attempts",
            "0",
            "(PIPEWARDEN_EXIT_ATTEMPTS) is 0; the minimum is 1",
        ),
        (
            &run,
            "--exit-webhook-timeout",
            "0s",
            "(PIPEWARDEN_EXIT_WEBHOOK_TIMEOUT) is 0s; the minimum is 1s",
        ),
        (
            &run,
            "--exit-give-up-after",
            "30s",
            "(PIPEWARDEN_EXIT_GIVE_UP_AFTER) is 30s; the minimum is 1m",
        ),
        (
            &run,
            "--exit-catchup-window",
            "0s",
            "(PIPEWARDEN_EXIT_CATCHUP_WINDOW) is 0s; the minimum is 1s",
        ),
        (
            &run,
            "--exit-retry-delay",
            "0s",
            "(PIPEWARDEN_EXIT_RETRY_DELAY) is 0s; the minimum is 1s",
        ),
        (
            &run,
            "--tombstone-ttl",
            "0s",
            "(PIPEWARDEN_TOMBSTONE_TTL) is 0s; the minimum is 1s",
        ),
        (
            &run,
            "--tombstone-max-entries",
            "10",
            "(PIPEWARDEN_TOMBSTONE_MAX_ENTRIES) is 10; the minimum is 100",
        ),
        (
            &["eval", "--policy", "unused.wasm", "in.yaml"],
            "--tombstone-ttl",
            "0s",
            "is 0s; the minimum is 1s",
        ),
        (
            &["eval", "--policy", "unused.wasm", "in.yaml"],
            "--render-timeout-ms",
            "0",
            "(PIPEWARDEN_RENDER_TIMEOUT_MS) is 0; the minimum is 10",
        ),
        (
            &["precompile", "--policy", "unused.wasm"],
            "--decision-timeout-ms",
            "0",
            "(PIPEWARDEN_DECISION_TIMEOUT_MS) is 0; the minimum is 5",
        ),
    ];
    for (command, flag, value, expected) in cases {
        let mut args = command.to_vec();
        args.extend([flag, value]);
        let line = refusal(&pipewarden_with_env(&args, &[]));
        assert_eq!(line, format!("error: {flag} {expected}"), "{args:?}");
    }
}

#[test]
fn a_value_from_the_environment_is_held_to_the_same_floor_and_the_floor_itself_is_accepted() {
    let run = ["run", "--policy", "missing.wasm"];
    let line = refusal(&pipewarden_with_env(
        &run,
        &[("PIPEWARDEN_SWF_RESYNC", "0s")],
    ));
    assert_eq!(
        line,
        "error: --swf-resync (PIPEWARDEN_SWF_RESYNC) is 0s; the minimum is 1s"
    );
    // At the floor the flags pass, and the start stops at the next thing missing: a cluster.
    let at_floor = [
        "--settings=unused.json",
        "--swf-resync=1s",
        "--render-timeout-ms=10",
        "--decision-timeout-ms=5",
        "--lease-duration-seconds=3",
        "--tombstone-max-entries=100",
    ];
    let out = pipewarden_with_env(&[&run[..], &at_floor[..]].concat(), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("the minimum is"), "{stderr}");
    assert!(
        stderr.contains("cannot build a Kubernetes client"),
        "{stderr}"
    );
}

#[test]
fn a_budget_in_the_settings_is_held_to_the_same_floors() {
    let settings = super::Scratch::new(
        "budget-settings.yaml",
        "notify: all\npipewarden.io/budget: {preset: interpreter, decisionTimeoutMs: 1}\n",
    );
    let settings_flag = format!("--settings={}", settings.arg());
    for command in [
        &["run", "--policy", "unused.wasm", &settings_flag][..],
        &[
            "eval",
            "--policy",
            "unused.wasm",
            &settings_flag,
            "unused.yaml",
        ][..],
    ] {
        let line = refusal(&pipewarden_with_env(command, &[]));
        assert!(
            line.contains(
                "--decision-timeout-ms (PIPEWARDEN_DECISION_TIMEOUT_MS) is 1; the minimum is 5"
            ),
            "{command:?}: {line}"
        );
    }
    // A flag given overrides the settings' value.
    let with_flag = [
        "eval",
        "--policy",
        "unused.wasm",
        &settings_flag,
        "--decision-timeout-ms=50",
        "unused.yaml",
    ];
    let out = pipewarden_with_env(&with_flag, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("the minimum is"), "{stderr}");
}
