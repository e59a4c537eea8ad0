//! The stale-exit-handler event sequence (a stale copy of a completed workflow, then a re-creation
//! under the same name), one assertion per step, against a minimal stand-in for the
//! host's tombstone cache.

use std::collections::HashMap;

use super::*;
use crate::workflow::{COMPLETED_LABEL, event_is_completed};

fn event(kind: EventKind, uid: &str, rv: &str, phase: &str, completed: bool) -> WorkflowEvent {
    WorkflowEvent {
        kind,
        namespace: "ns".into(),
        name: "nightly".into(),
        uid: uid.into(),
        resource_version: rv.into(),
        phase: phase.into(),
        labels: vec![(COMPLETED_LABEL.into(), completed.to_string())],
        workflow: "{}".into(),
    }
}

fn modified(uid: &str, rv: &str, phase: &str) -> WorkflowEvent {
    event(EventKind::Modified, uid, rv, phase, phase == "Succeeded")
}

fn tombstone(rv: &str, phase: &str, completed: bool) -> Tombstone {
    Tombstone {
        resource_version: rv.into(),
        phase: phase.into(),
        completed,
        age_seconds: 0,
    }
}

fn is_stale(answer: &Eligibility) -> bool {
    matches!(answer, Eligibility::RejectStale(_))
}

/// Keyed by uid; raised only by processed events, never lowered.
#[derive(Default)]
struct Tombstones(HashMap<String, Tombstone>);

impl Tombstones {
    fn decide(&mut self, event: &WorkflowEvent) -> Eligibility {
        let answer = argo_exit_eligibility(event, self.0.get(&event.uid));
        if answer == Eligibility::Process {
            let completed =
                event_is_completed(event) || self.0.get(&event.uid).is_some_and(|t| t.completed);
            let newer = self.0.get(&event.uid).is_none_or(|t| {
                rv::compare(&event.resource_version, &t.resource_version)
                    .is_none_or(|order| order.is_gt())
            });
            if newer {
                let raised = tombstone(&event.resource_version, &event.phase, completed);
                self.0.insert(event.uid.clone(), raised);
            }
        }
        answer
    }

    fn rv(&self, uid: &str) -> &str {
        &self.0[uid].resource_version
    }
}

#[test]
fn stale_copy_event_sequence() {
    let mut cache = Tombstones::default();
    let added = event(EventKind::Added, "U1", "100", "", false);
    assert_eq!(cache.decide(&added), Eligibility::Process);
    assert_eq!(
        cache.decide(&modified("U1", "101", "Running")),
        Eligibility::Process
    );
    assert_eq!(
        cache.decide(&modified("U1", "105", "Running")),
        Eligibility::Process
    );
    // The completion: exit processing happens here, tombstone {U1, 110}.
    assert_eq!(
        cache.decide(&modified("U1", "110", "Succeeded")),
        Eligibility::Process
    );
    assert_eq!(cache.rv("U1"), "110");
    // Pods are gone; a delayed event and a relist bring back the rv105 Running copy.
    assert!(is_stale(&cache.decide(&modified("U1", "105", "Running"))));
    let relisted = event(EventKind::Relisted, "U1", "105", "Running", false);
    assert!(is_stale(&cache.decide(&relisted)));
    // Newer copy of the same completion: eligible; the host's once-per-uid notification
    // keeps it from being processed twice.
    assert_eq!(
        cache.decide(&modified("U1", "111", "Succeeded")),
        Eligibility::Process
    );
    // Deleted after completing: the DELETE carries the final object, newer than anything seen;
    // eligible, so a completion nobody notified yet is notified from it.
    let deleted = event(EventKind::Deleted, "U1", "112", "Succeeded", true);
    assert_eq!(cache.decide(&deleted), Eligibility::Process);
    // Same name, new uid: never confused with U1.
    let recreated = event(EventKind::Added, "U2", "200", "", false);
    assert_eq!(cache.decide(&recreated), Eligibility::Process);
    // The name-keyed 3.5 logic wrongly rejected this one.
    assert_eq!(
        cache.decide(&modified("U2", "201", "Running")),
        Eligibility::Process
    );
    assert_eq!(cache.rv("U1"), "112");
}

