//! What the SWF loop may do on this install right now, from what the install and the policy
//! say, before any SWF is looked at: write as the rebuild policy says, write nothing because
//! KFP's API server owns every schedule, or write nothing because the target or the settings
//! cannot be served. Pure: the loop gathers the facts and reports the answer once per change.

use std::fmt;

use super::outcome::SwfOutcome;
use crate::engine::{PolicyError, RebuildDecision, RebuildInput, RebuildPolicy, Stamps};

/// The first KFP release whose API server owns every schedule in multi-user mode
/// (`NewGenericScheduledWorkflow`, adoption of legacy jobs, the `schedule-writer-protocol`
/// fence; kubeflow/pipelines `docs/operator-guides/scheduled-service-accounts.md`, 2.18-era).
/// The release ledger's first `ApiOwnedInMultiUser` row (a test checks they agree).
pub const API_OWNED_SINCE: (u64, u64, u64) = (2, 18, 0);

/// The pod annotation 2.18+ API server and SWF-controller pods carry in multi-user mode,
/// `api-owned-v1:<hash>` (kubeflow/pipelines `backend/src/common/util/
/// scheduled_writer_handoff.go`, 2.18-era): its presence means an API-owned writer runs.
pub const SCHEDULE_WRITER_ANNOTATION: &str = "pipelines.kubeflow.org/schedule-writer-protocol";

/// Whether KFP runs in multi-user mode, and who said so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mode {
    pub multi_user: bool,
    /// Where it was read: `--kfp-multi-user`, the API's healthz, the API server's `MULTIUSER`.
    pub source: String,
}

/// Whether the settings the policy renders with can be trusted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SettingsHealth {
    #[default]
    Ok,
    /// The policy's `validate-settings` refused them.
    Refused(String),
    /// The API server's environment could not be read (`--settings-from`).
    Unreadable(String),
    /// The environment was read, but a variable a compile reads cannot be known (a Secret
    /// pipewarden may not read could set it, the API server runs values it read before a
    /// ConfigMap changed, a rollout is under way).
    Uncertain(String),
}

/// The policy's answer to the target probe (`pipewarden_guest::TARGET_PROBE_ANNOTATION`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Probe {
    /// Not asked yet, or the policy does not answer probes: its SWF decisions will tell.
    #[default]
    Unknown,
    /// Served; `proof` is one word (`own-compiler-output`), `note` a sentence.
    Served {
        proof: String,
        note: String,
    },
    NotServed(String),
}

/// What the settings source and the KFP API said about the install, as last read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstallFacts {
    pub settings: SettingsHealth,
    /// `MULTIUSER` as the API server's environment has it (`--settings-from`), or why it
    /// cannot be known.
    pub env_mode: Option<Result<Mode, String>>,
    /// `multi_user` of the KFP API's healthz (`--kfp-api-url`).
    pub healthz_multi_user: Option<bool>,
    /// A running API server pod announcing an API-owned writer, and the annotation's value.
    pub writer_protocol: Option<(String, String)>,
    /// The version the KFP API reports (or `--target-version`), before `--compile-as`.
    pub reported: Option<String>,
}

impl InstallFacts {
    /// The mode in force: `--kfp-multi-user`, else the KFP API's healthz (the running
    /// server's own answer), else the API server's environment.
    pub fn mode(&self, flag: Option<bool>) -> Option<Result<Mode, String>> {
        let mode = |multi_user, source: &str| {
            Some(Ok(Mode {
                multi_user,
                source: source.to_owned(),
            }))
        };
        if let Some(multi_user) = flag {
            return mode(multi_user, "--kfp-multi-user");
        }
        if let Some(multi_user) = self.healthz_multi_user {
            return mode(multi_user, "multi_user of the KFP API's healthz");
        }
        self.env_mode.clone()
    }

    /// The loop's facts with the target in force and the policy's probe answer.
    pub fn facts(&self, flag: Option<bool>, target: Option<String>, probe: Probe) -> LoopFacts {
        LoopFacts {
            reported: self.reported.clone().or_else(|| target.clone()),
            target,
            mode: self.mode(flag),
            writer_protocol: self.writer_protocol.clone(),
            settings: self.settings.clone(),
            probe,
        }
    }
}

