//! The once-per-completion rules: what a fresh read of the workflow allows, the annotation
//! that records a claim and a delivery, the webhook body, and the retry arithmetic.

mod exit_support;

use std::time::Duration;

use exit_support::{FINISHED, U1, U2, completed, workflow};
use k8s_openapi::jiff::Timestamp;
use pipewarden::exit::event::WorkflowFacts;
use pipewarden::exit::notification::{
    Mark, NOTIFICATION_ANNOTATION, Plan, finished_before, payload, plan,
};
use pipewarden::exit::retry::{backoff, retryable_status};
use serde_json::{Value, json};

const HOUR: Duration = Duration::from_secs(3600);

fn now() -> Timestamp {
    // Five minutes after FINISHED.
    "2026-08-04T01:14:41Z".parse().unwrap()
}

fn facts(object: &Value) -> WorkflowFacts {
    WorkflowFacts::read(object).expect("readable workflow")
}

fn marked(mut object: Value, mark: &Mark) -> Value {
    object["metadata"]["annotations"] = json!({ NOTIFICATION_ANNOTATION: mark.annotation_value() });
    object
}

#[test]
fn an_unmarked_recent_completion_is_claimed() {
    let seen = completed(U1, "110", "Succeeded");
    let live = completed(U1, "111", "Succeeded");
    assert_eq!(plan(&facts(&seen), &live, now(), HOUR), Plan::Claim);
}

#[test]
fn a_marked_completion_is_resent_while_pending_and_left_alone_once_sent() {
    let seen = facts(&completed(U1, "110", "Succeeded"));
    let key = seen.completion_key();
    let pending = marked(
        completed(U1, "111", "Succeeded"),
        &Mark::Pending(key.clone()),
    );
    let sent = marked(completed(U1, "112", "Succeeded"), &Mark::Sent(key));
    assert_eq!(plan(&seen, &pending, now(), HOUR), Plan::Resend);
    assert_eq!(plan(&seen, &sent, now(), HOUR), Plan::AlreadySent);
    // Age does not matter once claimed: a pending claim is always finished.
    let much_later: Timestamp = "2026-08-09T00:00:00Z".parse().unwrap();
    assert_eq!(plan(&seen, &pending, much_later, HOUR), Plan::Resend);
}

#[test]
fn a_stale_copy_is_not_confirmed_by_the_live_workflow() {
    let live = marked(
        completed(U1, "111", "Succeeded"),
        &Mark::Sent(format!("{U1}/{FINISHED}")),
    );
    // The seed's false failure: a stale copy turned Error with a finishedAt of its own.
    let stale = workflow(U1, "105", "Error", Some("2026-08-04T01:12:00Z"));
    assert!(matches!(
        plan(&facts(&stale), &live, now(), HOUR),
        Plan::Unconfirmed(_)
    ));
    // Same finishedAt, another phase: still not this completion.
    let other_phase = workflow(U1, "105", "Failed", Some(FINISHED));
    assert!(matches!(
        plan(&facts(&other_phase), &live, now(), HOUR),
        Plan::Unconfirmed(_)
    ));
    // The live object is running again (a retry): the old completion is not confirmed.
    let retried = workflow(U1, "150", "Running", None);
    let seen = completed(U1, "110", "Succeeded");
    assert!(matches!(
        plan(&facts(&seen), &retried, now(), HOUR),
        Plan::Unconfirmed(_)
    ));
}

#[test]
fn a_recreated_workflow_does_not_confirm_the_old_uid() {
    let seen = completed(U1, "110", "Succeeded");
    let recreated = completed(U2, "210", "Succeeded");
    let Plan::Unconfirmed(reason) = plan(&facts(&seen), &recreated, now(), HOUR) else {
        panic!("a new uid must not confirm the old one");
    };
    assert!(reason.contains(U2), "{reason}");
}

