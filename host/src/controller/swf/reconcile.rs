//! One SWF: plan with the policy, write the plan's spec and annotations with the
//! resourceVersion it was computed from, and on a conflict read again, plan again and retry,
//! a bounded number of times.

use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt as _;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::{self, Action};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use rand::Rng as _;
use serde_json::Value;

use super::SwfLoop;
use super::adaptive::throttled_for;
use super::decided::Settled;
use super::own_writes::Fingerprint;
use super::packed::{PackError, PackedSwf};
use super::report::{PolicyId, report};
use crate::cluster::api_error::{describe, describe_watch};
use crate::engine::{Export, RebuildPolicy};
use crate::metrics::Metrics;
use crate::swf::LiveSwf;
use crate::swf::decide::RenderTarget;
use crate::swf::outcome::SwfOutcome;
use crate::swf::patch::swf_write_patch;
use crate::swf::plan::plan_live;
use crate::swf::serving::outcome_without_policy;
use crate::swf::write_digest::{self, RenderInputs};

/// Write attempts per SWF per pass; after that, the next resync tries again.
pub const MAX_WRITE_ATTEMPTS: u32 = 4;
/// A transient policy failure (a busy node) is tried again after this rather than at the next
/// resync; other failures repeat on the same input, so the resync is soon enough.
const TRANSIENT_RETRY: Duration = Duration::from_secs(15);
const FIELD_MANAGER: &str = "pipewarden";