#[test]
fn stale_completion_is_rejected_and_does_not_lower_the_tombstone() {
    let mut cache = Tombstones::default();
    cache.decide(&modified("U1", "110", "Succeeded"));
    assert!(is_stale(&cache.decide(&modified("U1", "105", "Succeeded"))));
    assert_eq!(cache.rv("U1"), "110");
}

#[test]
fn duplicate_of_the_completion_is_rejected() {
    let done = tombstone("110", "Succeeded", true);
    assert!(is_stale(&argo_exit_eligibility(
        &modified("U1", "110", "Succeeded"),
        Some(&done)
    )));
}

#[test]
fn retry_of_a_completed_workflow_is_eligible() {
    let done = tombstone("111", "Succeeded", true);
    let retry = event(EventKind::Modified, "U1", "150", "Running", false);
    assert_eq!(
        argo_exit_eligibility(&retry, Some(&done)),
        Eligibility::Process
    );
}

#[test]
fn after_ttl_or_restart_the_first_sighting_is_trusted() {
    // No tombstone: the host's fresh GET before a side effect is what stops a stale copy.
    let stale = modified("U1", "105", "Running");
    assert_eq!(argo_exit_eligibility(&stale, None), Eligibility::Process);
}

#[test]
fn older_copy_of_a_running_workflow_is_requeued() {
    let running = tombstone("105", "Running", false);
    let answer = argo_exit_eligibility(&modified("U1", "101", "Running"), Some(&running));
    assert!(matches!(answer, Eligibility::Requeue(_)), "{answer:?}");
}

#[test]
fn same_version_of_a_running_workflow_is_processed() {
    let running = tombstone("105", "Running", false);
    let relisted = event(EventKind::Relisted, "U1", "105", "Running", false);
    assert_eq!(
        argo_exit_eligibility(&relisted, Some(&running)),
        Eligibility::Process
    );
}

#[test]
fn unparseable_resource_versions() {
    let done = tombstone("110", "Succeeded", true);
    let running = tombstone("105", "Running", false);
    let odd = modified("U1", "not-a-number", "Succeeded");
    assert!(is_stale(&argo_exit_eligibility(&odd, Some(&done))));
    assert_eq!(
        argo_exit_eligibility(&odd, Some(&running)),
        Eligibility::Process
    );
    assert_eq!(argo_exit_eligibility(&odd, None), Eligibility::Process);
    let odd_tombstone = tombstone("0", "Succeeded", true);
    let newer = modified("U1", "200", "Succeeded");
    assert!(is_stale(&argo_exit_eligibility(
        &newer,
        Some(&odd_tombstone)
    )));
}

#[test]
fn deleted_before_completing_is_skipped_even_without_a_tombstone() {
    let deleted = event(EventKind::Deleted, "U9", "5", "Running", false);
    assert!(matches!(
        argo_exit_eligibility(&deleted, None),
        Eligibility::Skip(_)
    ));
    // Behind a running tombstone: nothing to read again, so skipped rather than requeued.
    let running = tombstone("7", "Running", false);
    assert!(matches!(
        argo_exit_eligibility(&deleted, Some(&running)),
        Eligibility::Skip(_)
    ));
    // Labelled completed, but still running: not a completion.
    let labelled = event(EventKind::Deleted, "U9", "8", "Running", true);
    assert!(matches!(
        argo_exit_eligibility(&labelled, None),
        Eligibility::Skip(_)
    ));
}

#[test]
fn a_deleted_completion_is_eligible_unless_stale() {
    let deleted = event(EventKind::Deleted, "U9", "120", "Failed", true);
    assert_eq!(argo_exit_eligibility(&deleted, None), Eligibility::Process);
    let done = tombstone("110", "Failed", true);
    assert_eq!(
        argo_exit_eligibility(&deleted, Some(&done)),
        Eligibility::Process
    );
    let newer = tombstone("130", "Failed", true);
    assert!(is_stale(&argo_exit_eligibility(&deleted, Some(&newer))));
}

#[test]
fn reasons_name_the_resource_versions() {
    let done = tombstone("110", "Succeeded", true);
    let Eligibility::RejectStale(reason) =
        argo_exit_eligibility(&modified("U1", "105", "Running"), Some(&done))
    else {
        panic!("expected reject-stale");
    };
    assert!(reason.contains("105") && reason.contains("110"), "{reason}");
}
