//! BRIEF §2's event sequence through the exit gate (`assess`: tombstone lookup, policy
//! decision, record), once through the compiled default policy component and once through
//! the same rules compiled natively: the decision, the action and the tombstone at each step.

mod common;
mod exit_support;

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use exit_support::{FINISHED, U1, U2, completed, native, workflow};
use pipewarden::engine::{
    Eligibility, EventKind, Policy, PolicyError, PolicyOptions, Tombstone, WorkflowEvent,
};
use pipewarden::exit::gate::{assess_with, eligibility_parts};
use pipewarden::exit::tombstone::{ManualClock, TombstoneCache};
use serde_json::Value;

use EventKind::{Added, Deleted, Modified, Relisted};

type Decide<'a> =
    &'a dyn Fn(&WorkflowEvent, Option<&Tombstone>) -> Result<Eligibility, PolicyError>;

const TTL: Duration = Duration::from_secs(600);

/// Runs `check` with the natively compiled rules, then with the compiled component.
fn with_both(check: impl Fn(Decide, &str)) {
    check(&native, "native");
    let policy = default_policy();
    check(
        &|event, tombstone| policy.exit_eligibility(event, tombstone),
        "component",
    );
}

/// Compiled once per test binary: a debug-build Cranelift compile takes seconds.
fn default_policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| {
        Policy::load(
            &common::built_policy("kfp-default"),
            PolicyOptions::default(),
        )
        .expect("load the default policy")
    })
}

/// The gate as the controller runs it, with a hand-moved clock; a completion counts as
/// notified once per completion key, as the annotation makes it in the controller.
struct Gate<'a> {
    decide: Decide<'a>,
    tombstones: TombstoneCache,
    clock: Arc<ManualClock>,
    notified: HashSet<String>,
    label: &'a str,
}

impl<'a> Gate<'a> {
    fn new(decide: Decide<'a>, label: &'a str) -> Self {
        let clock = Arc::new(ManualClock::default());
        Gate {
            decide,
            tombstones: TombstoneCache::new(TTL, 1000, clock.clone()),
            clock,
            notified: HashSet::new(),
            label,
        }
    }

    /// Feeds one event and checks the decision, whether it may act, and the tombstone after.
    fn step(
        &mut self,
        what: &str,
        kind: EventKind,
        object: &Value,
        decision: &str,
        act: bool,
        tombstone: Option<(u64, bool)>,
    ) {
        let assessment = assess_with(|e, t| (self.decide)(e, t), &self.tombstones, kind, object)
            .unwrap_or_else(|e| panic!("{}: {what}: {e}", self.label));
        let context = format!("{}: {what}", self.label);
        assert_eq!(
            eligibility_parts(&assessment.eligibility).0,
            decision,
            "{context}"
        );
        assert_eq!(assessment.act, act, "{context}: act");
        if act {
            self.notified.insert(assessment.facts.completion_key());
        }
        let held = self
            .tombstones
            .get(&assessment.facts.uid)
            .map(|entry| (entry.resource_version, entry.completed));
        assert_eq!(held, tombstone, "{context}: tombstone after");
    }
}

#[test]
fn the_brief_sequence_notifies_once_and_processes_the_recreated_workflow() {
    with_both(|decide, label| {
        let mut gate = Gate::new(decide, label);
        let running = |rv| workflow(U1, rv, "Running", None);
        gate.step(
            "new",
            Added,
            &workflow(U1, "100", "", None),
            "process",
            false,
            Some((100, false)),
        );
        gate.step(
            "running",
            Modified,
            &running("101"),
            "process",
            false,
            Some((101, false)),
        );
        gate.step(
            "progress",
            Modified,
            &running("105"),
            "process",
            false,
            Some((105, false)),
        );
        let done = completed(U1, "110", "Succeeded");
        gate.step(
            "completed",
            Modified,
            &done,
            "process",
            true,
            Some((110, true)),
        );
        gate.step(
            "delayed stale copy",
            Modified,
            &running("105"),
            "reject-stale",
            false,
            Some((110, true)),
        );
        gate.step(
            "stale relist",
            Relisted,
            &running("105"),
            "reject-stale",
            false,
            Some((110, true)),
        );
        let later = completed(U1, "111", "Succeeded");
        gate.step(
            "label update",
            Modified,
            &later,
            "process",
            true,
            Some((111, true)),
        );
        gate.step("deleted", Deleted, &later, "skip", false, Some((111, true)));
        gate.step(
            "same name, new uid",
            Added,
            &workflow(U2, "200", "", None),
            "process",
            false,
            Some((200, false)),
        );
        let reused = workflow(U2, "201", "Running", None);
        gate.step(
            "new uid running",
            Modified,
            &reused,
            "process",
            false,
            Some((201, false)),
        );
        assert_eq!(
            gate.notified.len(),
            1,
            "{label}: one notification for U1's completion"
        );
        assert_eq!(
            gate.tombstones.get(U1).map(|e| e.resource_version),
            Some(111)
        );
    });
}