/// What the loop depends on beyond each SWF.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoopFacts {
    /// The version the KFP API reports (or `--target-version`), before `--compile-as`.
    pub reported: Option<String>,
    /// The version renders are made for, after `--compile-as`.
    pub target: Option<String>,
    /// Multi-user mode, or why it cannot be known; None when nothing says.
    pub mode: Option<Result<Mode, String>>,
    /// An API server pod and the schedule-writer annotation it carries.
    pub writer_protocol: Option<(String, String)>,
    pub settings: SettingsHealth,
    pub probe: Probe,
}

/// Why the loop writes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    SettingsRefused,
    SettingsUnreadable,
    SettingsUncertain,
    TargetNotServed,
}

impl Hold {
    /// The `reason` label of `pipewarden_target_info`.
    pub fn label(self) -> &'static str {
        match self {
            Hold::SettingsRefused => "settings-refused",
            Hold::SettingsUnreadable => "settings-unreadable",
            Hold::SettingsUncertain => "settings-uncertain",
            Hold::TargetNotServed => "target-not-served",
        }
    }
}

/// What the SWF loop does on this install now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Serving {
    /// Decide each SWF and write as the rebuild policy says; `proof` when the policy said how
    /// its renders are proven.
    Writes { proof: Option<(String, String)> },
    /// KFP's API server owns every schedule: no SWF is rendered, restored or stamped.
    KfpApiOwns { evidence: String },
    /// Nothing is written: `why` says what, for the operator.
    Held { hold: Hold, why: String },
}

impl Serving {
    pub fn writes(&self) -> bool {
        matches!(self, Serving::Writes { .. })
    }

    /// `pipewarden_target_info{owner}`.
    pub fn owner(&self) -> &'static str {
        match self {
            Serving::KfpApiOwns { .. } => "kfp-api",
            _ => "pipewarden",
        }
    }
}

impl fmt::Display for Serving {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Serving::Writes {
                proof: Some((_, note)),
            } => write!(f, "{note}"),
            Serving::Writes { proof: None } => f.write_str("SWFs are decided and written"),
            Serving::KfpApiOwns { evidence } => write!(
                f,
                "KFP's API server owns every recurring run on this install ({evidence}): no SWF \
                 is written; SWFs that still embed a compiled workflow were not adopted by KFP \
                 and do not fire until they are (the KFP 2.18 upgrade guide's adoption step)"
            ),
            Serving::Held { why, .. } => write!(f, "no SWF is written: {why}"),
        }
    }
}

/// What the loop may do, from `facts`. Ownership comes first (on an API-owned install nothing
/// is written, whatever else holds), then the settings, then the target.
pub fn serving(facts: &LoopFacts) -> Serving {
    let held = |hold, why: &str| Serving::Held {
        hold,
        why: why.to_owned(),
    };
    match kfp_api_owns(facts) {
        Ok(Some(evidence)) => return Serving::KfpApiOwns { evidence },
        Ok(None) => {}
        Err(why) => return held(Hold::SettingsUncertain, &why),
    }
    match &facts.settings {
        SettingsHealth::Ok => {}
        SettingsHealth::Refused(why) => {
            return held(
                Hold::SettingsRefused,
                &format!("the policy refused its settings: {why}"),
            );
        }
        SettingsHealth::Unreadable(why) => {
            return held(
                Hold::SettingsUnreadable,
                &format!("the KFP API server's environment cannot be read: {why}"),
            );
        }
        SettingsHealth::Uncertain(why) => return held(Hold::SettingsUncertain, why),
    }
    match &facts.probe {
        Probe::NotServed(why) => held(Hold::TargetNotServed, why),
        Probe::Served { proof, note } => Serving::Writes {
            proof: Some((proof.clone(), note.clone())),
        },
        Probe::Unknown => Serving::Writes { proof: None },
    }
}

/// Why KFP's API server owns every schedule here, when it does: multi-user mode on a release
/// that owns them (2.18 on), or an API server pod that says it is such a writer. Where that
/// would decide it but the mode cannot be known, the error says why.
fn kfp_api_owns(facts: &LoopFacts) -> Result<Option<String>, String> {
    let version = [&facts.reported, &facts.target]
        .into_iter()
        .flatten()
        .find_map(|version| release_of(version).map(|release| (version, release)));
    let owning_release = version.filter(|(_, release)| *release >= API_OWNED_SINCE);
    let mode = match &facts.mode {
        Some(Ok(mode)) => mode,
        Some(Err(why)) if owning_release.is_some() || facts.writer_protocol.is_some() => {
            return Err(why.clone());
        }
        Some(Err(_)) | None => return Ok(None),
    };
    if !mode.multi_user {
        return Ok(None);
    }
    if let Some((pod, value)) = &facts.writer_protocol {
        return Ok(Some(format!(
            "multi-user mode ({}), and API server pod {pod} carries \
             {SCHEDULE_WRITER_ANNOTATION}={value}",
            mode.source
        )));
    }
    Ok(owning_release
        .map(|(version, _)| format!("KFP {version} in multi-user mode ({})", mode.source)))
}

