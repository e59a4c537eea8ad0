//! Hot reload: when the policy file, its settings or its pin file change on disk (a ConfigMap
//! update swaps them), the KFP API server's environment changes (`--settings-from`), or the
//! tag of an `oci://` policy moves (with `--policy-allow-tag`), load and validate the new
//! policy off the decision path and swap it in atomically; a policy that fails anything is
//! refused and the old one keeps serving.
//!
//! Each check also says what the API server's install looks like now (`swf::serving`): an
//! install that cannot be read, or whose environment cannot be known, holds the SWF loop's
//! writes until it can; it is reported once, never ignored.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::api_server_install::InstallRead;
use super::policy_handle::PolicyHandle;
use super::policy_load::load_policy;
use super::settings_source::{SettingsPin, SettingsPinMismatch, SettingsSource};
use crate::config::PolicyArgs;
use crate::metrics::Metrics;
use crate::swf::serving::{InstallFacts, SettingsHealth};

/// How often the API server's install is read when policy files are not reloaded.
pub const INSTALL_CHECK: Duration = Duration::from_secs(10);

/// Everything a reload reads; any change to these bytes triggers one.
pub struct Inputs {
    policy: PolicyArgs,
    settings: SettingsSource,
    /// Whether a changed policy file (or its pins) is reloaded: with `--policy-reload-seconds
    /// 0` only the API server's environment is followed.
    follow_policy: bool,
}

impl Inputs {
    pub fn new(policy: PolicyArgs, settings: SettingsSource) -> Self {
        Inputs {
            policy,
            settings,
            follow_policy: true,
        }
    }

    /// Changes of the policy file and its pins are not followed, only of the settings.
    pub fn settings_only(mut self) -> Self {
        self.follow_policy = false;
        self
    }

    /// A digest of the policy, the settings as read (`settings`) and the pin files together;
    /// None while one is unreadable.
    pub fn fingerprint(&self, settings: &str) -> Option<[u8; 32]> {
        let mut hasher = Sha256::new();
        if !self.follow_policy {
            hasher.update(settings);
            return Some(hasher.finalize().into());
        }
        hasher.update(self.policy.source_fingerprint()?);
        hasher.update([0]);
        hasher.update(settings);
        hasher.update([0]);
        let settings_pin = match &self.settings.pin {
            SettingsPin::File(path) => Some(path),
            _ => None,
        };
        let files = [
            self.policy.policy_sha256_file.as_ref(),
            self.policy.policy_verify_key.as_ref(),
            settings_pin,
        ];
        for path in files.into_iter().flatten() {
            hasher.update(std::fs::read(path).ok()?);
            hasher.update([0]);
        }
        Some(hasher.finalize().into())
    }
}

/// The install facts at a check: the settings refused by the policy in force (`refused`), or
/// what reading the install said (`install`, with `--settings-from`).
pub fn install_facts(
    refused: Option<String>,
    install: Option<&anyhow::Result<InstallRead>>,
) -> InstallFacts {
    let mut facts = InstallFacts::default();
    if let Some(Ok(install)) = install {
        facts.env_mode = Some(install.mode.clone());
        facts.writer_protocol.clone_from(&install.writer_protocol);
    }
    facts.settings = match (refused, install) {
        (Some(refused), _) => SettingsHealth::Refused(refused),
        (None, Some(Err(error))) => SettingsHealth::Unreadable(format!("{error:#}")),
        (
            None,
            Some(Ok(InstallRead {
                uncertain: Some(why),
                ..
            })),
        ) => SettingsHealth::Uncertain(why.clone()),
        (None, _) => SettingsHealth::Ok,
    };
    facts
}

/// Publishes what a check found of the install, keeping what the KFP API said.
fn publish(install: &tokio::sync::watch::Sender<InstallFacts>, found: InstallFacts) {
    install.send_if_modified(|facts| {
        let next = InstallFacts {
            healthz_multi_user: facts.healthz_multi_user,
            reported: facts.reported.clone(),
            ..found
        };
        let modified = *facts != next;
        *facts = next;
        modified
    });
}

