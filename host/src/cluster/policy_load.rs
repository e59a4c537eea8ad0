//! Loading the policy with its settings, the same for `run`, a reload and `plan`.

use super::policy_handle::LoadedPolicy;
use crate::config::{PolicyArgs, Settings};
use crate::metrics::Metrics;

/// Load the policy and validate its settings (as read from their source); a policy that
/// refuses its settings is an error (a reload keeps the previous one then).
pub fn load_policy(
    args: &PolicyArgs,
    settings: &Settings,
    given: bool,
    metrics: &Metrics,
) -> anyhow::Result<LoadedPolicy> {
    match load_policy_keeping_refused(args, settings, given, metrics)? {
        (loaded, None) => Ok(loaded),
        (_, Some(refused)) => Err(anyhow::anyhow!(refused)),
    }
}

/// Load the policy and validate its settings. A policy that cannot be loaded is an error; one
/// that refuses its settings is loaded all the same, with why, so that the controller starts:
/// the SWF loop, the one that renders, writes nothing then (see `swf::serving`), and the exit
/// gate runs. Without settings (only a run without the SWF loop) there is nothing to validate.
pub fn load_policy_keeping_refused(
    args: &PolicyArgs,
    settings: &Settings,
    given: bool,
    metrics: &Metrics,
) -> anyhow::Result<(LoadedPolicy, Option<String>)> {
    let attempt = || -> anyhow::Result<(LoadedPolicy, Option<String>)> {
        // A budget in the settings is read on every load, so a reload picks up a new one.
        let args = args.with_settings_budget(&settings.budget);
        args.check_floors()?;
        let settings = settings.text.clone();
        let policy = args
            .load_observed(Some(metrics.policy.retry_observer()))?
            .with_settings(&settings);
        let refused = given
            .then(|| policy.validate_settings(&settings).err())
            .flatten()
            .map(|e| format!("policy {} rejected its settings: {e}", policy.label()));
        let report = policy.load_report();
        tracing::info!(
            policy = policy.label(),
            digest = policy.digest(),
            code = ?report.source,
            millis = report.code_time.as_secs_f64() * 1e3,
            settings = match (given, &refused) {
                (false, _) => "none (no loop renders)",
                (true, None) => "validated",
                (true, Some(_)) => "refused",
            },
            "policy loaded"
        );
        Ok((LoadedPolicy::new(policy, settings), refused))
    };
    let result = attempt();
    Metrics::count(
        &metrics.policy.loads,
        match &result {
            Ok((_, None)) => "loaded",
            Ok((_, Some(_))) => "settings-refused",
            Err(_) => "refused",
        },
    );
    result
}
