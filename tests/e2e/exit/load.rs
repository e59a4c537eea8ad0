//! 1,000 workflows completing at once, each followed by 10 stale replays: five racing its
//! completion through the watch, five once everything was notified; meanwhile one request in
//! ten of every step of the action path (read, claim, Event, mark) fails with a 500, and the
//! receiver answers one request in seven with a 500. Counted by the webhook receiver and by
//! Events: every completion notified (none lost), none false, no key accepted twice, and no
//! completion asked more often than the configured attempts.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Result, ensure};
use futures::{StreamExt as _, TryStreamExt as _, stream};
use kube::ResourceExt as _;
use kube::api::{DynamicObject, ListParams};
use pipewarden::controller::exit_gate::Handled;
use pipewarden::engine::EventKind::{self, Modified, Relisted};
use pipewarden::exit::decision::ExitDecision;
use pipewarden::exit::notification::NOTIFICATION_ANNOTATION;
use pipewarden::exit::outcome::Outcome;
use pipewarden_tests::exit_support::*;
use pipewarden_tests::{log, shared};
use serde_json::{Value, json};

const WORKFLOWS: usize = 1000;
/// API writes in flight from the test, as many Argo workers would make.
const WRITERS: usize = 32;
const LOAD_WAIT: Duration = Duration::from_secs(600);
/// `--exit-attempts`: the most webhook requests one completion may cause.
const ATTEMPTS: usize = 8;

/// The copies of one workflow a lagging cache could still deliver after it completed.
struct History {
    new: DynamicObject,
    running: DynamicObject,
    progressing: DynamicObject,
}

impl History {
    fn racing_replays(&self) -> Vec<(EventKind, Value)> {
        vec![
            (Modified, as_json(&self.running)),
            (Relisted, as_json(&self.progressing)),
            (Modified, stale_failure(&self.running)),
            (Modified, stale_failure(&self.progressing)),
            (Relisted, as_json(&self.new)),
        ]
    }