#[test]
fn a_stale_completion_does_not_lower_the_tombstone() {
    with_both(|decide, label| {
        let mut gate = Gate::new(decide, label);
        gate.step(
            "completed",
            Modified,
            &completed(U1, "110", "Succeeded"),
            "process",
            true,
            Some((110, true)),
        );
        // A copy claiming another outcome at an older version, as a stale reconcile would make.
        let stale = workflow(U1, "105", "Error", Some("2026-08-04T01:30:00Z"));
        gate.step(
            "stale completion",
            Modified,
            &stale,
            "reject-stale",
            false,
            Some((110, true)),
        );
        let unordered = completed(U1, "0105", "Failed");
        gate.step(
            "unordered version",
            Modified,
            &unordered,
            "reject-stale",
            false,
            Some((110, true)),
        );
        assert_eq!(gate.notified.len(), 1, "{label}");
    });
}

#[test]
fn a_retry_keeps_the_uid_and_is_eligible_and_notified_again() {
    with_both(|decide, label| {
        let mut gate = Gate::new(decide, label);
        gate.step(
            "failed",
            Modified,
            &completed(U1, "110", "Failed"),
            "process",
            true,
            Some((110, true)),
        );
        // `argo retry`: same uid, newer version, completed label removed.
        let retried = workflow(U1, "150", "Running", None);
        gate.step(
            "retried",
            Modified,
            &retried,
            "process",
            false,
            Some((150, false)),
        );
        gate.step(
            "older running copy",
            Modified,
            &workflow(U1, "140", "Running", None),
            "requeue",
            false,
            Some((150, false)),
        );
        let again = workflow(U1, "160", "Succeeded", Some("2026-08-04T02:00:00Z"));
        gate.step(
            "completed again",
            Modified,
            &again,
            "process",
            true,
            Some((160, true)),
        );
        assert_eq!(gate.notified.len(), 2, "{label}: one per completion");
    });
}

#[test]
fn after_the_ttl_a_stale_copy_gets_through_the_tombstone() {
    with_both(|decide, label| {
        let mut gate = Gate::new(decide, label);
        gate.step(
            "completed",
            Modified,
            &completed(U1, "110", "Succeeded"),
            "process",
            true,
            Some((110, true)),
        );
        gate.clock.advance(TTL - Duration::from_secs(1));
        let stale = workflow(U1, "105", "Running", None);
        gate.step(
            "stale within ttl",
            Modified,
            &stale,
            "reject-stale",
            false,
            Some((110, true)),
        );
        gate.clock.advance(Duration::from_secs(1));
        // Only the fresh read before any side effect stops it now (see exit_notification.rs).
        gate.step(
            "stale after ttl",
            Modified,
            &stale,
            "process",
            false,
            Some((105, false)),
        );
    });
}

#[test]
fn after_a_restart_the_first_sighting_is_trusted() {
    with_both(|decide, label| {
        let mut before = Gate::new(decide, label);
        before.step(
            "completed",
            Modified,
            &completed(U1, "110", "Succeeded"),
            "process",
            true,
            Some((110, true)),
        );
        let mut after = Gate::new(decide, label);
        assert!(
            after.tombstones.is_empty(),
            "{label}: a new process starts empty"
        );
        let stale = workflow(U1, "105", "Running", None);
        after.step(
            "stale copy after restart",
            Relisted,
            &stale,
            "process",
            false,
            Some((105, false)),
        );
        after.step(
            "completion relisted",
            Relisted,
            &completed(U1, "111", "Succeeded"),
            "process",
            true,
            Some((111, true)),
        );
    });
}

#[test]
fn a_completion_without_finished_at_is_keyed_by_phase() {
    with_both(|decide, label| {
        let mut gate = Gate::new(decide, label);
        let bare = workflow(U1, "110", "Succeeded", None);
        gate.step(
            "completed, no finishedAt",
            Modified,
            &bare,
            "process",
            true,
            Some((110, true)),
        );
        assert!(
            gate.notified.contains(&format!("{U1}/Succeeded")),
            "{label}"
        );
        assert!(!gate.notified.contains(&format!("{U1}/{FINISHED}")));
    });
}
