//! With a mark key, a settled mark (`sent`, `failed`, `skipped`) counts only beside a record
//! the controller signed for that state and completion: one a namespace editor wrote, or one
//! moved from another state, is treated as a forged claim is (the completion is judged as
//! unmarked), and the marks the controller writes carry their signed record.

use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::super::action::Origin;
use super::super::entry::enter;
use super::{
    CLAIM_ANNOTATION, Claim, Harness, MarkKey, Outcome, PATH, claim_of, finished_now, key, mark_of,
    me, other, workflow,
};
use crate::exit::seen::Seen;

fn mark_key() -> MarkKey {
    MarkKey::new(b"the replicas' shared mark key")
}

/// `workflow` carrying `record` beside its mark.
fn with_record(mut workflow: Value, record: &Claim) -> Value {
    workflow["metadata"]["annotations"][CLAIM_ANNOTATION] = json!(record.annotation_value());
    workflow
}

/// The settled marks a namespace editor can write on a completion that finished at `at`, each
/// with what it carries beside it: nothing, a record signed with another key, and the record
/// of another state signed with the right key.
fn forgeries(at: &str) -> Vec<(String, Value)> {
    let completion = key("Succeeded", at);
    let mut forged = Vec::new();
    for state in ["sent", "failed", "skipped"] {
        let mark = format!("{state}/{completion}");
        let bare = workflow("10", "Succeeded", at, Some(&mark));
        forged.push((format!("{state} without a record"), bare.clone()));
        let wrong_key = MarkKey::new(b"a key no replica holds");
        let record = Claim::seal(&other(), Timestamp::now(), &completion, state, &wrong_key);
        forged.push((
            format!("{state} signed with another key"),
            with_record(bare.clone(), &record.unwrap()),
        ));
        let moved = if state == "sent" { "failed" } else { "sent" };
        let record = Claim::seal(&other(), Timestamp::now(), &completion, moved, &mark_key());
        forged.push((
            format!("{state} beside the record of a {moved} mark"),
            with_record(bare, &record.unwrap()),
        ));
    }
    forged
}

/// Each forged settled mark on a recent completion: the completion is notified once and the
/// signed sent mark goes over the forgery (before, each was taken for settled: 0 POSTs).
#[tokio::test]
async fn a_settled_mark_the_controller_did_not_sign_settles_nothing() {
    let at = finished_now();
    for (what, forged) in forgeries(&at) {
        let mut h = Harness::with_key(3, mark_key()).await;
        h.api
            .finds(PATH, forged.clone())
            .writes(PATH, workflow("11", "Succeeded", &at, None))
            .writes(PATH, workflow("12", "Succeeded", &at, None));
        assert_eq!(h.complete(&forged).await, Outcome::Sent, "{what}");
        h.api.assert_done();
        assert_eq!(h.receiver.posts(), 1, "{what}: notified once");
        let patches = h.patches();
        let completion = key("Succeeded", &at);
        assert_eq!(
            mark_of(&patches[1]).0,
            format!("sent/{completion}"),
            "{what}"
        );
        let record = claim_of(&patches[1]).expect("a sent mark carries its record");
        assert_eq!(record.state.as_deref(), Some("sent"));
        assert!(mark_key().verifies(&record, &completion), "{what}");
    }
}

/// A forged settled mark on a completion older than the catch-up window is judged as an
/// unmarked one is: reported and marked skipped (with its signed record), not notified.
#[tokio::test]
async fn a_forged_settled_mark_on_an_old_completion_is_reported_not_notified() {
    let at = (Timestamp::now() - SignedDuration::from_hours(3)).to_string();
    let mut h = Harness::with_key(3, mark_key()).await;
    let (_, forged) = forgeries(&at).remove(0);
    h.api
        .finds(PATH, forged.clone())
        .writes(PATH, workflow("11", "Succeeded", &at, None));
    assert_eq!(h.complete(&forged).await, Outcome::SkippedOld);
    h.api.assert_done();
    assert_eq!(h.receiver.posts(), 0);
    let completion = key("Succeeded", &at);
    let patch = &h.patches()[0];
    assert_eq!(mark_of(patch).0, format!("skipped/{completion}"));
    let record = claim_of(patch).expect("a skipped mark carries its record");
    assert!(
        record.state.as_deref() == Some("skipped") && mark_key().verifies(&record, &completion)
    );
}

