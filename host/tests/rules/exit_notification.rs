//! The once-per-completion rules: what a fresh read of the workflow allows, the annotation
//! that records a claim and a delivery, the webhook body, and the retry arithmetic.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use pipewarden::exit::claim::{CLAIM_ANNOTATION, Claim, Claimant, MarkKey};
use pipewarden::exit::event::WorkflowFacts;
use pipewarden::exit::notification::{
    Mark, NOTIFICATION_ANNOTATION, NOTIFICATION_LABEL, Plan, Rules, event_name, finished_before,
    header_value, notification, payload, plan_facts,
};
use pipewarden::exit::outcome::Outcome;
use pipewarden::exit::retry::{backoff, retryable_status};
use pipewarden_test_support::exit::{FINISHED, U1, U2, completed, workflow};
use serde_json::{Value, json};

/// The plan for `seen` given `live` as the API server returned it, read as the action path
/// reads it.
fn plan(seen: &WorkflowFacts, live: &Value, rules: &Rules) -> Plan {
    let Some(current) = WorkflowFacts::read(live) else {
        return Plan::Unconfirmed("the live workflow has no name or uid".into());
    };
    let (mark, claim) = (Mark::read(live), Claim::read(live));
    plan_facts(seen, &current, mark.as_ref(), claim.as_ref(), rules)
}

const HOUR: Duration = Duration::from_secs(3600);

fn now() -> Timestamp {
    // Five minutes after FINISHED.
    "2026-08-04T01:14:41Z".parse().unwrap()
}

static ME: std::sync::LazyLock<Claimant> = std::sync::LazyLock::new(|| Claimant {
    holder: "replica-a".into(),
    epoch: 1,
});
static NO_KEY: std::sync::LazyLock<MarkKey> = std::sync::LazyLock::new(MarkKey::none);

/// Decided by replica-a at `now`, unsigned claims, a one-hour catch-up window.
fn rules(now: Timestamp) -> Rules<'static> {
    Rules {
        claimant: &ME,
        key: &NO_KEY,
        now,
        catch_up: HOUR,
    }
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
    assert_eq!(plan(&facts(&seen), &live, &rules(now())), Plan::Claim);
}

#[test]
fn a_pending_claim_is_resent_by_its_holder_left_to_another_and_taken_over_once_expired() {
    let seen = facts(&completed(U1, "110", "Succeeded"));
    let key = seen.completion_key();
    let pending = marked(
        completed(U1, "111", "Succeeded"),
        &Mark::Pending(key.clone()),
    );
    let claimed_by = |who: &Claimant, until: Timestamp| {
        let mut live = pending.clone();
        let mut claim = Claim::new(who, now(), HOUR, &key, &MarkKey::none());
        claim.until = until;
        live["metadata"]["annotations"][CLAIM_ANNOTATION] = json!(claim.annotation_value());
        live
    };
    let other = Claimant {
        holder: "replica-b".into(),
        epoch: 9,
    };
    let later: Timestamp = "2026-08-04T02:00:00Z".parse().unwrap();
    assert_eq!(
        plan(&seen, &claimed_by(&ME, later), &rules(now())),
        Plan::Resend
    );
    assert_eq!(
        plan(&seen, &claimed_by(&other, later), &rules(now())),
        Plan::ClaimedElsewhere {
            holder: "replica-b".into(),
            until: later
        }
    );
    assert_eq!(
        plan(&seen, &claimed_by(&other, now()), &rules(now())),
        Plan::TakeOver,
        "expired"
    );
    // A restarted replica of the same name is another holder.
    let restarted = Claimant {
        epoch: 2,
        ..ME.clone()
    };
    assert!(matches!(
        plan(&seen, &claimed_by(&restarted, later), &rules(now())),
        Plan::ClaimedElsewhere { .. }
    ));
    // Without a claim (an earlier version's mark, or a forged one): taken over while recent;
    // unsigned, past the catch-up window, judged as unclaimed.
    assert_eq!(plan(&seen, &pending, &rules(now())), Plan::TakeOver);
    let much_later: Timestamp = "2026-08-09T00:00:00Z".parse().unwrap();
    assert_eq!(plan(&seen, &pending, &rules(much_later)), Plan::TooOld);
    // My own claim is resent whatever its age.
    assert_eq!(
        plan(&seen, &claimed_by(&ME, later), &rules(much_later)),
        Plan::Resend
    );
    let sent = marked(completed(U1, "112", "Succeeded"), &Mark::Sent(key));
    assert_eq!(plan(&seen, &sent, &rules(now())), Plan::AlreadySent);
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
        plan(&facts(&stale), &live, &rules(now())),
        Plan::Unconfirmed(_)
    ));
    // Same finishedAt, another phase: still not this completion.
    let other_phase = workflow(U1, "105", "Failed", Some(FINISHED));
    assert!(matches!(
        plan(&facts(&other_phase), &live, &rules(now())),
        Plan::Unconfirmed(_)
    ));
    // The live object is running again (a retry): the old completion is not confirmed.
    let retried = workflow(U1, "150", "Running", None);
    let seen = completed(U1, "110", "Succeeded");
    assert!(matches!(
        plan(&facts(&seen), &retried, &rules(now())),
        Plan::Unconfirmed(_)
    ));
}

