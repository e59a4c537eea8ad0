//! One completion's action path against a scripted API server and a loopback receiver: the
//! confirming read, the claim, the Event, the delivery and the mark, and what each fault at
//! each step leads to.

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::time::Duration;

use http::Method;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};

use super::action::{Origin, submit};
use crate::cluster::policy_handle::{LoadedPolicy, PolicyHandle};
use crate::controller::context::Context;
use crate::controller::exit_gate::delivery::Delivery;
use crate::controller::exit_gate::gate::Claims;
use crate::controller::exit_gate::gate::{Gate, Limits, Queues, Task};
use crate::controller::exit_gate::sink::webhook::Webhook;
use crate::controller::exit_gate::tracker::Tracker;
use crate::exit::TombstoneCache;
use crate::exit::claim::{CLAIM_ANNOTATION, Claim, Claimant, MarkKey};
use crate::exit::event::WorkflowFacts;
use crate::exit::notification::NOTIFICATION_ANNOTATION;
use crate::exit::outcome::Outcome;
use crate::exit::tombstone::MonotonicClock;
use crate::metrics::Metrics;
use crate::testing::default_policy;
use crate::testing::fake_api::{FakeApi, status};

mod rerun;
mod settled_marks;

const UID: &str = "7f0c7c1e-4d8a-4a63-9b1f-1c2d3e4f5a61";
const PATH: &str = "/namespaces/team-a/workflows/nightly-etl";
const STARTED: &str = "2026-08-04T01:00:00Z";

/// A receiver that answers every POST with `status`, counting them and keeping their bodies.
struct Receiver {
    url: String,
    posts: Arc<AtomicUsize>,
    status: Arc<AtomicU16>,
    bodies: Arc<std::sync::Mutex<Vec<bytes::Bytes>>>,
}

