//! What the SWF loop may do on this install right now, from what the install and the policy
//! say, before any SWF is looked at: write as the rebuild policy says, write nothing because
//! KFP's API server owns every schedule, or write nothing because the target or the settings
//! cannot be served. Pure: the loop gathers the facts and reports the answer once per change.

use std::fmt;

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

/// What the loop depends on beyond each SWF.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoopFacts {
    /// The version the KFP API reports (or `--target-version`), before `--compile-as`.
    pub reported: Option<String>,
    /// The version renders are made for, after `--compile-as`.
    pub target: Option<String>,
    pub mode: Option<Mode>,
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
    if let Some(evidence) = kfp_api_owns(facts) {
        return Serving::KfpApiOwns { evidence };
    }
    let held = |hold, why: &str| Serving::Held {
        hold,
        why: why.to_owned(),
    };
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
/// that owns them (2.18 on), or an API server pod that says it is such a writer.
fn kfp_api_owns(facts: &LoopFacts) -> Option<String> {
    let mode = facts.mode.as_ref().filter(|mode| mode.multi_user)?;
    if let Some((pod, value)) = &facts.writer_protocol {
        return Some(format!(
            "multi-user mode ({}), and API server pod {pod} carries \
             {SCHEDULE_WRITER_ANNOTATION}={value}",
            mode.source
        ));
    }
    let version = [&facts.reported, &facts.target]
        .into_iter()
        .flatten()
        .find_map(|version| release_of(version).map(|release| (version, release)));
    match version {
        Some((version, release)) if release >= API_OWNED_SINCE => Some(format!(
            "KFP {version} in multi-user mode ({})",
            mode.source
        )),
        _ => None,
    }
}

/// The `major.minor.patch` a version string starts with (`2.18.1`, `v2.18.1`,
/// `2.18.1-acme.3`); None when it does not start with one.
pub fn release_of(version: &str) -> Option<(u64, u64, u64)> {
    let version = version.trim().trim_start_matches('v');
    let core = version
        .split(|c: char| c == '-' || c == '+')
        .next()
        .unwrap_or_default();
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
