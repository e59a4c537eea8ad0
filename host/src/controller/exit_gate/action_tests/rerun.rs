//! A re-run that completes within the same second as the run before, with the same times and
//! phase (the one case Argo's own fields cannot tell apart): the gate counts the run when it
//! sees the marked workflow running again, and the next completion is notified with a key of
//! its own. Before, it was taken for the completion already notified.

use std::time::Duration;

use serde_json::{Value, json};

use super::{
    Harness, NOTIFICATION_ANNOTATION, Outcome, PATH, finished_now, key, mark_of, workflow,
};
use crate::controller::exit_gate::rerun::{next_run, note};
use crate::exit::event::RUN_ANNOTATION;
use crate::exit::seen::Seen;

fn with_run(mut workflow: Value, run: &str) -> Value {
    workflow["metadata"]["annotations"][RUN_ANNOTATION] = json!(run);
    workflow
}

fn seen(workflow: &Value) -> Seen {
    Seen::of(workflow).expect("a workflow")
}

#[tokio::test]
async fn a_rerun_completing_in_the_same_second_with_the_same_phase_is_notified_again() {
    let mut h = Harness::new(3).await;
    let at = finished_now();
    let first = key("Failed", &at);
    let marked = format!("sent/{first}");
    // `argo retry`: running again, the mark of the first run still on it.
    let running = workflow("20", "Running", "", Some(&marked));
    h.api.writes(
        PATH,
        with_run(workflow("21", "Running", "", Some(&marked)), "2"),
    );
    note(&h.gate, &seen(&running));
    let task = h.tasks.recv().await.expect("the count is written");
    tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .unwrap();
    let counted = h.patches().remove(0);
    assert_eq!(counted["metadata"]["annotations"][RUN_ANNOTATION], "2");
    assert_eq!(
        counted["metadata"]["resourceVersion"], "20",
        "on the version seen"
    );

    // The re-run fails again in the same second: same startedAt, finishedAt and phase.
    let again = with_run(workflow("22", "Failed", &at, Some(&marked)), "2");
    h.api
        .finds(PATH, again.clone())
        .writes(PATH, workflow("23", "Failed", &at, None))
        .writes(PATH, workflow("24", "Failed", &at, None));
    assert_eq!(h.complete(&again).await, Outcome::Sent);
    h.api.assert_done();
    assert_eq!(h.receiver.posts(), 1, "the re-run is notified");
    let patches = h.patches();
    assert_eq!(mark_of(&patches[2]).0, format!("sent/{first}/2"));
    assert_ne!(
        patches[2]["metadata"]["annotations"][NOTIFICATION_ANNOTATION],
        json!(marked)
    );
}

#[test]
fn a_run_is_counted_once_and_never_for_an_unmarked_complete_or_foreign_copy() {
    let at = finished_now();
    let first = key("Failed", &at);
    let marked = format!("sent/{first}");
    assert_eq!(
        next_run(&seen(&workflow("20", "Running", "", Some(&marked)))),
        Some(2)
    );
    // Counted already: the mark names run 1, the workflow is in run 2.
    let counted = with_run(workflow("21", "Running", "", Some(&marked)), "2");
    assert_eq!(next_run(&seen(&counted)), None);
    // Run 2 completed and marked, then retried again: run 3.
    let second = format!("sent/{first}/2");
    let rerun = with_run(workflow("30", "Running", "", Some(&second)), "2");
    assert_eq!(next_run(&seen(&rerun)), Some(3));
    // A copy without a mark (a stale copy from before the completion was marked), a complete
    // one, and a mark of another workflow count nothing.
    assert_eq!(next_run(&seen(&workflow("19", "Running", "", None))), None);
    assert_eq!(
        next_run(&seen(&workflow("22", "Failed", &at, Some(&marked)))),
        None
    );
    let foreign = format!(
        "sent/another-uid/{}",
        &first[first.find('/').unwrap() + 1..]
    );
    assert_eq!(
        next_run(&seen(&workflow("20", "Running", "", Some(&foreign)))),
        None
    );
}

#[tokio::test]
async fn observe_mode_counts_no_run() {
    let mut h = Harness::observing().await;
    let marked = format!("sent/{}", key("Failed", &finished_now()));
    note(
        &h.gate,
        &seen(&workflow("20", "Running", "", Some(&marked))),
    );
    assert!(h.tasks.try_recv().is_err(), "nothing written");
    h.api.assert_done();
}