/// The SWF the host hands `should-rebuild` to ask about the target alone
/// (`pipewarden_guest::TARGET_PROBE_ANNOTATION`).
pub const PROBE_SWF: &str = r#"{"apiVersion":"kubeflow.org/v1beta1","kind":"ScheduledWorkflow","metadata":{"name":"pipewarden-target-probe","annotations":{"pipewarden.io/target-probe":"true"}},"spec":{}}"#;
/// How a policy answers the probe for a target it serves.
pub const TARGET_SERVED_PREFIX: &str = "target-served: ";

/// The probe for `target` under `settings`.
pub fn probe_input(policy: RebuildPolicy, target: Option<String>, settings: &str) -> RebuildInput {
    RebuildInput {
        policy,
        swf: PROBE_SWF.to_owned(),
        target_version: target,
        stamps: Stamps {
            version: None,
            render_hash: None,
        },
        settings: settings.to_owned(),
    }
}

/// What the policy's answer to the probe says; an answer that is neither form, or a failed
/// call, says nothing (the SWFs' own decisions will).
pub fn read_probe(answer: &Result<RebuildDecision, PolicyError>) -> Probe {
    let Ok(RebuildDecision::Skip(text)) = answer else {
        return Probe::Unknown;
    };
    if let Some(why) = super::unsupported_target_reason(text) {
        return Probe::NotServed(why.to_owned());
    }
    match text.strip_prefix(TARGET_SERVED_PREFIX) {
        Some(rest) => {
            let (proof, note) = rest.split_once("; ").unwrap_or((rest, ""));
            Probe::Served {
                proof: proof.trim().to_owned(),
                note: note.trim().to_owned(),
            }
        }
        None => Probe::Unknown,
    }
}

/// The outcome for an SWF when the loop does not ask the policy: every SWF on an API-owned
/// install (generic ones are the API's, ones that still embed a workflow were not adopted),
/// every SWF while the loop is held. None when the policy decides.
pub fn outcome_without_policy(serving: &Serving, live_json: &str) -> Option<SwfOutcome> {
    match serving {
        Serving::Writes { .. } => None,
        Serving::Held { why, .. } => Some(SwfOutcome::UnsupportedTarget {
            reason: why.clone(),
        }),
        Serving::KfpApiOwns { .. } => Some(
            match pipewarden_guest::swf::is_reference_only_json(live_json) {
                Ok(false) => SwfOutcome::NotAdopted {
                    reason: NOT_ADOPTED.to_owned(),
                },
                Ok(true) | Err(_) => SwfOutcome::UpstreamOwned {
                    reason: "KFP's API server owns this recurring run (no compiled workflow is \
                             embedded: adopted, created by 2.18, or made for a plugin)"
                        .to_owned(),
                },
            },
        ),
    }
}

/// What an SWF that still embeds a compiled workflow means on an API-owned install.
const NOT_ADOPTED: &str = "KFP's API server owns every recurring run on this install, and this \
    SWF still embeds a compiled workflow: KFP has not adopted it, so its SWF controller does not \
    fire it (the UI may still show it enabled). Run the adoption step of KFP's 2.18 upgrade \
    guide (docs/operator-guides/upgrade-2.18.md) or recreate the recurring run through the API; \
    pipewarden writes nothing to it";

/// The `major.minor.patch` a version string starts with (`2.18.1`, `v2.18.1`,
/// `2.18.1-acme.3`); None when it does not start with one.
pub fn release_of(version: &str) -> Option<(u64, u64, u64)> {
    let version = version.trim().trim_start_matches('v');
    let core = version.split(['-', '+']).next().unwrap_or_default();
    let mut parts = core.split('.').map(|part| part.parse::<u64>().ok());
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(Some(major)), Some(Some(minor)), Some(Some(patch)), None) => {
            Some((major, minor, patch))
        }
        _ => None,
    }
}

/// A boolean as Go's `strconv.ParseBool` reads it, which KFP's API server uses for `MULTIUSER`
/// (`common.GetBoolConfigWithDefault`); None for anything else (the API server stops on it).
pub fn go_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
