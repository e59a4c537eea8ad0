//! The reconcile's steps against a scripted API server: what it writes, with which
//! resourceVersion, and what it does on a conflict, a deleted SWF, an error or a throttle.

use std::sync::Arc;
use std::time::Duration;

use http::Method;
use kube::runtime::controller::Action;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::reconcile;
use crate::cluster::policy_handle::{LoadedPolicy, PolicyHandle};
use crate::controller::context::Context;
use crate::controller::swf::SwfLoop;
use crate::controller::swf::bodies::Bodies;
use crate::controller::swf::packed::{PackedSwf, WatchedSwf};
use crate::engine::RebuildPolicy;
use crate::metrics::Label;
use crate::metrics::{Metrics, OutcomeLabel};
use crate::swf::outcome::SwfDecision;
use crate::swf::serving::{Hold, Serving};
use crate::testing::fake_api::{FakeApi, status};
use crate::testing::{data, default_policy, default_settings};

const RESYNC: Duration = Duration::from_secs(600);
const PATH: &str = "/namespaces/kubeflow-user-example-com/scheduledworkflows/dailyechox7k2p";

struct Harness {
    api: FakeApi,
    metrics: Arc<Metrics>,
    swf_loop: Arc<SwfLoop>,
}

impl Harness {
    fn new(rebuild_policy: RebuildPolicy, may_write: bool) -> Harness {
        Harness::with_budget(rebuild_policy, may_write, 6)
    }

    fn with_budget(rebuild_policy: RebuildPolicy, may_write: bool, writes: usize) -> Harness {
        Harness::with(
            rebuild_policy,
            may_write,
            writes,
            Serving::Writes { proof: None },
        )
    }

    /// A loop whose standing on the install is `standing`.
    fn standing(standing: Serving) -> Harness {
        Harness::with(RebuildPolicy::Always, true, 6, standing)
    }

    fn with(
        rebuild_policy: RebuildPolicy,
        may_write: bool,
        writes: usize,
        standing: Serving,
    ) -> Harness {
        let api = FakeApi::new();
        let metrics = Arc::new(Metrics::new());
        let settings = default_settings();
        let loaded = LoadedPolicy {
            policy: default_policy().with_settings(&settings),
            settings,
        };
        let (_writer, may_write) = watch::channel(may_write);
        let ctx = Context::new(
            api.client(),
            PolicyHandle::new(loaded, metrics.clone()),
            metrics.clone(),
            Vec::new(),
            4,
            may_write,
        );
        let (_target, target) = watch::channel(Some("2.17.0".to_owned()));
        let (_serving, serving) = watch::channel(standing);
        let (swf_loop, _events) =
            SwfLoop::new(&ctx, rebuild_policy, target, serving, RESYNC, writes);
        Harness {
            api,
            metrics,
            swf_loop: Arc::new(swf_loop),
        }
    }

    async fn reconcile(&self, swf: &Value) -> Result<Action, super::SwfError> {
        self.reconcile_packed(packed(swf, &Bodies::unlimited()))
            .await
    }

    async fn reconcile_packed(&self, packed: Arc<PackedSwf>) -> Result<Action, super::SwfError> {
        reconcile(packed, self.swf_loop.clone()).await
    }

    fn writes(&self, outcome: &str) -> u64 {
        count(&self.metrics.swf.writes, outcome)
    }

    fn decisions(&self, outcome: &str) -> u64 {
        let outcome = SwfDecision::from_label(outcome).expect("an SWF decision");
        let label = crate::metrics::SwfDecisionLabel { outcome };
        self.metrics.swf.decisions.get_or_create(&label).get()
    }