/// Polls every `interval` (ConfigMap volumes change by an atomic symlink swap, which polling
/// sees reliably) and swaps in each valid new policy. `loaded_from` is the fingerprint taken
/// before the policy in force was loaded; `install` receives what each check found of the API
/// server's install.
pub async fn watch(
    inputs: Inputs,
    loaded_from: Option<[u8; 32]>,
    interval: Duration,
    handle: PolicyHandle,
    install: Arc<tokio::sync::watch::Sender<InstallFacts>>,
    metrics: Arc<Metrics>,
) -> anyhow::Result<()> {
    let inputs = Arc::new(inputs);
    let mut schedule = Schedule::new(loaded_from, interval);
    // Refused settings in force (at start): said until another load is put in force.
    let mut refused = match &install.borrow().settings {
        SettingsHealth::Refused(why) => Some(why.clone()),
        _ => None,
    };
    loop {
        tokio::time::sleep(interval).await;
        let file = match inputs.settings.read_file() {
            Ok(file) => file,
            // Changed settings their pin does not allow: refused, and said so.
            Err(error) if error.downcast_ref::<SettingsPinMismatch>().is_some() => {
                if schedule.refuse_settings(&error) {
                    Metrics::count(&metrics.policy.loads, "refused");
                    tracing::error!(
                        error = format!("{error:#}"),
                        "new settings refused; the previous ones keep serving"
                    );
                }
                continue;
            }
            // A file briefly missing mid-swap.
            Err(error) => {
                tracing::debug!(
                    error = format!("{error:#}"),
                    "settings file unreadable; next time"
                );
                continue;
            }
        };
        let settings = match inputs.settings.read_install(&file).await {
            None => {
                publish(&install, install_facts(refused.clone(), None));
                file
            }
            Some(Ok((settings, found))) => {
                let found = Ok(found);
                publish(&install, install_facts(refused.clone(), Some(&found)));
                settings
            }
            // The SWF loop holds its writes, and says so once, until it reads again.
            Some(Err(error)) => {
                let unreadable = Err(error);
                publish(&install, install_facts(refused.clone(), Some(&unreadable)));
                continue;
            }
        };
        // An OCI tag is resolved over the network: off the async workers.
        let now = {
            let (inputs, text) = (inputs.clone(), settings.text.clone());
            tokio::task::spawn_blocking(move || inputs.fingerprint(&text)).await?
        };
        if !schedule.should_load(now, Instant::now()) {
            continue;
        }
        let (inputs, metrics_for_load) = (inputs.clone(), metrics.clone());
        let loaded = tokio::task::spawn_blocking(move || {
            let given = inputs.settings.is_given();
            load_policy(&inputs.policy, &settings, given, &metrics_for_load)
        })
        .await?;
        match loaded {
            Ok(loaded) => {
                schedule.loaded();
                let previous = handle.current().policy.digest().to_string();
                let next = loaded.policy.digest().to_string();
                handle.swap(loaded);
                tracing::info!(%previous, %next, "policy swapped");
                if refused.take().is_some() {
                    install.send_modify(|facts| facts.settings = SettingsHealth::Ok);
                }
            }
            Err(error) => {
                let again = schedule.failed(Instant::now());
                tracing::error!(
                    error = format!("{error:#}"),
                    retry_in = ?again,
                    "new policy refused; the previous one keeps serving"
                );
            }
        }
    }
}

/// The longest wait before a failed reload is tried again with the same inputs.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(600);

/// When to load: on each change of the inputs, and after a failure again with the same inputs
/// (a registry or API server briefly down), waiting twice as long each time up to
/// [`MAX_RETRY_DELAY`]; a change of the inputs starts over.
struct Schedule {
    last: Option<[u8; 32]>,
    interval: Duration,
    failures: u32,
    retry_at: Option<Instant>,
    /// The last settings refusal reported, so one is not repeated every poll.
    refused_settings: Option<String>,
}

impl Schedule {
    fn new(loaded_from: Option<[u8; 32]>, interval: Duration) -> Self {
        Schedule {
            last: loaded_from,
            interval,
            failures: 0,
            retry_at: None,
            refused_settings: None,
        }
    }

    /// Whether a settings refusal is new (worth an error and a count).
    fn refuse_settings(&mut self, error: &anyhow::Error) -> bool {
        let text = format!("{error:#}");
        let new = self.refused_settings.as_deref() != Some(text.as_str());
        self.refused_settings = Some(text);
        new
    }

    /// Whether to load inputs with fingerprint `now` (None: unreadable, e.g. mid-swap).
    fn should_load(&mut self, now: Option<[u8; 32]>, at: Instant) -> bool {
        if now.is_none() {
            return false;
        }
        if now != self.last {
            self.last = now;
            self.failures = 0;
            self.retry_at = None;
            return true;
        }
        self.retry_at.is_some_and(|due| at >= due)
    }

    fn loaded(&mut self) {
        self.failures = 0;
        self.retry_at = None;
    }

