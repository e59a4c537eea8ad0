//! The SWF loop's standing on this install (`swf::serving`): recomputed whenever the target,
//! the install's facts or the policy in force change (asking the policy's target probe once),
//! sent to the reconciles, and reported once per change: a log line, an Event on the
//! controller's pod, `pipewarden_target_info` and a `/readyz` line. Whether or not there is any
//! SWF.

use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType};
use tokio::sync::watch;

use super::changes;
use crate::cluster::policy_handle::PolicyHandle;
use crate::controller::context::Context;
use crate::engine::{Export, RebuildPolicy};
use crate::metrics::TargetLabels;
use crate::swf::serving::{
    InstallFacts, LoopFacts, Probe, Serving, SettingsHealth, probe_input, read_probe, serving,
};

/// The readiness part the SWF loop's standing is said under.
const PART: &str = "swf";
/// How often to look whether a reload put another policy or settings in force.
const POLICY_CHECK: Duration = Duration::from_secs(5);

/// What the standing is computed from.
pub struct Inputs {
    pub ctx: Context,
    pub target: watch::Receiver<Option<String>>,
    pub install: watch::Receiver<InstallFacts>,
    /// `--kfp-multi-user`.
    pub multi_user_flag: Option<bool>,
    pub rebuild_policy: RebuildPolicy,
}

/// The standing now: the facts, with the policy's answer to the probe.
pub async fn standing(inputs: &Inputs) -> (Serving, LoopFacts) {
    let install = inputs.install.borrow().clone();
    let target = inputs.target.borrow().clone();
    let probe = match install.settings {
        SettingsHealth::Ok => probe(&inputs.ctx.policy, inputs.rebuild_policy, &target).await,
        _ => Probe::Unknown,
    };
    let facts = install.facts(inputs.multi_user_flag, target, probe);
    (serving(&facts), facts)
}

async fn probe(
    policy: &PolicyHandle,
    rebuild_policy: RebuildPolicy,
    target: &Option<String>,
) -> Probe {
    let target = target.clone();
    policy
        .call(Export::ShouldRebuild, move |loaded| {
            let input = probe_input(rebuild_policy, target, &loaded.settings);
            Ok(read_probe(&loaded.policy.should_rebuild(&input)))
        })
        .await
        .unwrap_or_default()
}

/// Recomputes the standing on every change of its inputs, sending and reporting each new one.
/// The first is computed before this returns its future's first poll result is awaited: the
/// caller sends it before the SWFs are listed.
pub async fn run(inputs: Inputs, tx: watch::Sender<Serving>, reporter: Reporter) {
    let mut changed = futures::stream::select_all([
        changes(inputs.target.clone()).boxed(),
        changes(inputs.install.clone()).boxed(),
        policy_changes(inputs.ctx.policy.clone()).boxed(),
    ]);
    while changed.next().await.is_some() {
        let (now, facts) = standing(&inputs).await;
        reporter.report(&now, &facts).await;
        tx.send_if_modified(|current| {
            let modified = *current != now;
            *current = now;
            modified
        });
    }
}

/// One item each time another policy or other settings are put in force.
fn policy_changes(policy: PolicyHandle) -> impl futures::Stream<Item = ()> + Send {
    let in_force = |policy: &PolicyHandle| {
        let loaded = policy.current();
        (loaded.policy.digest().to_owned(), loaded.settings.clone())
    };
    let first = in_force(&policy);
    futures::stream::unfold((policy, first), move |(policy, last)| async move {
        loop {
            tokio::time::sleep(POLICY_CHECK).await;
            let now = in_force(&policy);
            if now != last {
                return Some(((), (policy, now)));
            }
        }
    })
}

/// Says the standing once per change.
pub struct Reporter {
    ctx: Context,
    said: tokio::sync::Mutex<Option<(Serving, Option<String>)>>,
}

impl Reporter {
    pub fn new(ctx: &Context) -> Self {
        Reporter {
            ctx: ctx.clone(),
            said: tokio::sync::Mutex::new(None),
        }
    }

    /// Reports `serving` for `facts`, unless it was the last thing said.
    pub async fn report(&self, serving: &Serving, facts: &LoopFacts) {
        let mut said = self.said.lock().await;
        let now = (serving.clone(), facts.target.clone());
        if said.as_ref() == Some(&now) {
            return;
        }
        let first = said.is_none();
        *said = Some(now);
        drop(said);
        let target = facts.target.as_deref().unwrap_or("unknown");
        self.ctx.metrics.set_target(labels(serving, facts));
        self.ctx
            .readiness
            .set_degraded(PART, degraded(serving).map(str::to_owned));
        match serving {
            Serving::Writes { .. } => tracing::info!(target, %serving, "the SWF loop writes"),
            Serving::KfpApiOwns { .. } => {
                tracing::warn!(target, %serving, "the SWF loop writes nothing");
            }
            Serving::Held { hold, .. } => {
                tracing::warn!(target, reason = hold.label(), %serving, "the SWF loop writes nothing");
            }
        }
        // A loop that writes from the start needs no Event; one that stops or starts again does.
        if first && serving.writes() {
            return;
        }
        self.publish(serving, target).await;
    }