#[test]
fn a_recreated_workflow_does_not_confirm_the_old_uid() {
    let seen = completed(U1, "110", "Succeeded");
    let recreated = completed(U2, "210", "Succeeded");
    let Plan::Unconfirmed(reason) = plan(&facts(&seen), &recreated, &rules(now())) else {
        panic!("a new uid must not confirm the old one");
    };
    assert!(reason.contains(U2), "{reason}");
}

#[test]
fn a_new_completion_after_a_retry_is_claimed_despite_the_old_mark() {
    let old_key = format!("{U1}/{FINISHED}");
    let again = workflow(U1, "160", "Failed", Some("2026-08-04T01:14:00Z"));
    let live = marked(again.clone(), &Mark::Sent(old_key));
    assert_eq!(plan(&facts(&again), &live, &rules(now())), Plan::Claim);
}

#[test]
fn a_retry_completing_within_the_same_second_is_a_new_completion() {
    let first = completed(U1, "110", "Failed");
    let first_key = facts(&first).completion_key();
    // `argo retry` reset startedAt to the retry's time, in the second the first run ended;
    // the re-run failed again within that second.
    let mut again = completed(U1, "160", "Failed");
    again["status"]["startedAt"] = json!(FINISHED);
    assert_ne!(facts(&again).completion_key(), first_key);
    let live = marked(again.clone(), &Mark::Sent(first_key));
    assert_eq!(plan(&facts(&again), &live, &rules(now())), Plan::Claim);
}

#[test]
fn completions_before_the_catch_up_window_are_skipped_unless_claimed() {
    let seen = facts(&completed(U1, "110", "Succeeded"));
    let live = completed(U1, "110", "Succeeded");
    let two_hours_later: Timestamp = "2026-08-04T03:09:42Z".parse().unwrap();
    assert_eq!(plan(&seen, &live, &rules(two_hours_later)), Plan::TooOld);
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
        plan(&seen, &json!({"metadata": {}}), &rules(now())),
        Plan::Unconfirmed(_)
    ));
}