impl Receiver {
    async fn start(status: u16) -> Receiver {
        let posts = Arc::new(AtomicUsize::new(0));
        let answer = Arc::new(AtomicU16::new(status));
        let bodies = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (counted, answered, kept) = (posts.clone(), answer.clone(), bodies.clone());
        let app = axum::Router::new().route(
            "/",
            axum::routing::post(move |body: bytes::Bytes| {
                counted.fetch_add(1, Ordering::SeqCst);
                kept.lock().unwrap().push(body);
                let code = answered.load(Ordering::SeqCst);
                async move { http::StatusCode::from_u16(code).unwrap() }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver {
            url,
            posts,
            status: answer,
            bodies,
        }
    }

    fn posts(&self) -> usize {
        self.posts.load(Ordering::SeqCst)
    }
}

struct Harness {
    api: FakeApi,
    gate: Arc<Gate>,
    tasks: mpsc::UnboundedReceiver<Task>,
    metrics: Arc<Metrics>,
    receiver: Receiver,
}

fn me() -> Claimant {
    Claimant {
        holder: "replica-a".into(),
        epoch: 1,
    }
}

fn other() -> Claimant {
    Claimant {
        holder: "replica-b".into(),
        epoch: 7,
    }
}

impl Harness {
    async fn new(attempts: u32) -> Harness {
        Harness::with_key(attempts, MarkKey::none()).await
    }

    async fn with_key(attempts: u32, key: MarkKey) -> Harness {
        Harness::build(attempts, key, false).await
    }

    /// `--exit-mode=observe`.
    async fn observing() -> Harness {
        Harness::build(3, MarkKey::none(), true).await
    }

    async fn build(attempts: u32, key: MarkKey, observe: bool) -> Harness {
        let api = FakeApi::new();
        let metrics = Arc::new(Metrics::new());
        let loaded = LoadedPolicy {
            policy: default_policy(),
            settings: "{}".into(),
        };
        let (_writer, may_write) = watch::channel(true);
        let ctx = Context::new(
            api.client(),
            PolicyHandle::new(loaded, metrics.clone()),
            metrics.clone(),
            Vec::new(),
            4,
            may_write,
        );
        let receiver = Receiver::start(200).await;
        let webhook = Webhook::new(&receiver.url, &Default::default()).unwrap();
        let (delivery, pools) = Delivery::new(Arc::new(webhook), 4, 16, metrics.clone());
        tokio::spawn(pools.run());
        let limits = Limits {
            observe,
            claim_ttl: Duration::from_secs(70),
            attempts,
            retry_delay: Duration::from_millis(10),
            retry_max_delay: Duration::from_millis(40),
            catch_up: Duration::from_secs(3600),
            give_up_after: Duration::from_secs(86_400),
            send_timeout: Duration::from_secs(2),
            event_source: "/pipewarden/test".into(),
        };
        let (delayed, _delayed) = mpsc::channel(16);
        let (tasks_tx, tasks) = mpsc::unbounded_channel();
        let tombstones = TombstoneCache::new(
            Duration::from_secs(1300),
            1000,
            Arc::new(MonotonicClock::new()),
        );
        let gate = Gate::new(
            ctx,
            tombstones,
            Tracker::new(Duration::from_secs(1300), 1000),
            Some(delivery),
            limits,
            Claims {
                claimant: me(),
                key,
            },
            Queues {
                delayed,
                tasks: tasks_tx,
            },
        );
        Harness {
            api,
            gate: Arc::new(gate),
            tasks,
            metrics,
            receiver,
        }
    }

    /// Hands the completion `seen` to the action path and waits for its outcome.
    async fn complete(&mut self, seen: &Value) -> Outcome {
        let facts = WorkflowFacts::read(seen).expect("a workflow");
        let (tell, hear) = oneshot::channel();
        if let Some(known) = submit(&self.gate, facts, Origin::Seen, Some(tell)).await {
            return known;
        }
        let task = self.tasks.recv().await.expect("a task was started");
        tokio::time::timeout(Duration::from_secs(20), task)
            .await
            .expect("the action path ends");
        hear.await.expect("an outcome")
    }

    /// Observe mode's path for the completion `seen`.
    async fn observe(&self, seen: &Value) -> Outcome {
        let facts = WorkflowFacts::read(seen).expect("a workflow");
        crate::controller::exit_gate::observe::observe(&self.gate, &facts, Origin::Seen).await
    }

    fn patches(&self) -> Vec<Value> {
        self.api
            .received()
            .into_iter()
            .filter(|r| r.method == Method::PATCH)
            .map(|r| r.body)
            .collect()
    }

    fn event_reasons(&self) -> Vec<String> {
        self.api
            .events()
            .iter()
            .map(|e| e["reason"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

fn finished_now() -> String {
    Timestamp::now().to_string()
}

/// The workflow as the API server has it: `phase` at `rv`, optionally with a mark.
fn workflow(rv: &str, phase: &str, finished_at: &str, mark: Option<&str>) -> Value {
    let mut annotations = serde_json::Map::new();
    if let Some(mark) = mark {
        annotations.insert(NOTIFICATION_ANNOTATION.into(), json!(mark));
    }
    json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "nightly-etl", "namespace": "team-a", "uid": UID,
                      "resourceVersion": rv, "annotations": annotations},
        "spec": {"entrypoint": "main", "onExit": "notify"},
        "status": {"phase": phase, "startedAt": STARTED, "finishedAt": finished_at}
    })
}

/// The script of a completion delivered from its confirming read on: the read finds `live`,
/// then the claim and the sent mark are written at the next two resourceVersions.
fn confirmed_claimed_marked(api: &FakeApi, live: Value) {
    let rv: u64 = live["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .expect("a numeric resourceVersion");
    let phase = live["status"]["phase"]
        .as_str()
        .expect("a phase")
        .to_owned();
    let at = live["status"]["finishedAt"]
        .as_str()
        .expect("finished")
        .to_owned();
    let after = |n: u64| workflow(&(rv + n).to_string(), &phase, &at, None);
    api.finds(PATH, live)
        .writes(PATH, after(1))
        .writes(PATH, after(2));
}

fn key(phase: &str, finished_at: &str) -> String {
    format!("{UID}/{STARTED}/{finished_at}/{phase}")
}

/// `workflow` with a 70 s claim by `by` that names `seconds` from now as its end (negative:
/// past), by the clock of whoever wrote it.
fn claimed_by(workflow: Value, by: &Claimant, seconds: i64, key: &MarkKey) -> Value {
    claimed_for(workflow, by, 70 - seconds, 70, key)
}

/// `workflow` with a claim by `by` written `ago` seconds before now by its writer's clock,
/// holding for `ttl` seconds.
fn claimed_for(mut workflow: Value, by: &Claimant, ago: i64, ttl: u64, key: &MarkKey) -> Value {
    let completion = WorkflowFacts::read(&workflow).unwrap().completion_key();
    let at = Timestamp::now() - SignedDuration::from_secs(ago);
    let claim = Claim::new(by, at, Duration::from_secs(ttl), &completion, key);
    workflow["metadata"]["annotations"][CLAIM_ANNOTATION] = json!(claim.annotation_value());
    workflow
}

/// The claim a patch writes, if any.
fn claim_of(patch: &Value) -> Option<Claim> {
    patch["metadata"]["annotations"][CLAIM_ANNOTATION]
        .as_str()
        .and_then(Claim::parse)
}

fn mark_of(patch: &Value) -> (&str, &str) {
    (
        patch["metadata"]["annotations"][NOTIFICATION_ANNOTATION]
            .as_str()
            .unwrap_or_default(),
        patch["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default(),
    )
}

#[tokio::test]
async fn a_completion_is_confirmed_claimed_recorded_delivered_once_and_marked_sent() {
    let mut h = Harness::new(3).await;
    let at = finished_now();
    let live = workflow("10", "Succeeded", &at, None);
    confirmed_claimed_marked(&h.api, live.clone());
    assert_eq!(h.complete(&live).await, Outcome::Sent);
    h.api.assert_done();
    let key = key("Succeeded", &at);
    let patches = h.patches();
    assert_eq!(
        mark_of(&patches[0]),
        (format!("pending/{key}").as_str(), "10")
    );
    assert_eq!(mark_of(&patches[1]), (format!("sent/{key}").as_str(), "11"));
    assert_eq!(h.receiver.posts(), 1);
    assert_eq!(h.event_reasons(), ["ExitNotification"]);
}

#[tokio::test]
async fn a_claim_that_meets_a_conflict_reads_again_and_claims_at_the_new_version() {
    let mut h = Harness::new(3).await;
    let at = finished_now();
    let live = workflow("10", "Succeeded", &at, None);
    h.api.finds(PATH, live.clone()).write_conflicts(PATH);
    confirmed_claimed_marked(&h.api, workflow("13", "Succeeded", &at, None));
    assert_eq!(h.complete(&live).await, Outcome::Sent);
    h.api.assert_done();
    let versions: Vec<String> = h
        .patches()
        .iter()
        .map(|p| mark_of(p).1.to_owned())
        .collect();
    assert_eq!(versions, ["10", "13", "14"]);
    assert_eq!(h.receiver.posts(), 1);
}

#[tokio::test]
async fn a_failed_read_costs_an_attempt_and_the_next_attempt_delivers() {
    let mut h = Harness::new(3).await;
    let at = finished_now();
    let live = workflow("10", "Failed", &at, None);
    h.api
        .expect(
            Method::GET,
            PATH,
            503,
            status(503, "ServiceUnavailable", "busy"),
        )
        .finds(PATH, live.clone())
        .writes(PATH, workflow("11", "Failed", &at, None))
        .writes(PATH, workflow("12", "Failed", &at, None));
    assert_eq!(h.complete(&live).await, Outcome::Sent);
    h.api.assert_done();
    assert_eq!(h.receiver.posts(), 1);
    let failures = h
        .metrics
        .exit
        .attempt_failures
        .get_or_create(&crate::metrics::StepLabel {
            step: crate::exit::decision::Step::Read,
        })
        .get();
    assert_eq!(failures, 1);
    assert_eq!(h.event_reasons(), ["ExitNotification"], "a warning: Failed");
}

#[tokio::test]
async fn a_stale_event_the_api_server_does_not_confirm_writes_and_sends_nothing() {
    let mut h = Harness::new(3).await;
    let at = finished_now();
    let seen = workflow("9", "Error", &at, None);
    // The live workflow is running again (a retry): the event's completion is not confirmed.
    let mut running = workflow("20", "Running", "", None);
    running["status"]["finishedAt"] = Value::Null;
    h.api.finds(PATH, running);
    assert_eq!(h.complete(&seen).await, Outcome::Unconfirmed);
    h.api.assert_done();
    assert!(h.patches().is_empty() && h.api.events().is_empty());
    assert_eq!(h.receiver.posts(), 0);
}

#[tokio::test]
async fn a_completion_already_marked_sent_is_not_sent_again() {
    let mut h = Harness::new(3).await;
    let at = finished_now();
    let seen = workflow("10", "Succeeded", &at, None);
    let mark = format!("sent/{}", key("Succeeded", &at));
    h.api
        .finds(PATH, workflow("11", "Succeeded", &at, Some(&mark)));
    assert_eq!(h.complete(&seen).await, Outcome::AlreadyNotified);
    h.api.assert_done();
    assert_eq!(h.receiver.posts(), 0);
    // Settled: a later event of the same completion is answered from memory, with no read.
    assert_eq!(h.complete(&seen).await, Outcome::AlreadyNotified);
    h.api.assert_done();
}

#[tokio::test]
async fn a_workflow_gone_without_a_delete_event_is_left_alone_after_three_reads() {
    let mut h = Harness::new(5).await;
    let at = finished_now();
    let seen = workflow("10", "Succeeded", &at, None);
    for _ in 0..3 {
        h.api.finds_nothing(PATH);
    }
    assert_eq!(h.complete(&seen).await, Outcome::Gone);
    h.api.assert_done();
    assert_eq!(h.receiver.posts(), 0);
}

#[tokio::test]
async fn a_completion_older_than_the_catch_up_window_is_reported_and_marked_skipped() {
    let mut h = Harness::new(3).await;
    let at = (Timestamp::now() - SignedDuration::from_hours(3)).to_string();
    let live = workflow("10", "Succeeded", &at, None);
    h.api
        .finds(PATH, live.clone())
        .writes(PATH, workflow("11", "Succeeded", &at, None));
    assert_eq!(h.complete(&live).await, Outcome::SkippedOld);
    h.api.assert_done();
    let skipped = format!("skipped/{}", key("Succeeded", &at));
    assert_eq!(mark_of(&h.patches()[0]).0, skipped);
    assert_eq!(h.event_reasons(), ["ExitNotificationSkipped"]);
    assert_eq!(h.receiver.posts(), 0);
}

#[tokio::test]
async fn a_receiver_that_keeps_failing_is_given_up_with_a_failed_mark_and_a_warning() {
    let mut h = Harness::new(2).await;
    h.receiver.status.store(503, Ordering::SeqCst);
    let at = finished_now();
    let live = workflow("10", "Succeeded", &at, None);
    let key = key("Succeeded", &at);
    let pending = format!("pending/{key}");
    let mine = |rv: &str| {
        claimed_by(
            workflow(rv, "Succeeded", &at, Some(&pending)),
            &me(),
            60,
            &MarkKey::none(),
        )
    };
    h.api
        .finds(PATH, live.clone())
        .writes(PATH, mine("11"))
        // The second attempt confirms the claim is still this replica's (fresh: not renewed).
        .finds(PATH, mine("11"))
        // Giving up: the mark is written where the workflow still shows the claim.
        .finds(PATH, mine("11"))
        .writes(PATH, workflow("12", "Succeeded", &at, None));
    assert_eq!(h.complete(&live).await, Outcome::GaveUp);
    h.api.assert_done();
    assert_eq!(h.receiver.posts(), 2, "one POST per attempt");
    let patches = h.patches();
    assert!(claim_of(&patches[0]).is_some_and(|c| c.is_by(&me())));
    assert_eq!(
        mark_of(&patches[1]),
        (format!("failed/{key}").as_str(), "11")
    );
    assert!(
        claim_of(&patches[1]).is_none(),
        "without a mark key, a settled mark drops the claim"
    );
    assert_eq!(
        h.event_reasons(),
        ["ExitNotification", "ExitNotificationFailed"]
    );
    assert_eq!(h.metrics.exit.gave_up.get(), 1);
}

#[tokio::test]
async fn a_mark_that_meets_a_conflict_is_written_again_while_the_claim_is_ours() {
    let mut h = Harness::new(3).await;
    let at = finished_now();
    let live = workflow("10", "Succeeded", &at, None);
    let key = key("Succeeded", &at);
    let pending = format!("pending/{key}");
    h.api
        .finds(PATH, live.clone())
        .writes(PATH, workflow("11", "Succeeded", &at, Some(&pending)))
        .write_conflicts(PATH)
        .finds(
            PATH,
            claimed_by(
                workflow("16", "Succeeded", &at, Some(&pending)),
                &me(),
                60,
                &MarkKey::none(),
            ),
        )
        .writes(PATH, workflow("17", "Succeeded", &at, None));
    assert_eq!(h.complete(&live).await, Outcome::Sent);
    h.api.assert_done();
    let marks: Vec<(String, String)> = h
        .patches()
        .iter()
        .map(|p| {
            let (mark, rv) = mark_of(p);
            (mark.to_owned(), rv.to_owned())
        })
        .collect();
    let sent = format!("sent/{key}");
    assert_eq!(
        marks,
        [
            (pending.clone(), "10".into()),
            (sent.clone(), "11".into()),
            (sent, "16".into())
        ]
    );
    assert_eq!(h.receiver.posts(), 1, "delivered once");
}

#[tokio::test]
async fn a_claim_lost_to_another_replica_is_left_to_it_and_not_delivered() {
    let mut h = Harness::new(3).await;
    let at = finished_now();
    let live = workflow("10", "Succeeded", &at, None);
    let pending = format!("pending/{}", key("Succeeded", &at));
    let theirs = claimed_by(
        workflow("11", "Succeeded", &at, Some(&pending)),
        &other(),
        60,
        &MarkKey::none(),
    );
    h.api
        .finds(PATH, live.clone())
        .write_conflicts(PATH)
        .finds(PATH, theirs);
    assert_eq!(h.complete(&live).await, Outcome::ClaimedElsewhere);
    h.api.assert_done();
    assert_eq!(h.receiver.posts(), 0);
    assert!(h.api.events().is_empty());
}

#[tokio::test]
async fn a_claim_whose_holder_is_gone_is_taken_over_once_seen_unchanged_for_its_ttl() {
    let mut h = Harness::new(3).await;
    let at = finished_now();
    let pending = format!("pending/{}", key("Succeeded", &at));
    // By the clocks, expired a minute ago; but first seen now: it holds for its TTL from here.
    let expired = claimed_for(
        workflow("20", "Succeeded", &at, Some(&pending)),
        &other(),
        61,
        1,
        &MarkKey::none(),
    );
    h.api.finds(PATH, expired.clone());
    assert_eq!(h.complete(&expired).await, Outcome::ClaimedElsewhere);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    confirmed_claimed_marked(&h.api, expired.clone());
    assert_eq!(h.complete(&expired).await, Outcome::Sent);
    h.api.assert_done();
    let patches = h.patches();
    assert!(
        claim_of(&patches[0]).is_some_and(|c| c.is_by(&me())),
        "claimed anew"
    );
    assert_eq!(h.receiver.posts(), 1);

    // Still fresh: the other replica's to deliver.
    let mut h = Harness::new(3).await;
    let fresh = claimed_by(
        workflow("20", "Succeeded", &at, Some(&pending)),
        &other(),
        30,
        &MarkKey::none(),
    );
    h.api.finds(PATH, fresh.clone());
    assert_eq!(h.complete(&fresh).await, Outcome::ClaimedElsewhere);
    h.api.assert_done();
    assert_eq!(h.receiver.posts(), 0);
}

#[tokio::test]
async fn with_a_mark_key_a_pending_mark_the_controller_did_not_sign_is_not_a_claim() {
    let key = MarkKey::new(b"the replicas' shared mark key");
    let mut h = Harness::with_key(3, key.clone()).await;
    // Forged by hand on a workflow that finished three hours ago: judged as unclaimed, so the
    // catch-up window applies and nothing is sent.
    let at = (Timestamp::now() - SignedDuration::from_hours(3)).to_string();
    let pending = format!("pending/{}", self::key("Succeeded", &at));
    let forged = claimed_by(
        workflow("10", "Succeeded", &at, Some(&pending)),
        &other(),
        3600,
        &MarkKey::none(),
    );
    h.api
        .finds(PATH, forged.clone())
        .writes(PATH, workflow("11", "Succeeded", &at, None));
    assert_eq!(h.complete(&forged).await, Outcome::SkippedOld);
    h.api.assert_done();
    assert_eq!(h.receiver.posts(), 0);

    // One the other replica signed holds.
    let mut h = Harness::with_key(3, key.clone()).await;
    let at = finished_now();
    let pending = format!("pending/{}", self::key("Succeeded", &at));
    let signed = claimed_by(
        workflow("10", "Succeeded", &at, Some(&pending)),
        &other(),
        60,
        &key,
    );
    h.api.finds(PATH, signed.clone());
    assert_eq!(h.complete(&signed).await, Outcome::ClaimedElsewhere);
    h.api.assert_done();
}

/// A namespace editor forges the label and mark (Workflows have no status subresource): the
/// sweep decides like the watch path, so neither a workflow without an exit handler nor one
/// that finished before the catch-up window is notified.
#[tokio::test]
async fn forged_pending_marks_found_by_the_sweep_send_nothing() {
    let mut h = Harness::new(3).await;
    let recent = finished_now();
    let old = (Timestamp::now() - SignedDuration::from_hours(3)).to_string();
    let forged = |name: &str, finished: &str, exit_handler: bool| {
        let mut w = workflow("30", "Succeeded", finished, None);
        w["metadata"]["name"] = json!(name);
        w["metadata"]["uid"] = json!(format!("{UID}-{name}"));
        if !exit_handler {
            w["spec"].as_object_mut().unwrap().remove("onExit");
        }
        let completion = WorkflowFacts::read(&w).unwrap().completion_key();
        w["metadata"]["annotations"][NOTIFICATION_ANNOTATION] =
            json!(format!("pending/{completion}"));
        w["metadata"]["labels"] = json!({"pipewarden.io/exit-notification": "pending"});
        w
    };
    let list = json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowList", "metadata": {},
        "items": [forged("no-handler", &recent, false), forged("three-hours-ago", &old, true)]
    });
    let old_path = "/namespaces/team-a/workflows/three-hours-ago";
    h.api
        .finds("/workflows", list)
        // The old one is taken up as the watch path would, and found too old.
        .finds(old_path, forged("three-hours-ago", &old, true))
        .writes(old_path, workflow("31", "Succeeded", &old, None));
    super::sweep::sweep_once(&h.gate).await;
    while let Ok(task) = h.tasks.try_recv() {
        tokio::time::timeout(Duration::from_secs(20), task)
            .await
            .unwrap();
    }
    h.api.assert_done();
    assert_eq!(h.receiver.posts(), 0, "nothing sent for forged marks");
    let skipped = mark_of(&h.patches()[0]).0.to_owned();
    assert!(skipped.starts_with("skipped/"), "{skipped}");
}

/// This process's own claim is judged by its own clock from when it wrote it: a claim that
/// names an end 10 s away (the API server's copy, or a clock that disagrees) is not renewed
/// while this process knows it holds for most of its 70 s.
#[tokio::test]
async fn our_own_claim_is_judged_by_our_clock_not_the_end_it_names() {
    let mut h = Harness::new(2).await;
    h.receiver.status.store(503, Ordering::SeqCst);
    let at = finished_now();
    let live = workflow("10", "Succeeded", &at, None);
    let pending = format!("pending/{}", key("Succeeded", &at));
    let aging = claimed_by(
        workflow("11", "Succeeded", &at, Some(&pending)),
        &me(),
        10,
        &MarkKey::none(),
    );
    h.api
        .finds(PATH, live.clone())
        .writes(PATH, aging.clone())
        .finds(PATH, aging.clone())
        .finds(PATH, aging)
        .writes(PATH, workflow("13", "Succeeded", &at, None));
    assert_eq!(h.complete(&live).await, Outcome::GaveUp);
    h.api.assert_done();
    let patches = h.patches();
    assert_eq!(patches.len(), 2, "claimed once, then given up: {patches:?}");
    assert!(mark_of(&patches[1]).0.starts_with("failed/"));
    assert_eq!(h.receiver.posts(), 2, "one POST per attempt");
}

/// A standby whose clock runs 80 s ahead of the holder's reads a live 70 s claim as expired 10
/// s ago. Judged by how long it has seen the claim unchanged, the claim holds: nothing is sent.
#[tokio::test]
async fn a_replica_whose_clock_runs_80_s_ahead_does_not_take_over_a_live_claim() {
    let mut h = Harness::new(3).await;
    let at = finished_now();
    let pending = format!("pending/{}", key("Succeeded", &at));
    let live_claim = claimed_for(
        workflow("20", "Succeeded", &at, Some(&pending)),
        &other(),
        80,
        70,
        &MarkKey::none(),
    );
    h.api.finds(PATH, live_claim.clone());
    assert_eq!(h.complete(&live_claim).await, Outcome::ClaimedElsewhere);
    h.api.assert_done();
    assert!(h.patches().is_empty());
    assert_eq!(h.receiver.posts(), 0);
}

/// A claim that says it holds far longer than any replica's TTL (an unsigned one anyone can
/// write) is no claim: it is taken over at once instead of holding the notification for a year.
#[tokio::test]
async fn a_claim_holding_past_its_ttl_and_the_slack_is_no_claim() {
    let mut h = Harness::new(3).await;
    let at = finished_now();
    let pending = format!("pending/{}", key("Succeeded", &at));
    let year = claimed_for(
        workflow("20", "Succeeded", &at, Some(&pending)),
        &other(),
        0,
        365 * 86_400,
        &MarkKey::none(),
    );
    confirmed_claimed_marked(&h.api, year.clone());
    assert_eq!(h.complete(&year).await, Outcome::Sent);
    h.api.assert_done();
    assert_eq!(h.receiver.posts(), 1);
}

#[tokio::test]
async fn observe_mode_confirms_records_an_event_and_writes_and_sends_nothing() {
    let h = Harness::observing().await;
    let at = finished_now();
    let live = workflow("10", "Succeeded", &at, None);
    h.api.finds(PATH, live.clone());
    assert_eq!(h.observe(&live).await, Outcome::Observed);
    // Seen again: settled, no second read or Event, and counted apart.
    assert_eq!(h.observe(&live).await, Outcome::AlreadyObserved);
    h.api.assert_done();
    assert!(h.patches().is_empty(), "{:?}", h.patches());
    assert_eq!(h.event_reasons(), ["ExitNotificationObserved"]);
    assert_eq!(h.receiver.posts(), 0);
}

#[tokio::test]
async fn observe_mode_tells_a_stale_copy_an_old_completion_and_a_sent_one_apart() {
    let h = Harness::observing().await;
    let at = finished_now();
    let running = workflow("9", "Running", "", None);
    let mut stale = workflow("8", "Failed", &at, None);
    stale["metadata"]["resourceVersion"] = json!("8");
    h.api.finds(PATH, running);
    assert_eq!(h.observe(&stale).await, Outcome::Unconfirmed);

    let old = (Timestamp::now() - SignedDuration::from_hours(3)).to_string();
    let live_old = workflow("10", "Succeeded", &old, None);
    h.api.finds(PATH, live_old.clone());
    assert_eq!(h.observe(&live_old).await, Outcome::SkippedOld);

    let sent_at = finished_now();
    let sent = workflow("12", "Failed", &sent_at, None);
    let mark = format!("sent/{}", key("Failed", &sent_at));
    let marked = workflow("12", "Failed", &sent_at, Some(&mark));
    h.api.finds(PATH, marked);
    assert_eq!(h.observe(&sent).await, Outcome::AlreadyNotified);

    h.api.assert_done();
    assert!(h.patches().is_empty(), "{:?}", h.patches());
    assert_eq!(h.event_reasons(), ["ExitNotificationSkipped"]);
    assert_eq!(h.receiver.posts(), 0);
}

/// A pending mark with its label, as a controller in notify mode leaves it: `name` finished
/// now, claimed by `by` for `seconds` more (negative: expired).
fn left_pending(name: &str, by: &Claimant, seconds: i64) -> Value {
    let at = finished_now();
    let mut w = workflow("40", "Succeeded", &at, None);
    w["metadata"]["name"] = json!(name);
    w["metadata"]["uid"] = json!(format!("{UID}-{name}"));
    let completion = WorkflowFacts::read(&w).unwrap().completion_key();
    w["metadata"]["annotations"][NOTIFICATION_ANNOTATION] = json!(format!("pending/{completion}"));
    w["metadata"]["labels"] = json!({"pipewarden.io/exit-notification": "pending"});
    claimed_by(w, by, seconds, &MarkKey::none())
}

/// Rolled back from notify to observe mode with the receiver down: the claims the notifying
/// controller left (one expired, one still holding) are reported once each through the sweep,
/// and nothing is claimed, marked or sent.
#[tokio::test]
async fn observe_mode_sweep_reports_claims_left_pending_and_writes_and_sends_nothing() {
    let h = Harness::observing().await;
    let expired = left_pending("expired", &other(), -5);
    let holding = left_pending("holding", &other(), 60);
    let list = json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowList", "metadata": {},
        "items": [expired.clone(), holding.clone()]
    });
    h.api
        .finds("/workflows", list.clone())
        .finds("/namespaces/team-a/workflows/expired", expired)
        .finds("/namespaces/team-a/workflows/holding", holding)
        // The second sweep: reported already, nothing read or recorded again.
        .finds("/workflows", list);
    super::sweep::sweep_once(&h.gate).await;
    super::sweep::sweep_once(&h.gate).await;
    h.api.assert_done();
    assert!(h.patches().is_empty(), "{:?}", h.patches());
    assert_eq!(h.receiver.posts(), 0);
    assert_eq!(
        h.event_reasons(),
        ["ExitNotificationObserved", "ExitNotificationObserved"]
    );
    let observed = h
        .metrics
        .exit
        .notifications
        .get_or_create(&crate::metrics::OutcomeLabel {
            outcome: "observed".into(),
        })
        .get();
    assert_eq!(observed, 2);
}

/// The watch path in observe mode finds a claim another controller holds: reported, since
/// nothing in this controller will deliver it.
#[tokio::test]
async fn observe_mode_reports_a_completion_claimed_by_a_notifying_controller() {
    let h = Harness::observing().await;
    let holding = left_pending("holding", &other(), 60);
    h.api
        .finds("/namespaces/team-a/workflows/holding", holding.clone());
    assert_eq!(h.observe(&holding).await, Outcome::Observed);
    h.api.assert_done();
    assert!(h.patches().is_empty());
    assert_eq!(h.event_reasons(), ["ExitNotificationObserved"]);
    let note = h.api.events()[0]["note"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(note.contains("claimed by replica-b"), "{note}");
}

/// The receiver refuses the first POST; between the attempts the workflow is written again
/// (a label, its message edited): the second attempt sends the very body of the first, the
/// resourceVersion and message the claim froze.
#[tokio::test]
async fn every_attempt_sends_the_body_the_claim_froze() {
    let mut h = Harness::new(3).await;
    h.receiver.status.store(503, Ordering::SeqCst);
    let at = finished_now();
    let mut live = workflow("10", "Failed", &at, None);
    live["status"]["message"] = json!("child 'etl' failed");
    let key = key("Failed", &at);
    let pending = format!("pending/{key}");
    let claimed_at = |rv: &str, message: &str, claim: &Claim| {
        let mut w = workflow(rv, "Failed", &at, Some(&pending));
        w["status"]["message"] = json!(message);
        w["metadata"]["annotations"][CLAIM_ANNOTATION] = json!(claim.annotation_value());
        w
    };
    // The claim is answered as written (rv 11); the second attempt reads it back below.
    h.api
        .finds(PATH, live.clone())
        .writes(PATH, workflow("11", "Failed", &at, None));
    let facts = WorkflowFacts::read(&live).unwrap();
    let (tell, hear) = oneshot::channel();
    assert!(
        submit(&h.gate, facts, Origin::Seen, Some(tell))
            .await
            .is_none()
    );
    let running = tokio::spawn(h.tasks.recv().await.unwrap());
    // Wait for the first POST, then script the second attempt with what was claimed.
    while h.receiver.posts() < 1 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let claim = claim_of(&h.patches()[0]).expect("a claim");
    assert_eq!(
        claim.body.as_ref().map(|b| b.resource_version.as_str()),
        Some("10")
    );
    h.receiver.status.store(200, Ordering::SeqCst);
    h.api
        .finds(PATH, claimed_at("15", "edited since", &claim))
        .writes(PATH, workflow("16", "Failed", &at, None));
    running.await.unwrap();
    assert_eq!(hear.await.unwrap(), Outcome::Sent);
    let bodies = h.receiver.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0], bodies[1], "one body per completion");
    let body: Value = serde_json::from_slice(&bodies[1]).unwrap();
    assert_eq!(body["resourceVersion"], "10");
    assert_eq!(body["message"], "child 'etl' failed");
}