    /// The Events created, by reason.
    fn event_reasons(&self) -> Vec<String> {
        self.api
            .events()
            .iter()
            .map(|event| event["reason"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

fn count(
    family: &prometheus_client::metrics::family::Family<
        OutcomeLabel,
        prometheus_client::metrics::counter::Counter,
    >,
    outcome: &str,
) -> u64 {
    family
        .get_or_create(&OutcomeLabel {
            outcome: outcome.to_owned(),
        })
        .get()
}

/// An SWF as the API server returns it, at `rv`.
fn live(fixture: &str, rv: &str) -> Value {
    let mut swf = data(fixture);
    swf["metadata"]["uid"] = json!("6a1c0b2e-5d4f-4e3a-9b8c-7d6e5f4a3b2c");
    swf["metadata"]["resourceVersion"] = json!(rv);
    swf
}

/// `swf` as the store keeps it, its body within `bodies`.
fn packed(swf: &Value, bodies: &Arc<Bodies>) -> Arc<PackedSwf> {
    let watched: WatchedSwf = serde_json::from_str(&swf.to_string()).expect("an SWF object");
    Arc::new(PackedSwf::pack(&watched, bodies).expect("packs"))
}

/// `swf` as the store keeps it when its budget is spent: its keys alone.
fn keys_only(swf: &Value) -> Arc<PackedSwf> {
    let kept = packed(swf, &Bodies::new(0, Default::default()));
    assert_eq!(kept.packed_len(), 0);
    kept
}

/// What a metadata-only PATCH answers.
fn written(rv: &str) -> Value {
    json!({
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": {"name": "dailyechox7k2p", "namespace": "kubeflow-user-example-com",
                      "resourceVersion": rv}
    })
}

#[tokio::test]
async fn a_stale_swf_is_rebuilt_by_one_patch_preconditioned_on_the_version_it_was_planned_from() {
    let h = Harness::new(RebuildPolicy::Always, true);
    h.api.writes(PATH, written("101"));
    let action = h.reconcile(&live("swf/kfp-2.3.yaml", "100")).await.unwrap();
    h.api.assert_done();
    assert_eq!(action, Action::requeue(RESYNC));
    let patch = &h.api.received()[0].body;
    assert_eq!(patch["metadata"]["resourceVersion"], "100");
    assert!(patch["spec"]["workflow"]["spec"].is_string(), "{patch}");
    assert!(
        patch.pointer("/spec/trigger").is_none() && patch.get("status").is_none(),
        "only the workflow and stamps are written: {patch}"
    );
    assert_eq!((h.writes("ok"), h.decisions("rebuild")), (1, 1));
}

#[tokio::test]
async fn a_conflict_is_read_again_planned_again_and_written_with_the_new_version() {
    let h = Harness::new(RebuildPolicy::Always, true);
    h.api
        .write_conflicts(PATH)
        .finds(PATH, live("swf/kfp-2.3.yaml", "105"))
        .writes(PATH, written("106"));
    h.reconcile(&live("swf/kfp-2.3.yaml", "100")).await.unwrap();
    h.api.assert_done();
    let versions: Vec<Value> = h
        .api
        .received()
        .iter()
        .filter(|r| r.method == Method::PATCH)
        .map(|r| r.body["metadata"]["resourceVersion"].clone())
        .collect();
    assert_eq!(versions, [json!("100"), json!("105")]);
    assert_eq!((h.writes("conflict"), h.writes("ok")), (1, 1));
}

#[tokio::test]
async fn conflicts_every_time_end_after_the_attempt_budget_with_one_warning() {
    let h = Harness::new(RebuildPolicy::Always, true);
    for attempt in 0..super::MAX_WRITE_ATTEMPTS {
        h.api.write_conflicts(PATH);
        if attempt + 1 < super::MAX_WRITE_ATTEMPTS {
            let rv = (101 + attempt).to_string();
            h.api.finds(PATH, live("swf/kfp-2.3.yaml", &rv));
        }
    }
    let action = h.reconcile(&live("swf/kfp-2.3.yaml", "100")).await.unwrap();
    h.api.assert_done();
    assert_eq!(action, Action::requeue(RESYNC));
    assert_eq!(h.writes("conflict"), u64::from(super::MAX_WRITE_ATTEMPTS));
    assert_eq!(h.decisions("conflicts-exhausted"), 1);
    assert_eq!(h.event_reasons(), ["ConflictsExhausted"]);
}

#[tokio::test]
async fn an_swf_deleted_meanwhile_is_never_recreated() {
    let h = Harness::new(RebuildPolicy::Always, true);
    h.api.write_conflicts(PATH).finds_nothing(PATH);
    let action = h.reconcile(&live("swf/kfp-2.3.yaml", "100")).await.unwrap();
    h.api.assert_done();
    assert_eq!(action, Action::await_change());
    assert_eq!(h.decisions("gone"), 1);

    let h = Harness::new(RebuildPolicy::Always, true);
    h.api
        .expect(Method::PATCH, PATH, 404, status(404, "NotFound", "gone"));
    let action = h.reconcile(&live("swf/kfp-2.3.yaml", "100")).await.unwrap();
    h.api.assert_done();
    assert_eq!(action, Action::await_change());
    assert_eq!(h.writes("gone"), 1);
}

#[tokio::test]
async fn a_refused_write_is_reported_with_the_servers_words_and_retried_later() {
    let h = Harness::new(RebuildPolicy::Always, true);
    let refusal = status(500, "InternalError", "etcdserver: request timed out");
    h.api.expect(Method::PATCH, PATH, 500, refusal);
    let error = h
        .reconcile(&live("swf/kfp-2.3.yaml", "100"))
        .await
        .unwrap_err();
    h.api.assert_done();
    assert!(error.to_string().contains("request timed out"), "{error}");
    assert_eq!((h.writes("error"), h.decisions("write-failed")), (1, 1));
    assert_eq!(h.event_reasons(), ["WriteFailed"]);
    let note = h.api.events()[0]["note"].as_str().unwrap().to_owned();
    assert!(note.contains("etcdserver: request timed out"), "{note}");
}

#[tokio::test]
async fn a_throttled_write_slows_the_loop_and_comes_back_after_retry_after() {
    let h = Harness::new(RebuildPolicy::Always, true);
    let mut throttled = status(429, "TooManyRequests", "slow down");
    throttled["details"] = json!({"retryAfterSeconds": 3});
    h.api.expect(Method::PATCH, PATH, 429, throttled);
    let action = h.reconcile(&live("swf/kfp-2.3.yaml", "100")).await.unwrap();
    h.api.assert_done();
    assert_eq!(h.writes("throttled"), 1);
    assert_ne!(action, Action::requeue(RESYNC), "sooner than the resync");
}

#[tokio::test]
async fn nothing_is_asked_of_the_api_server_when_nothing_is_to_be_written() {
    // KFP 2.17's own compile of the same pipeline: up to date.
    let h = Harness::new(RebuildPolicy::Always, true);
    h.reconcile(&live("swf/kfp-2.17.yaml", "100"))
        .await
        .unwrap();
    h.api.assert_done();
    assert!(h.api.received().is_empty());
    assert_eq!(h.decisions("up-to-date"), 1);

    // Under disable, a stale one is reported, not written.
    let h = Harness::new(RebuildPolicy::Disable, true);
    h.reconcile(&live("swf/kfp-2.3.yaml", "100")).await.unwrap();
    h.api.assert_done();
    assert!(h.api.received().is_empty());
    assert_eq!(h.decisions("would-rebuild"), 1);

    // A replica that may not write does not even decide.
    let h = Harness::new(RebuildPolicy::Always, false);
    h.reconcile(&live("swf/kfp-2.3.yaml", "100")).await.unwrap();
    h.api.assert_done();
    assert_eq!(h.decisions("rebuild") + h.decisions("up-to-date"), 0);
}

#[tokio::test]
async fn a_fight_with_another_writer_ends_after_the_write_budget_with_one_warning() {
    // Another writer puts the 2.3 compile back after each of our writes.
    let h = Harness::with_budget(RebuildPolicy::Always, true, 2);
    h.api
        .writes(PATH, written("101"))
        .writes(PATH, written("103"));
    for rv in ["100", "102", "104", "106"] {
        h.reconcile(&live("swf/kfp-2.3.yaml", rv)).await.unwrap();
    }
    h.api.assert_done();
    assert_eq!((h.writes("ok"), h.decisions("write-loop")), (2, 2));
    assert_eq!(
        h.event_reasons(),
        ["WriteLoop"],
        "one Warning, not one per pass"
    );
}

/// On an install whose schedules KFP's API server owns, the reconcile writes nothing: an SWF
/// that still embeds a workflow is reported not adopted (one Warning), a generic one counted.
#[tokio::test]
async fn an_api_owned_install_is_never_written_and_an_inline_swf_is_reported_not_adopted() {
    let h = Harness::standing(Serving::KfpApiOwns {
        evidence: "KFP 2.18.1 in multi-user mode".into(),
    });
    h.reconcile(&live("swf/kfp-2.3.yaml", "100")).await.unwrap();
    let mut generic = live("swf/kfp-2.3.yaml", "7");
    generic["spec"]["workflow"]
        .as_object_mut()
        .unwrap()
        .remove("spec");
    h.reconcile(&generic).await.unwrap();
    h.api.assert_done();
    assert!(
        h.api.received().iter().all(|r| r.method != Method::PATCH),
        "nothing written"
    );
    assert_eq!(h.event_reasons(), ["NotAdopted"]);
    assert_eq!(
        (h.decisions("not-adopted"), h.decisions("upstream-owned")),
        (1, 1)
    );
    assert_eq!(h.writes("ok"), 0);
}

/// A held loop (a target not served) asks the API server nothing and says nothing per SWF:
/// the loop's standing is said once for all.
#[tokio::test]
async fn a_held_loop_writes_nothing_and_publishes_no_event_per_swf() {
    let h = Harness::standing(Serving::Held {
        hold: Hold::TargetNotServed,
        why: "KFP 3.0.0 is not a release this policy compiles for".into(),
    });
    h.reconcile(&live("swf/kfp-2.3.yaml", "100")).await.unwrap();
    h.api.assert_done();
    assert!(h.api.received().is_empty(), "{:?}", h.api.received().len());
    assert_eq!(h.decisions("unsupported-target"), 1);
}

/// Policy calls made so far, by the call-latency histogram's count.
fn policy_calls(h: &Harness) -> u64 {
    let text = h.metrics.encode();
    text.lines()
        .filter(|line| line.starts_with("pipewarden_policy_call_seconds_count"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// A resync at the same resourceVersion under the same inputs repeats the decision without
/// the policy; a new version asks it again.
#[tokio::test]
async fn a_resync_of_an_swf_settled_at_its_version_asks_no_policy() {
    let h = Harness::new(RebuildPolicy::Always, true);
    let current = live("swf/kfp-2.17.yaml", "100");
    h.reconcile(&current).await.unwrap();
    let calls = policy_calls(&h);
    assert!(calls > 0, "the first decision asks the policy");
    h.reconcile(&current).await.unwrap();
    assert_eq!(policy_calls(&h), calls, "the resync asked the policy");
    assert_eq!(h.decisions("up-to-date"), 2);
    assert_eq!(h.metrics.scale.swf_renders_spared.get(), 1);
    h.reconcile(&live("swf/kfp-2.17.yaml", "101"))
        .await
        .unwrap();
    assert!(policy_calls(&h) > calls, "a new version is decided afresh");
    h.api.assert_done();
}

/// A loop that never saw the SWF (a restart) finds it up to date by the write's stamp, as the
/// render would: without the stamp the render runs and agrees.
#[tokio::test]
async fn an_swf_as_its_stamped_write_left_it_needs_no_render_after_a_restart() {
    let first = Harness::new(RebuildPolicy::Always, true);
    first.api.writes(PATH, written("101"));
    let stale = live("swf/kfp-2.3.yaml", "100");
    first.reconcile(&stale).await.unwrap();
    first.api.assert_done();
    let patch = first.api.received()[0].body.clone();
    assert!(
        patch
            .pointer("/metadata/annotations/pipewarden.io~1write-digest")
            .is_some(),
        "{patch}"
    );
    let mut after = stale.clone();
    crate::swf::patch::apply_merge_patch(&mut after, &patch);
    after["metadata"]["resourceVersion"] = json!("101");

    let restarted = Harness::new(RebuildPolicy::Always, true);
    restarted.reconcile(&after).await.unwrap();
    assert_eq!(policy_calls(&restarted), 0);
    assert_eq!(restarted.decisions("up-to-date"), 1);
    assert_eq!(restarted.metrics.scale.swf_renders_spared.get(), 1);

    let mut unstamped = after.clone();
    unstamped["metadata"]["annotations"]
        .as_object_mut()
        .unwrap()
        .remove("pipewarden.io/write-digest");
    let rendered = Harness::new(RebuildPolicy::Always, true);
    rendered.reconcile(&unstamped).await.unwrap();
    assert!(policy_calls(&rendered) > 0);
    assert_eq!(rendered.decisions("up-to-date"), 1, "the render agrees");
    // Another rebuild policy asks the policy whatever the stamp says.
    let versioned = Harness::new(RebuildPolicy::OnVersionChange, true);
    versioned.reconcile(&after).await.unwrap();
    assert!(policy_calls(&versioned) > 0);
    for h in [&restarted, &rendered, &versioned] {
        h.api.assert_done();
        assert!(h.api.received().is_empty(), "nothing written");
    }
}

/// An SWF listed while the store's budget was spent is read once, then decided and written
/// as if its body had been kept; one deleted meanwhile is reported gone, not written.
#[tokio::test]
async fn an_swf_kept_without_its_body_is_read_then_decided() {
    let h = Harness::new(RebuildPolicy::Always, true);
    let stale = live("swf/kfp-2.3.yaml", "100");
    h.api
        .finds(PATH, stale.clone())
        .writes(PATH, written("101"));
    h.reconcile_packed(keys_only(&stale)).await.unwrap();
    h.api.assert_done();
    let received = h.api.received();
    let methods: Vec<&Method> = received.iter().map(|r| &r.method).collect();
    assert_eq!(methods, [&Method::GET, &Method::PATCH]);
    assert_eq!(received[1].body["metadata"]["resourceVersion"], "100");
    assert_eq!((h.writes("ok"), h.decisions("rebuild")), (1, 1));
    assert_eq!(h.metrics.scale.swf_bodies_read.get(), 1);

    let h = Harness::new(RebuildPolicy::Always, true);
    h.api.finds_nothing(PATH);
    let action = h.reconcile_packed(keys_only(&stale)).await.unwrap();
    h.api.assert_done();
    assert_eq!(action, Action::await_change());
    assert_eq!((h.api.received().len(), h.decisions("gone")), (1, 1));
}

/// An SWF decided with nothing left to do, or written, lets its body go; the resync of it at
/// that version needs none and reads nothing.
#[tokio::test]
async fn a_decided_swf_lets_its_body_go_and_its_resync_reads_nothing() {
    let h = Harness::new(RebuildPolicy::Always, true);
    let bodies = Bodies::unlimited();
    let current = packed(&live("swf/kfp-2.17.yaml", "100"), &bodies);
    assert!(bodies.held() > 0);
    h.reconcile_packed(current.clone()).await.unwrap();
    assert_eq!((current.packed_len(), bodies.held()), (0, 0));
    h.reconcile_packed(current).await.unwrap();
    assert_eq!(h.decisions("up-to-date"), 2);
    assert_eq!(h.metrics.scale.swf_bodies_read.get(), 0);
    h.api.assert_done();
    assert!(h.api.received().is_empty());

    // Changed since (another version): decided afresh, written, let go.
    h.api.writes(PATH, written("201"));
    let stale = packed(&live("swf/kfp-2.3.yaml", "200"), &bodies);
    h.reconcile_packed(stale.clone()).await.unwrap();
    h.api.assert_done();
    assert_eq!((h.writes("ok"), bodies.held()), (1, 0));
    // The watch's echo of that write comes with a body of its own, never read.
    let echo = packed(&live("swf/kfp-2.3.yaml", "201"), &bodies);
    h.reconcile_packed(echo).await.unwrap();
    assert_eq!(h.metrics.scale.swf_own_writes_seen.get(), 1);
    assert_eq!(bodies.held(), 0);
    assert_eq!(h.api.received().len(), 1, "the write alone");
}

/// A failed write keeps the body: the retry decides from it.
#[tokio::test]
async fn an_swf_left_to_do_keeps_its_body() {
    let h = Harness::new(RebuildPolicy::Always, true);
    let refusal = status(500, "InternalError", "etcdserver: request timed out");
    h.api.expect(Method::PATCH, PATH, 500, refusal);
    let bodies = Bodies::unlimited();
    let stale = packed(&live("swf/kfp-2.3.yaml", "100"), &bodies);
    let _ = h.reconcile_packed(stale.clone()).await;
    h.api.assert_done();
    assert!(stale.packed_len() > 0 && bodies.held() == stale.packed_len());
}