    fn late_replays(&self) -> Vec<(EventKind, Value)> {
        let mut failed = stale_failure(&self.progressing);
        failed["status"]["phase"] = json!("Failed");
        vec![
            (Relisted, as_json(&self.running)),
            (Modified, as_json(&self.progressing)),
            (Relisted, stale_failure(&self.running)),
            (Modified, failed),
            (Modified, as_json(&self.new)),
        ]
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_completions_with_stale_replays_notify_exactly_once_each() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let api = workflows(&client, &namespace);
    let receiver =
        Receiver::with(|_, n| Answer::Status(if n % 7 == 3 { 500 } else { 200 })).await?;
    // Transient faults at every step of the action path.
    let faults = Faults::default()
        .fail_when(Step::Read, |n| n % 10 == 3)
        .fail_when(Step::Claim, |n| n % 10 == 5)
        .fail_when(Step::Event, |n| n % 10 == 7)
        .fail_when(Step::Mark, |n| n % 10 == 9);
    // A debug-build guest on two cores shared with the API server can miss the production
    // 10 ms deadline; deadlines are the engine tests' subject, stale copies are this one's.
    let flags = [
        receiver.flag(),
        "--decision-timeout-ms=250".into(),
        format!("--exit-attempts={ATTEMPTS}"),
        "--exit-retry-delay=1s".into(),
        "--exit-retry-max-delay=4s".into(),
    ];
    let controller =
        Controller::start_with_client(faults.client(control_plane)?, &namespace, &flags).await?;

    let histories: Vec<History> = stream::iter(0..WORKFLOWS)
        .map(|i| {
            let api = api.clone();
            async move {
                let new = submit(&api, &format!("load-{i:04}")).await?;
                let running = set_phase(&api, &new, "Running", None).await?;
                let progressing = set_phase(&api, &running, "Running", None).await?;
                anyhow::Ok(History {
                    new,
                    running,
                    progressing,
                })
            }
        })
        .buffer_unordered(WRITERS)
        .try_collect()
        .await?;
    log(format_args!("exit load: {WORKFLOWS} workflows running"));

    // Complete them all at once; each completion's stale copies race its watch event.
    let racing: Vec<(String, Vec<Handled>)> = stream::iter(&histories)
        .map(|history| {
            let (api, controller) = (api.clone(), &controller);
            async move {
                let done =
                    set_phase(&api, &history.progressing, "Succeeded", Some(&timestamp(0))).await?;
                let mut handled = Vec::new();
                for (kind, copy) in history.racing_replays() {
                    handled.push(controller.inject(kind, &copy).await?);
                }
                anyhow::Ok((completion_key(&done)?, handled))
            }
        })
        .buffer_unordered(WRITERS)
        .try_collect()
        .await?;
    let expected: BTreeSet<String> = racing.iter().map(|(key, _)| key.clone()).collect();
    ensure!(expected.len() == WORKFLOWS, "distinct completion keys");
    for (key, handled) in &racing {
        for outcome in handled {
            ensure!(
                matches!(outcome.notification, None | Some(Outcome::Unconfirmed)),
                "{key}: a racing stale copy led to {outcome:?}"
            );
        }
    }
    let racing_tally = tally(racing.iter().flat_map(|(_, handled)| handled));
    log(format_args!(
        "exit load: racing replays decided {racing_tally:?}"
    ));

    wait_until_all_sent(&api, &controller).await?;
    log(format_args!("exit load: all {WORKFLOWS} marked sent"));

    // Everything is tombstoned now: every late replay is rejected outright.
    let late: Vec<Handled> = stream::iter(histories.iter().flat_map(History::late_replays))
        .map(|(kind, copy)| {
            let controller = &controller;
            async move { controller.inject(kind, &copy).await }
        })
        .buffer_unordered(WRITERS)
        .try_collect()
        .await?;
    let rejected = Handled {
        decision: ExitDecision::RejectStale,
        notification: None,
    };
    ensure!(
        late.len() == WORKFLOWS * 5 && late.iter().all(|h| *h == rejected),
        "late replays {:?}",
        tally(&late)
    );

    // Marked sent means delivered and nothing in flight: the counts are final.
    let per_key = receiver.per_key();
    let delivered: BTreeSet<String> = per_key.keys().cloned().collect();
    let false_keys: Vec<_> = delivered.difference(&expected).collect();
    let duplicates: Vec<_> = per_key.iter().filter(|(_, n)| **n > 1).collect();
    log(format_args!(
        "exit load: {} notifications, {} false, {} duplicate",
        delivered.len(),
        false_keys.len(),
        duplicates.len()
    ));
    ensure!(false_keys.is_empty(), "false notifications {false_keys:?}");
    ensure!(
        duplicates.is_empty(),
        "duplicate notifications {duplicates:?}"
    );
    ensure!(
        delivered == expected,
        "{} of {WORKFLOWS} notified",
        delivered.len()
    );
    // Retries are per completion and bounded: never more requests than attempts.
    let requests = receiver.requests_per_key();
    let most = requests.values().max().copied().unwrap_or(0);
    log(format_args!(
        "exit load: {} webhook requests for {WORKFLOWS} completions (at most {most} for one); \
         injected faults: read {}, claim {}, Event {}, mark {}; failed attempts: {:?}",
        receiver.requests(),
        faults.failed(Step::Read),
        faults.failed(Step::Claim),
        faults.failed(Step::Event),
        faults.failed(Step::Mark),
        ["read", "claim", "event", "deliver", "mark"].map(|s| (s, controller.attempt_failures(s))),
    ));
    ensure!(most <= ATTEMPTS, "a completion got {most} requests");
    for step in [Step::Read, Step::Claim, Step::Event, Step::Mark] {
        ensure!(faults.failed(step) > 0, "no {step:?} fault injected");
    }
    ensure!(
        controller.gave_up() == 0,
        "{} given up",
        controller.gave_up()
    );
    ensure!(
        receiver
            .accepted()
            .iter()
            .all(|d| d.body["phase"] == json!("Succeeded")),
        "every notification reports the real outcome"
    );
    let events = notification_events(&client, &namespace).await?;
    ensure!(
        events.len() == WORKFLOWS && events.values().all(|n| *n == 1),
        "ExitNotification Events: {} uids, counts {:?}",
        events.len(),
        tally_counts(&events)
    );
    controller.stop().await;
    Ok(())
}

async fn wait_until_all_sent(
    api: &kube::Api<DynamicObject>,
    controller: &Controller,
) -> Result<()> {
    pipewarden_tests::wait::until("every workflow marked sent", LOAD_WAIT, || async {
        // A completion given up will never be sent: say so now, with where the others are.
        let list = api.list(&ListParams::default()).await?;
        let mut states: BTreeMap<String, usize> = BTreeMap::new();
        for workflow in &list.items {
            let key = completion_key(workflow).unwrap_or_default();
            let state = match workflow.annotations().get(NOTIFICATION_ANNOTATION) {
                Some(mark) if *mark == format!("sent/{key}") => "sent".to_owned(),
                Some(mark) => mark.split('/').next().unwrap_or_default().to_owned(),
                None => "none".to_owned(),
            };
            *states.entry(state).or_default() += 1;
        }
        ensure!(
            controller.gave_up() == 0,
            "{} completions given up; marks: {states:?}",
            controller.gave_up()
        );
        Ok((states.get("sent") == Some(&WORKFLOWS)).then_some(()))
    })
    .await
}

fn tally<'a>(handled: impl IntoIterator<Item = &'a Handled>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for outcome in handled {
        let label = format!(
            "{}/{}",
            outcome.decision,
            outcome.notification.map_or("-", Outcome::label)
        );
        *counts.entry(label).or_default() += 1;
    }
    counts
}

fn tally_counts(per_uid: &BTreeMap<String, usize>) -> BTreeMap<usize, usize> {
    let mut counts = BTreeMap::new();
    for n in per_uid.values() {
        *counts.entry(*n).or_default() += 1;
    }
    counts
}