#[derive(Debug, thiserror::Error)]
pub enum SwfError {
    #[error("{0}")]
    Kube(#[from] kube::Error),
    #[error("object has no {0}")]
    Incomplete(&'static str),
    #[error("{0}")]
    Unpack(#[from] PackError),
}

pub async fn reconcile(packed: Arc<PackedSwf>, lp: Arc<SwfLoop>) -> Result<Action, SwfError> {
    let requeue = Action::requeue(lp.resync);
    // A replica that may not write says nothing either: the one that may will.
    if !lp.ctx.may_write() {
        return Ok(requeue);
    }
    let namespace = packed
        .namespace()
        .ok_or(SwfError::Incomplete("namespace"))?;
    let name = packed.name_any();
    let fingerprint = lp.fingerprint();
    let rv = packed.resource_version().unwrap_or_default();
    if lp.own_writes.is_echo(&namespace, &name, rv, fingerprint) {
        // Settled when written: its body is never read.
        packed.release();
        lp.ctx.metrics.scale.swf_own_writes_seen.inc();
        return Ok(requeue);
    }
    let key = format!("{namespace}/{name}");
    if waits_for_undecided(&lp, &key, rv, fingerprint) {
        lp.ctx.metrics.scale.swf_resyncs_deferred.inc();
        return Ok(requeue);
    }
    if let Some(settled) = lp.decided.settled(&key, rv, fingerprint) {
        report_settled(&lp, &packed, &key, settled).await;
        return Ok(requeue);
    }
    let mut permit = lp.permits.acquire().await;
    // Reports name the SWF by its keys alone; the policy reads the whole object.
    let swf = DynamicObject {
        types: None,
        metadata: packed.metadata.clone(),
        data: Value::Null,
    };
    let api: Api<DynamicObject> =
        Api::namespaced_with(lp.ctx.client.clone(), &namespace, &lp.resource);
    // Without its body (`bodies`), the SWF is read as it is now.
    let fresh = match packed.unpack()? {
        Some(live) => Some(Arc::new(live)),
        None => {
            lp.ctx.metrics.scale.swf_bodies_read.inc();
            read(&api, &name).await?
        }
    };
    let Some(mut live) = fresh else {
        return Ok(gone(&lp, &key, &swf, &policy_in_force(&lp)).await);
    };
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    };
    let mut attempts = 0;
    loop {
        // Where the loop writes nothing, the policy is not asked (`swf::serving`).
        let standing = lp.serving.borrow().clone();
        let (planned, policy) = match outcome_without_policy(&standing, &live.json) {
            Some(outcome) => (outcome, policy_in_force(&lp)),
            None => match spared_render(&lp, &live) {
                Some(spared) => spared,
                None => plan_for(&lp, &live).await,
            },
        };
        decided(&lp, &packed, &key, &live, fingerprint, &planned);
        let Some(desired) = planned.desired() else {
            let again = match &planned {
                SwfOutcome::Failed { kind, .. } if kind.is_transient() => {
                    Action::requeue(lp.resync.min(TRANSIENT_RETRY))
                }
                _ => requeue,
            };
            report(&lp, &swf, &policy, &planned).await;
            return Ok(again);
        };
        let resource_version = live
            .value
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .ok_or(SwfError::Incomplete("resourceVersion"))?;
        let mut patch = swf_write_patch(&live.value, desired, resource_version);
        // Only a render is the policy's own output; a restored record is not.
        if let (SwfOutcome::Rebuild { .. }, Some(inputs)) = (&planned, &policy.inputs) {
            write_digest::stamp(&live.value, &mut patch, inputs);
        }
        // Leadership may have moved while the policy was deciding.
        if !lp.ctx.may_write() {
            return Ok(requeue);
        }
        if !lp.write_budget.allows(&key, std::time::Instant::now()) {
            let outcome = SwfOutcome::WriteLoop {
                writes: lp.write_budget.limit(),
                window: lp.write_budget.window(),
            };
            report(&lp, &swf, &policy, &outcome).await;
            return Ok(requeue);
        }
        attempts += 1;
        // Only the written resourceVersion is needed back: asking for metadata alone spares
        // the API server encoding, and this loop decoding, the whole object on every write.
        let written = api
            .patch_metadata(&name, &params, &Patch::Merge(&patch))
            .await;
        match written {
            Ok(written) => {
                count_write(&lp, "ok");
                lp.write_budget.record(&key, std::time::Instant::now());
                if let Some(rv) = written.metadata.resource_version.as_deref() {
                    lp.own_writes.remember(&namespace, &name, rv, fingerprint);
                    // The render of a policy's own output changes nothing.
                    let settled = matches!(planned, SwfOutcome::Rebuild { .. });
                    let settled = settled.then_some(Settled::UpToDate);
                    lp.decided.record(&key, rv, fingerprint, settled);
                }
                // The version it was read at is gone; the watch brings the written one.
                packed.release();
                report(&lp, &swf, &policy, &planned).await;
                return Ok(requeue);
            }
            Err(kube::Error::Api(status)) if status.is_conflict() => {
                count_write(&lp, "conflict");
                if attempts >= MAX_WRITE_ATTEMPTS {
                    lp.ctx.metrics.swf.conflicts_exhausted.inc();
                    let outcome = SwfOutcome::ConflictsExhausted {
                        attempts,
                        resync: lp.resync,
                    };
                    report(&lp, &swf, &policy, &outcome).await;
                    return Ok(requeue);
                }
                tokio::time::sleep(conflict_backoff(attempts)).await;
                match read(&api, &name).await? {
                    Some(fresh) => live = fresh,
                    None => return Ok(gone(&lp, &key, &swf, &policy).await),
                }
            }
            Err(kube::Error::Api(status)) if status.is_not_found() => {
                count_write(&lp, "gone");
                return Ok(gone(&lp, &key, &swf, &policy).await);
            }
            Err(error) if throttled_for(&error).is_some() => {
                // The API server sheds load: fewer at once, and this SWF again after Retry-After.
                let retry_after = throttled_for(&error).unwrap_or(TRANSIENT_RETRY);
                count_write(&lp, "throttled");
                lp.ctx.metrics.scale.swf_throttled.inc();
                permit.throttled(retry_after);
                return Ok(Action::requeue(retry_after));
            }
            Err(error) => {
                count_write(&lp, "error");
                // The API server's own sentence (e.g. who is forbidden which verb), not a dump.
                let why = describe(&error, &lp.ctx.api_server);
                report(&lp, &swf, &policy, &SwfOutcome::WriteFailed { why }).await;
                return Err(error.into());
            }
        }
    }
}

/// A due resync of an SWF decided under what is in force, while others are not decided yet.
fn waits_for_undecided(lp: &SwfLoop, key: &str, rv: &str, fingerprint: Fingerprint) -> bool {
    if !lp.decided.is_repeat(key, rv, fingerprint) {
        return false;
    }
    let Some(stores) = lp.stores.get() else {
        return false;
    };
    let known = stores.iter().map(|store| store.len()).sum();
    let present = |key: &str| {
        let (namespace, name) = key.split_once('/').unwrap_or_default();
        let object = ObjectRef::new_with(name, lp.resource.clone()).within(namespace);
        stores.iter().any(|store| store.get(&object).is_some())
    };
    let decided = lp.decided.count(fingerprint, known, present);
    super::decided::waits(true, known, decided)
}

/// The SWF as the API server has it now; None when it is gone (never recreated: an SWF
/// deleted meanwhile is left deleted).
async fn read(api: &Api<DynamicObject>, name: &str) -> Result<Option<Arc<LiveSwf>>, SwfError> {
    match api.get_opt(name).await? {
        Some(fresh) => Ok(Some(Arc::new(LiveSwf::from_value(as_value(&fresh)?)))),
        None => Ok(None),
    }
}

/// Reports an SWF deleted before it was written; its next event is its deletion.
async fn gone(lp: &SwfLoop, key: &str, swf: &DynamicObject, policy: &PolicyId) -> Action {
    lp.decided.forget(key);
    report(lp, swf, policy, &SwfOutcome::Gone).await;
    Action::await_change()
}

/// Records the decision on `live` (and tells the test hook). One with nothing left to do
/// needs no body at the next resync: the store lets it go.
fn decided(
    lp: &SwfLoop,
    packed: &PackedSwf,
    key: &str,
    live: &LiveSwf,
    fingerprint: Fingerprint,
    planned: &SwfOutcome,
) {
    let rv = live
        .value
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let settled = match planned {
        SwfOutcome::UpToDate { .. } => Some(Settled::UpToDate),
        SwfOutcome::Skipped { .. } => Some(Settled::Skipped),
        _ => None,
    };
    if settled.is_some() {
        packed.release();
    }
    lp.decided.record(key, rv, fingerprint, settled);
    if let Some(decisions) = &lp.decisions {
        let _ = decisions.send(key.to_owned());
    }
}

/// A resync of an SWF settled at this version under the inputs in force: the same decision
/// again, without asking the policy.
async fn report_settled(lp: &SwfLoop, packed: &PackedSwf, key: &str, settled: Settled) {
    lp.ctx.metrics.scale.swf_renders_spared.inc();
    let swf = DynamicObject {
        types: None,
        metadata: packed.metadata.clone(),
        data: Value::Null,
    };
    let reason = "unchanged since decided at this resourceVersion under the policy, target and \
                  settings in force"
        .to_owned();
    let outcome = match settled {
        Settled::UpToDate => SwfOutcome::UpToDate { reason },
        Settled::Skipped => SwfOutcome::Skipped { reason },
    };
    report(lp, &swf, &policy_in_force(lp), &outcome).await;
    if let Some(decisions) = &lp.decisions {
        let _ = decisions.send(key.to_owned());
    }
}

/// The policy in force and the target, for reports made without a decision.
fn policy_in_force(lp: &SwfLoop) -> PolicyId {
    let loaded = lp.ctx.policy.current();
    PolicyId {
        label: loaded.policy.label().to_owned(),
        digest: loaded.policy.digest().to_owned(),
        target: lp.target.borrow().clone(),
        // Nothing is written on a report made without a decision.
        inputs: None,
    }
}

/// Under `always`, an SWF still as this loop's stamped write left it under the inputs in
/// force is up to date without a render: the render of a policy's own output changes nothing.
fn spared_render(lp: &SwfLoop, live: &LiveSwf) -> Option<(SwfOutcome, PolicyId)> {
    if lp.rebuild_policy != RebuildPolicy::Always {
        return None;
    }
    let loaded = lp.ctx.policy.current();
    let target = lp.target.borrow().clone();
    let inputs = RenderInputs::of(loaded.policy.digest(), target.as_deref(), &loaded.settings);
    if !write_digest::unchanged_since_written(&live.value, &inputs) {
        return None;
    }
    lp.ctx.metrics.scale.swf_renders_spared.inc();
    let reason = "unchanged since this policy rebuilt it for this target and settings \
                  (pipewarden.io/write-digest): no render needed"
        .to_owned();
    Some((SwfOutcome::UpToDate { reason }, policy_in_force(lp)))
}

/// Plans on the blocking pool; returns the plan and the policy that made it (label, digest).
async fn plan_for(lp: &SwfLoop, live: &Arc<LiveSwf>) -> (SwfOutcome, PolicyId) {
    let live = live.clone();
    let rebuild_policy = lp.rebuild_policy;
    let target_version = lp.target.borrow().clone();
    let made = lp
        .ctx
        .policy
        .call(Export::RenderSwf, move |loaded| {
            let target = RenderTarget {
                rebuild_policy,
                target_version: target_version.clone(),
                settings: loaded.settings.clone(),
            };
            let policy = PolicyId {
                label: loaded.policy.label().to_owned(),
                digest: loaded.policy.digest().to_owned(),
                inputs: Some(RenderInputs::of(
                    loaded.policy.digest(),
                    target_version.as_deref(),
                    &loaded.settings,
                )),
                target: target_version,
            };
            Ok((plan_live(&loaded.policy, &live, &target), policy))
        })
        .await;
    // `plan` turns policy errors into a plan; only a failed host task lands here.
    made.unwrap_or_else(|error| {
        let failed = SwfOutcome::Failed {
            error: error.to_string(),
            export: error.export(),
            kind: error.kind(),
        };
        (failed, PolicyId::default())
    })
}

/// The object as the policy sees it; managed fields are bookkeeping no policy needs.
fn as_value(swf: &DynamicObject) -> Result<Value, SwfError> {
    let mut value =
        serde_json::to_value(swf).map_err(|e| SwfError::Kube(kube::Error::SerdeError(e)))?;
    if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    Ok(value)
}

fn count_write(lp: &SwfLoop, outcome: &str) {
    Metrics::count(&lp.ctx.metrics.swf.writes, outcome);
}

/// Jittered exponential backoff: about 25, 50, 100 ms ... capped at 1 s.
fn conflict_backoff(attempt: u32) -> Duration {
    let base = Duration::from_millis(25).saturating_mul(1 << attempt.min(6)) / 2;
    base.min(Duration::from_secs(1))
        .mul_f64(rand::rng().random_range(0.5..1.5))
}

/// An API error the reconcile could not handle (not a conflict): try again later.
pub fn error_policy(_swf: Arc<PackedSwf>, error: &SwfError, lp: Arc<SwfLoop>) -> Action {
    tracing::debug!(%error, "SWF requeued after an error");
    Action::requeue(lp.resync.min(Duration::from_secs(30)))
}

type RunResult =
    Result<(ObjectRef<PackedSwf>, Action), controller::Error<SwfError, watcher::Error>>;

/// Logs what the controller's run stream reports as failed; successes were reported already.
/// `server` is the API server's URL, for connection errors.
pub fn log_failure(result: RunResult, server: &str) {
    match result {
        Ok(_) => {}
        Err(controller::Error::ReconcilerFailed(error, object)) => {
            let error = match &error {
                SwfError::Kube(e) => describe(e, server),
                other => other.to_string(),
            };
            tracing::warn!(object = %object, error, "SWF reconcile failed; retrying later");
        }
        Err(controller::Error::ObjectNotFound(object)) => {
            tracing::debug!(object = %object, "SWF gone before its reconcile");
        }
        // Logged, counted and told to readiness where the watch runs (`watch_health`).
        Err(controller::Error::QueueError(error)) => {
            tracing::debug!(error = describe_watch(&error, server), "SWF watch trouble");
        }
        Err(error) => tracing::warn!(%error, "SWF loop trouble"),
    }
}

#[cfg(test)]
mod tests;