#[test]
fn a_new_completion_after_a_retry_is_claimed_despite_the_old_mark() {
    let old_key = format!("{U1}/{FINISHED}");
    let again = workflow(U1, "160", "Failed", Some("2026-08-04T01:14:00Z"));
    let live = marked(again.clone(), &Mark::Sent(old_key));
    assert_eq!(plan(&facts(&again), &live, now(), HOUR), Plan::Claim);
}

#[test]
fn completions_before_the_catch_up_window_are_skipped_unless_claimed() {
    let seen = facts(&completed(U1, "110", "Succeeded"));
    let live = completed(U1, "110", "Succeeded");
    let two_hours_later: Timestamp = "2026-08-04T03:09:42Z".parse().unwrap();
    assert_eq!(plan(&seen, &live, two_hours_later, HOUR), Plan::TooOld);
    assert!(!finished_before(&seen, now(), HOUR));
    // Without a readable finishedAt the age is unknown: notify rather than lose it.
    let bare = facts(&workflow(U1, "110", "Succeeded", None));
    assert!(!finished_before(&bare, two_hours_later, HOUR));
    let garbled = facts(&workflow(U1, "110", "Succeeded", Some("yesterday")));
    assert!(!finished_before(&garbled, two_hours_later, HOUR));
}

#[test]
fn a_live_workflow_without_identity_confirms_nothing() {
    let seen = facts(&completed(U1, "110", "Succeeded"));
    assert!(matches!(
        plan(&seen, &json!({"metadata": {}}), now(), HOUR),
        Plan::Unconfirmed(_)
    ));
}

#[test]
fn marks_round_trip_and_unknown_values_are_ignored() {
    let key = format!("{U1}/{FINISHED}");
    for mark in [Mark::Pending(key.clone()), Mark::Sent(key.clone())] {
        assert_eq!(Mark::parse(&mark.annotation_value()), Some(mark.clone()));
        assert_eq!(mark.key(), key);
        assert_eq!(
            Mark::read(&marked(completed(U1, "1", "Failed"), &mark)),
            Some(mark)
        );
    }
    for bad in ["", "sent", "sent/", "done/x", "pending"] {
        assert_eq!(Mark::parse(bad), None, "{bad:?}");
    }
    assert_eq!(Mark::read(&completed(U1, "1", "Failed")), None);
}

#[test]
fn a_mark_patch_carries_the_resource_version_it_was_decided_on() {
    let patch = Mark::Pending("k".into()).patch("111");
    assert_eq!(patch["metadata"]["resourceVersion"], "111");
    assert_eq!(
        patch["metadata"]["annotations"][NOTIFICATION_ANNOTATION],
        "pending/k"
    );
    assert_eq!(
        patch.as_object().unwrap().len(),
        1,
        "only metadata is written"
    );
}

#[test]
fn the_webhook_body_names_the_completion() {
    let body = payload(&facts(&completed(U1, "111", "Failed")));
    assert_eq!(
        body,
        json!({
            "namespace": "data-eng", "name": "nightly-etl", "uid": U1, "phase": "Failed",
            "finishedAt": FINISHED, "resourceVersion": "111",
            "idempotencyKey": format!("{U1}/{FINISHED}"),
        })
    );
}

#[test]
fn backoff_doubles_up_to_the_cap_within_its_jitter() {
    let base = Duration::from_millis(200);
    let cap = Duration::from_secs(5);
    assert_eq!(backoff(0, base, cap, 0.0), Duration::from_millis(100));
    assert_eq!(backoff(0, base, cap, 1.0), base);
    assert_eq!(backoff(3, base, cap, 1.0), Duration::from_millis(1600));
    assert_eq!(backoff(10, base, cap, 1.0), cap);
    assert_eq!(backoff(u32::MAX, base, cap, 0.5), cap.mul_f64(0.75));
    for status in [500, 502, 503, 408, 429] {
        assert!(retryable_status(status), "{status}");
    }
    for status in [400, 401, 404, 409, 422] {
        assert!(!retryable_status(status), "{status}");
    }
}
