//! Argo's stale-copy event sequence (#12198, #16357) through the exit gate (`assess`:
//! tombstone lookup, policy decision, record), once through the compiled default policy
//! component and once through the same rules compiled natively: the decision, the action and
//! the tombstone at each step.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use pipewarden::engine::{
    Eligibility, EventKind, Policy, PolicyError, PolicyOptions, Tombstone, WorkflowEvent,
};
use pipewarden::exit::TombstoneCache;
use pipewarden::exit::judge::{assess, eligibility_parts};
use pipewarden::exit::tombstone::{ManualClock, ResourceVersion};
use pipewarden_test_support::exit::{ExitOnly, FINISHED, U1, U2, completed, native, workflow};
use serde_json::Value;

use EventKind::{Added, Deleted, Modified, Relisted};

type Decide<'a> =
    &'a dyn Fn(&WorkflowEvent, Option<&Tombstone>) -> Result<Eligibility, PolicyError>;

const TTL: Duration = Duration::from_secs(600);

/// Runs `check` with the natively compiled rules, then with the compiled component.
fn with_both(check: impl Fn(Decide, &str)) {
    with_both_settings("{}", check);
}

/// [`with_both`] with `settings` in force: natively as the SDK's stand-in for the host, in the
/// component through its `settings` import.
fn with_both_settings(settings: &str, check: impl Fn(Decide, &str)) {
    pipewarden_guest::settings::set_native(settings);
    check(&native, "native");
    let policy = default_policy().with_settings(settings);
    check(
        &|event, tombstone| policy.exit_eligibility(event, tombstone),
        "component",
    );
}