#[test]
fn marks_round_trip_and_unknown_values_are_ignored() {
    let key = facts(&completed(U1, "1", "Failed")).completion_key();
    for mark in [
        Mark::Pending(key.clone()),
        Mark::Sent(key.clone()),
        Mark::Failed(key.clone()),
        Mark::Skipped(key.clone()),
    ] {
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
    let patch = Mark::Pending("k".into()).patch("111", None);
    assert_eq!(patch["metadata"]["resourceVersion"], "111");
    assert_eq!(
        patch["metadata"]["annotations"][NOTIFICATION_ANNOTATION],
        "pending/k"
    );
    // The state alone as a label, so that pending claims can be listed by selector.
    assert_eq!(patch["metadata"]["labels"][NOTIFICATION_LABEL], "pending");
    assert_eq!(
        patch.as_object().unwrap().len(),
        1,
        "only metadata is written"
    );
}

#[test]
fn the_completion_key_is_uid_start_finish_and_phase_as_argo_wrote_them() {
    let done = facts(&completed(U1, "110", "Failed"));
    assert_eq!(
        done.completion_key(),
        format!("{U1}/2026-08-04T01:00:03Z/{FINISHED}/Failed")
    );
    // Later writes to the same completion (labels, our own mark) keep it.
    assert_eq!(
        facts(&completed(U1, "150", "Failed")).completion_key(),
        done.completion_key()
    );
    // Sub-second precision, where a writer keeps it, is kept.
    let precise = workflow(U1, "110", "Failed", Some("2026-08-04T01:09:41.250Z"));
    assert!(
        facts(&precise)
            .completion_key()
            .ends_with("01:09:41.250Z/Failed")
    );
    // A mark written by an earlier version (uid/finishedAt) still names this completion.
    assert!(done.is_completion_key(&format!("{U1}/{FINISHED}")));
    assert!(!done.is_completion_key(&format!("{U1}/2026-08-04T01:12:00Z")));
}

#[test]
fn a_mark_from_an_earlier_version_is_honoured() {
    let seen = facts(&completed(U1, "110", "Succeeded"));
    let sent = marked(
        completed(U1, "111", "Succeeded"),
        &Mark::Sent(format!("{U1}/{FINISHED}")),
    );
    assert_eq!(plan(&seen, &sent, &rules(now())), Plan::AlreadySent);
}

#[test]
fn settled_marks_are_not_acted_on_again() {
    let seen = facts(&completed(U1, "110", "Succeeded"));
    let key = seen.completion_key();
    let failed = marked(
        completed(U1, "111", "Succeeded"),
        &Mark::Failed(key.clone()),
    );
    let skipped = marked(completed(U1, "111", "Succeeded"), &Mark::Skipped(key));
    assert_eq!(
        plan(&seen, &failed, &rules(now())),
        Plan::AlreadySettled(Outcome::AlreadyFailed)
    );
    assert_eq!(
        plan(&seen, &skipped, &rules(now())),
        Plan::AlreadySettled(Outcome::AlreadySkipped)
    );
}

#[test]
fn the_webhook_body_names_the_completion() {
    let mut object = completed(U1, "111", "Failed");
    object["status"]["message"] = json!("child 'etl' failed");
    let body = payload(&facts(&object));
    assert_eq!(
        body,
        json!({
            "namespace": "data-eng", "name": "nightly-etl", "uid": U1, "phase": "Failed",
            "startedAt": "2026-08-04T01:00:03Z", "finishedAt": FINISHED,
            "message": "child 'etl' failed", "resourceVersion": "111",
            "idempotencyKey": format!("{U1}/2026-08-04T01:00:03Z/{FINISHED}/Failed"),
        })
    );
}

#[test]
fn the_notification_is_a_cloudevent_in_binary_mode() {
    let live = facts(&completed(U1, "111", "Failed"));
    let sent = notification(&live, "/pipewarden/exit-gate");
    let header = |name: &str| {
        sent.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    };
    let key = live.completion_key();
    assert_eq!(header("ce-specversion"), Some("1.0"));
    assert_eq!(header("ce-id"), Some(key.as_str()));
    assert_eq!(
        header("ce-type"),
        Some("io.pipewarden.workflow.completed.v1")
    );
    assert_eq!(header("ce-source"), Some("/pipewarden/exit-gate"));
    assert_eq!(header("ce-subject"), Some("data-eng/nightly-etl"));
    assert_eq!(header("ce-time"), Some(FINISHED));
    assert_eq!(header("content-type"), Some("application/json"));
    assert_eq!(header("idempotency-key"), Some(key.as_str()));
    assert_eq!(header("webhook-id"), Some(key.as_str()));
    let body: serde_json::Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(body, payload(&live));
    // Header values are percent-encoded where the HTTP binding says so.
    assert_eq!(header_value("a b\"%é"), "a%20b%22%25%C3%A9");
}

#[test]
fn each_completion_has_an_event_name_of_its_own() {
    let first = facts(&completed(U1, "110", "Failed")).completion_key();
    let again =
        facts(&workflow(U1, "160", "Failed", Some("2026-08-04T02:00:00Z"))).completion_key();
    let name = |key: &str| event_name("nightly-etl", "ExitNotification", key);
    assert_eq!(name(&first), name(&first), "stable");
    assert_ne!(name(&first), name(&again));
    assert_ne!(
        name(&first),
        event_name("nightly-etl", "ExitNotificationFailed", &first)
    );
    assert!(name(&first).starts_with("nightly-etl.exit-"));
    let long = event_name(&"w".repeat(253), "ExitNotification", &first);
    assert!(long.len() <= 253, "{}", long.len());
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