    /// Records a failed load; returns the wait before the next try.
    fn failed(&mut self, at: Instant) -> Duration {
        self.failures += 1;
        let delay = self
            .interval
            .saturating_mul(1 << self.failures.min(16))
            .min(MAX_RETRY_DELAY);
        self.retry_at = Some(at + delay);
        delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_settings_come_first_then_an_unreadable_then_an_uncertain_install() {
        let read = |uncertain: Option<&str>| InstallRead {
            env: Default::default(),
            read_from: "its pod template".into(),
            mode: Err("unknown".into()),
            writer_protocol: Some(("kubeflow/api-0".into(), "api-owned-v1:ab".into())),
            uncertain: uncertain.map(str::to_owned),
        };
        let refused = install_facts(Some("bad notify".into()), Some(&Ok(read(Some("rollout")))));
        assert_eq!(
            refused.settings,
            SettingsHealth::Refused("bad notify".into())
        );
        assert_eq!(
            refused.writer_protocol,
            Some(("kubeflow/api-0".into(), "api-owned-v1:ab".into())),
            "what was read is kept beside the refusal"
        );
        let unreadable = install_facts(None, Some(&Err(anyhow::anyhow!("forbidden"))));
        assert_eq!(
            unreadable.settings,
            SettingsHealth::Unreadable("forbidden".into())
        );
        assert_eq!(unreadable.env_mode, None);
        let uncertain = install_facts(None, Some(&Ok(read(Some("rollout")))));
        assert_eq!(
            uncertain.settings,
            SettingsHealth::Uncertain("rollout".into())
        );
        assert_eq!(
            install_facts(None, Some(&Ok(read(None)))).settings,
            SettingsHealth::Ok
        );
        assert_eq!(install_facts(None, None), InstallFacts::default());
    }

    #[test]
    fn without_policy_reloads_only_the_settings_are_followed() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            policy: PolicyArgs,
        }
        use clap::Parser as _;
        let dir = std::env::temp_dir().join(format!("pipewarden-reload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("policy.wasm");
        std::fs::write(&file, b"one").unwrap();
        let args = Cli::try_parse_from(["x", "--policy", file.to_str().unwrap()])
            .unwrap()
            .policy;
        let source = SettingsSource {
            file: None,
            live: None,
            pin: SettingsPin::None,
        };
        let all = Inputs::new(args.clone(), source.clone());
        let settings_only = Inputs::new(args, source).settings_only();
        let (all_before, only_before) = (all.fingerprint("{}"), settings_only.fingerprint("{}"));
        std::fs::write(&file, b"two").unwrap();
        assert_ne!(
            all.fingerprint("{}"),
            all_before,
            "a changed policy file is followed"
        );
        assert_eq!(settings_only.fingerprint("{}"), only_before, "not followed");
        assert_ne!(settings_only.fingerprint(r#"{"a":1}"#), only_before);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_failed_reload_is_tried_again_with_backoff_until_it_loads() {
        let start = Instant::now();
        let second = Duration::from_secs(1);
        let (old, new) = (Some([1; 32]), Some([2; 32]));
        let mut schedule = Schedule::new(old, 5 * second);
        assert!(!schedule.should_load(old, start), "nothing changed");
        assert!(!schedule.should_load(None, start), "unreadable mid-swap");
        assert!(schedule.should_load(new, start), "changed");
        // A registry down: the same inputs again after 10 s, then 20 s.
        assert_eq!(schedule.failed(start), 10 * second);
        assert!(!schedule.should_load(new, start + 9 * second));
        assert!(schedule.should_load(new, start + 10 * second));
        assert_eq!(schedule.failed(start + 10 * second), 20 * second);
        assert!(!schedule.should_load(new, start + 29 * second));
        assert!(schedule.should_load(new, start + 30 * second));
        schedule.loaded();
        assert!(
            !schedule.should_load(new, start + 3600 * second),
            "loaded: done"
        );
    }

    #[test]
    fn the_wait_is_capped_and_a_change_of_the_inputs_starts_over() {
        let start = Instant::now();
        let mut schedule = Schedule::new(None, Duration::from_secs(5));
        assert!(schedule.should_load(Some([3; 32]), start));
        for _ in 0..20 {
            schedule.failed(start);
        }
        assert_eq!(schedule.failed(start), MAX_RETRY_DELAY);
        assert!(
            schedule.should_load(Some([4; 32]), start),
            "new inputs at once"
        );
        assert_eq!(schedule.failed(start), Duration::from_secs(10));
    }
}