/// Compiled once per test binary: a debug-build Cranelift compile takes seconds.
fn default_policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| {
        // Generous deadlines: this checks decisions, not speed, and the tests of this binary
        // share two cores with each other.
        let options = PolicyOptions {
            decision_timeout: Duration::from_secs(2),
            ..PolicyOptions::default()
        };
        Policy::load(
            &pipewarden_test_support::built_policy("kfp-default"),
            options,
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

    /// Feeds each event and checks its decision (`act` = process, and exit processing may
    /// run) and the tombstone held after it: (resourceVersion, completed).
    fn run(&mut self, steps: &[Step]) {
        for (what, kind, object, decision, tombstone) in steps {
            let context = format!("{}: {what}", self.label);
            let policy = ExitOnly::new(|e: &_, t: Option<&_>| (self.decide)(e, t));
            let assessment = assess(&policy, &self.tombstones, *kind, object)
                .unwrap_or_else(|e| panic!("{context}: {e}"));
            let (label, _) = eligibility_parts(&assessment.eligibility);
            let label = label.label();
            let seen = if assessment.act { "act" } else { label };
            assert_eq!(seen, *decision, "{context}");
            if assessment.act {
                self.notified.insert(assessment.facts.completion_key());
            }
            let held = self.tombstones.get(&assessment.facts.uid);
            let held = held.map(|entry| (entry.resource_version, entry.completed));
            let expected = (ResourceVersion::Word(tombstone.0), tombstone.1);
            assert_eq!(held, Some(expected), "{context}: tombstone after");
        }
    }
}

/// What happens, the event, the expected decision, the tombstone after.
type Step = (&'static str, EventKind, Value, &'static str, (u64, bool));

fn new(uid: &str, rv: &str) -> Value {
    workflow(uid, rv, "", None)
}

fn running(uid: &str, rv: &str) -> Value {
    workflow(uid, rv, "Running", None)
}

fn succeeded(rv: &str) -> Value {
    completed(U1, rv, "Succeeded")
}

#[test]
fn the_stale_copy_sequence_notifies_once_and_processes_the_recreated_workflow() {
    with_both(|decide, label| {
        let mut gate = Gate::new(decide, label);
        #[rustfmt::skip]
        let steps = [
            ("new", Added, new(U1, "100"), "process", (100, false)),
            ("running", Modified, running(U1, "101"), "process", (101, false)),
            ("progress", Modified, running(U1, "105"), "process", (105, false)),
            ("completed", Modified, succeeded("110"), "act", (110, true)),
            ("delayed stale copy", Modified, running(U1, "105"), "reject-stale", (110, true)),
            ("stale relist", Relisted, running(U1, "105"), "reject-stale", (110, true)),
            ("label update", Modified, succeeded("111"), "act", (111, true)),
            // Its DELETE carries the final object: eligible (notified from it had nobody
            // done so), the same completion, so no second notification.
            ("deleted", Deleted, succeeded("112"), "act", (112, true)),
            ("same name, new uid", Added, new(U2, "200"), "process", (200, false)),
            ("new uid running", Modified, running(U2, "201"), "process", (201, false)),
        ];
        gate.run(&steps);
        assert_eq!(gate.notified.len(), 1, "{label}: one notification for U1");
        let held = gate.tombstones.get(U1).map(|e| e.resource_version);
        assert_eq!(held, Some(ResourceVersion::Word(112)), "{label}");
    });
}

#[test]
fn a_stale_completion_does_not_lower_the_tombstone() {
    with_both(|decide, label| {
        let mut gate = Gate::new(decide, label);
        // A copy claiming another outcome at an older version, as a stale reconcile makes.
        let stale = workflow(U1, "105", "Error", Some("2026-08-04T01:30:00Z"));
        let unordered = completed(U1, "0105", "Failed");
        #[rustfmt::skip]
        let steps = [
            ("completed", Modified, succeeded("110"), "act", (110, true)),
            ("stale completion", Modified, stale, "reject-stale", (110, true)),
            ("unordered version", Modified, unordered, "reject-stale", (110, true)),
        ];
        gate.run(&steps);
        assert_eq!(gate.notified.len(), 1, "{label}");
    });
}

#[test]
fn a_retry_keeps_the_uid_and_is_eligible_and_notified_again() {
    with_both(|decide, label| {
        let mut gate = Gate::new(decide, label);
        let again = workflow(U1, "160", "Succeeded", Some("2026-08-04T02:00:00Z"));
        // `argo retry`: same uid, a newer version, the completed label removed.
        #[rustfmt::skip]
        let steps = [
            ("failed", Modified, completed(U1, "110", "Failed"), "act", (110, true)),
            ("retried", Modified, running(U1, "150"), "process", (150, false)),
            ("older running copy", Modified, running(U1, "140"), "requeue", (150, false)),
            ("completed again", Modified, again, "act", (160, true)),
        ];
        gate.run(&steps);
        assert_eq!(gate.notified.len(), 2, "{label}: one per completion");
    });
}

#[test]
fn after_the_ttl_a_stale_copy_gets_through_the_tombstone() {
    with_both(|decide, label| {
        let mut gate = Gate::new(decide, label);
        let stale = || running(U1, "105");
        gate.run(&[("completed", Modified, succeeded("110"), "act", (110, true))]);
        gate.clock.advance(TTL - Duration::from_secs(1));
        gate.run(&[("within ttl", Modified, stale(), "reject-stale", (110, true))]);
        gate.clock.advance(Duration::from_secs(1));
        // Only the fresh read before any side effect stops it now (see exit_notification.rs).
        gate.run(&[("after ttl", Modified, stale(), "process", (105, false))]);
    });
}

#[test]
fn after_a_restart_the_first_sighting_is_trusted() {
    with_both(|decide, label| {
        let mut before = Gate::new(decide, label);
        before.run(&[("completed", Modified, succeeded("110"), "act", (110, true))]);
        let mut after = Gate::new(decide, label);
        assert!(
            after.tombstones.is_empty(),
            "{label}: a new process starts empty"
        );
        #[rustfmt::skip]
        let steps = [
            ("stale copy after restart", Relisted, running(U1, "105"), "process", (105, false)),
            ("completion relisted", Relisted, succeeded("111"), "act", (111, true)),
        ];
        after.run(&steps);
    });
}

#[test]
fn completion_is_a_complete_phase_with_a_finished_at() {
    with_both(|decide, label| {
        let mut gate = Gate::new(decide, label);
        // Succeeded without finishedAt: not (yet) a completion to act on, but nothing may act
        // on an older copy of it either.
        let bare = workflow(U1, "110", "Succeeded", None);
        // Labelled completed while running: not a completion at all.
        let mut labelled = running(U1, "111");
        labelled["metadata"]["labels"]["workflows.argoproj.io/completed"] = "true".into();
        #[rustfmt::skip]
        let steps = [
            ("no finishedAt", Modified, bare, "process", (110, true)),
            ("labelled completed, running", Modified, labelled, "process", (111, false)),
        ];
        gate.run(&steps);
        assert!(gate.notified.is_empty(), "{label}");
    });
}

#[test]
fn a_retry_completing_again_within_the_same_second_has_a_key_of_its_own() {
    with_both(|decide, label| {
        let mut gate = Gate::new(decide, label);
        // `argo retry` resets startedAt to the retry's time; finishedAt lands in the same
        // second as the first completion's.
        let mut again = completed(U1, "160", "Failed");
        again["status"]["startedAt"] = FINISHED.into();
        #[rustfmt::skip]
        let steps = [
            ("failed", Modified, completed(U1, "110", "Failed"), "act", (110, true)),
            ("retried", Modified, running(U1, "150"), "process", (150, false)),
            ("failed again, same second", Modified, again, "act", (160, true)),
        ];
        gate.run(&steps);
        assert_eq!(gate.notified.len(), 2, "{label}: {:?}", gate.notified);
    });
}

/// A workflow without an exit handler.
fn plain(mut workflow: Value) -> Value {
    workflow["spec"]
        .as_object_mut()
        .expect("a spec")
        .remove("onExit");
    workflow
}

#[test]
fn notify_exit_handler_skips_completions_without_one_and_all_notifies_them() {
    with_both(|decide, label| {
        let mut gate = Gate::new(decide, label);
        #[rustfmt::skip]
        let steps = [
            ("running", Modified, plain(running(U1, "105")), "process", (105, false)),
            ("completed", Modified, plain(succeeded("110")), "skip", (110, true)),
            ("stale copy", Modified, plain(running(U1, "105")), "reject-stale", (110, true)),
        ];
        gate.run(&steps);
        assert!(gate.notified.is_empty(), "{label}");
    });
    with_both_settings(r#"{"notify":"all"}"#, |decide, label| {
        let mut gate = Gate::new(decide, label);
        gate.run(&[(
            "completed",
            Modified,
            plain(succeeded("110")),
            "act",
            (110, true),
        )]);
        assert_eq!(gate.notified.len(), 1, "{label}");
    });
}

#[test]
fn an_exit_handler_from_a_workflow_template_reaches_the_policy() {
    with_both(|decide, label| {
        let mut gate = Gate::new(decide, label);
        let mut from_template = plain(succeeded("110"));
        from_template["spec"]["workflowTemplateRef"] = serde_json::json!({"name": "nightly"});
        // What Argo stores: the merged spec, templates and all, beside its node bookkeeping.
        from_template["status"]["storedWorkflowTemplateSpec"] = serde_json::json!({
            "entrypoint": "etl",
            "hooks": {"exit": {"template": "notify-on-failure"}},
            "templates": [{"name": "etl", "container": {"image": "busybox"}}],
        });
        from_template["status"]["nodes"] = serde_json::json!({"n": {"id": "n"}});
        gate.run(&[("completed", Modified, from_template, "act", (110, true))]);
        assert_eq!(gate.notified.len(), 1, "{label}");
    });
}