/// The marks the controller signed settle the completion, on the action path and where a
/// completion enters it (0 reads, 0 POSTs); a forged one does not stop it at the entry.
#[tokio::test]
async fn a_settled_mark_the_controller_signed_settles_the_completion() {
    let at = finished_now();
    let completion = key("Succeeded", &at);
    let signed = |state: &str| {
        let mark = format!("{state}/{completion}");
        let record = Claim::seal(&other(), Timestamp::now(), &completion, state, &mark_key());
        with_record(
            workflow("10", "Succeeded", &at, Some(&mark)),
            &record.unwrap(),
        )
    };
    let mut h = Harness::with_key(3, mark_key()).await;
    h.api.finds(PATH, signed("sent"));
    assert_eq!(h.complete(&signed("sent")).await, Outcome::AlreadyNotified);
    h.api.assert_done();
    for (state, outcome) in [
        ("sent", Outcome::AlreadyNotified),
        ("failed", Outcome::AlreadyFailed),
        ("skipped", Outcome::AlreadySkipped),
    ] {
        let seen = Seen::of(&signed(state)).unwrap();
        assert_eq!(
            enter(&h.gate, &seen, Origin::Seen, None).await,
            Some(outcome)
        );
    }
    assert_eq!(h.receiver.posts(), 0);
    h.api.assert_done();

    // A forged one goes on to the action path, which reads the workflow.
    let (_, forged) = forgeries(&at).remove(0);
    let mut h = Harness::with_key(3, mark_key()).await;
    h.api.finds(PATH, forged.clone());
    h.api.writes(PATH, workflow("11", "Succeeded", &at, None));
    h.api.writes(PATH, workflow("12", "Succeeded", &at, None));
    let seen = Seen::of(&forged).unwrap();
    assert_eq!(enter(&h.gate, &seen, Origin::Seen, None).await, None);
    let task = h.tasks.recv().await.expect("an action task");
    tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("the action path ends");
    h.api.assert_done();
    assert_eq!(h.receiver.posts(), 1);
}

/// After delivery, a forged settled mark found in place of the claim is written over with the
/// signed sent mark; a signed one is left as it is.
#[tokio::test]
async fn a_forged_mark_that_replaced_the_claim_after_delivery_is_written_over() {
    let at = finished_now();
    let completion = key("Succeeded", &at);
    let mut h = Harness::with_key(3, mark_key()).await;
    let live = workflow("10", "Succeeded", &at, None);
    let (_, forged) = forgeries(&at).remove(3); // failed, without a record
    let mut forged_later = forged.clone();
    forged_later["metadata"]["resourceVersion"] = json!("12");
    h.api
        .finds(PATH, live.clone())
        .writes(PATH, workflow("11", "Succeeded", &at, None))
        .write_conflicts(PATH)
        .finds(PATH, forged_later)
        .writes(PATH, workflow("13", "Succeeded", &at, None));
    assert_eq!(h.complete(&live).await, Outcome::Sent);
    h.api.assert_done();
    assert_eq!(h.receiver.posts(), 1);
    let patches = h.patches();
    assert_eq!(
        mark_of(&patches[2]),
        (format!("sent/{completion}").as_str(), "12")
    );
    assert!(claim_of(&patches[2]).is_some_and(|r| mark_key().verifies(&r, &completion)));
    assert!(claim_of(&patches[0]).is_some_and(|c| c.is_claim() && c.is_by(&me())));
}