    async fn publish(&self, serving: &Serving, target: &str) {
        let Some(pod) = self.ctx.own_pod.clone() else {
            return;
        };
        let (type_, reason) = match serving {
            Serving::Writes { .. } => (EventType::Normal, "SwfLoopWrites"),
            Serving::KfpApiOwns { .. } => (EventType::Normal, "SchedulesOwnedByKfpApi"),
            Serving::Held { .. } => (EventType::Warning, "SwfLoopHeld"),
        };
        let mut note = format!("Target {target}: {serving}");
        truncate(&mut note, 1024);
        let event = Event {
            type_,
            reason: reason.to_owned(),
            note: Some(note),
            action: "Reconcile".to_owned(),
            secondary: None,
        };
        if let Err(error) = self.ctx.recorder.publish(&event, &pod).await {
            tracing::warn!(
                error = crate::cluster::api_error::describe(&error, &self.ctx.api_server),
                "cannot publish an Event on the controller's pod"
            );
        }
    }
}

/// `pipewarden_target_info`'s labels for a standing.
fn labels(serving: &Serving, facts: &LoopFacts) -> TargetLabels {
    let (supported, proof) = match &facts.probe {
        Probe::Served { proof, .. } => ("true", proof.as_str()),
        Probe::NotServed(_) => ("false", "none"),
        Probe::Unknown => ("unknown", "unknown"),
    };
    TargetLabels {
        version: facts.target.clone().unwrap_or_else(|| "unknown".into()),
        supported: supported.into(),
        proof: proof.into(),
        owner: serving.owner().into(),
        reason: match serving {
            Serving::Writes { .. } => "none",
            Serving::KfpApiOwns { .. } => "kfp-api-owns-schedules",
            Serving::Held { hold, .. } => hold.label(),
        }
        .into(),
    }
}

/// What `/readyz` says of a loop that writes nothing.
fn degraded(serving: &Serving) -> Option<&'static str> {
    match serving {
        Serving::Writes { .. } => None,
        Serving::KfpApiOwns { .. } => {
            Some("writes nothing: KFP's API server owns every schedule (see the Events)")
        }
        Serving::Held { hold, .. } => Some(match hold.label() {
            "settings-refused" => "writes nothing: settings-refused (see the log and Events)",
            "settings-unreadable" => "writes nothing: settings-unreadable (see the log and Events)",
            "settings-uncertain" => "writes nothing: settings-uncertain (see the log and Events)",
            _ => "writes nothing: target-not-served (see the log and Events)",
        }),
    }
}

fn truncate(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let mut end = max.saturating_sub(3);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str("...");
}

/// The controller's own pod, when its name is known (`--identity` / `POD_NAME`).
pub fn own_pod(namespace: &str, name: Option<&str>) -> Option<ObjectReference> {
    Some(ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(name?.to_owned()),
        namespace: Some(namespace.to_owned()),
        ..ObjectReference::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swf::serving::Hold;

    #[test]
    fn the_metric_says_the_proof_the_owner_and_why_nothing_is_written() {
        let facts = LoopFacts {
            target: Some("2.17.1".into()),
            probe: Probe::Served {
                proof: "same-compiler".into(),
                note: "n".into(),
            },
            ..LoopFacts::default()
        };
        let writes = Serving::Writes {
            proof: Some(("same-compiler".into(), "n".into())),
        };
        assert_eq!(
            labels(&writes, &facts),
            TargetLabels {
                version: "2.17.1".into(),
                supported: "true".into(),
                proof: "same-compiler".into(),
                owner: "pipewarden".into(),
                reason: "none".into(),
            }
        );
        let held = Serving::Held {
            hold: Hold::TargetNotServed,
            why: "3.0.0".into(),
        };
        let facts = LoopFacts {
            target: None,
            probe: Probe::NotServed("unknown target".into()),
            ..LoopFacts::default()
        };
        let shown = labels(&held, &facts);
        assert_eq!(
            (
                shown.version.as_str(),
                shown.supported.as_str(),
                shown.reason.as_str()
            ),
            ("unknown", "false", "target-not-served")
        );
        assert!(degraded(&held).unwrap().contains("target-not-served"));
        assert_eq!(degraded(&writes), None);
    }
}
