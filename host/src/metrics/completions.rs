//! `pipewarden_exit_completions{state}`: the completed workflows of this shard by where their
//! exit notification stands, kept current from the exit gate's watch. The marks the gate
//! writes on each workflow say `notified`, `pending` (claimed, delivery not confirmed),
//! `given-up` and `skipped` (finished before the catch-up window); `observed` is a completion
//! observe mode recorded (it writes no mark), for as long as its workflow is there unchanged.
//! Every replica reads the same marks; dashboards read the leader's. Kept per completed
//! workflow: a hash of its uid and of its completion, and names only for those observed (the
//! policy reports list them).

use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::fleet::{StateLabel, capped};
use crate::config::Shard;
use crate::engine::EventKind;
use crate::exit::event::WorkflowFacts;
use crate::exit::notification::Mark;
use crate::exit::seen::Seen;

/// Bytes of a name or namespace kept.
const NAME_MAX: usize = 253;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CompletionState {
    Notified,
    Pending,
    GivenUp,
    Skipped,
    Observed,
}

impl CompletionState {
    pub const ALL: [CompletionState; 5] = [
        CompletionState::Notified,
        CompletionState::Pending,
        CompletionState::GivenUp,
        CompletionState::Skipped,
        CompletionState::Observed,
    ];

    pub fn label(self) -> &'static str {
        match self {
            CompletionState::Notified => "notified",
            CompletionState::Pending => "pending",
            CompletionState::GivenUp => "given-up",
            CompletionState::Skipped => "skipped",
            CompletionState::Observed => "observed",
        }
    }

    /// What a workflow's mark for its current completion says.
    pub fn of_mark(mark: &Mark) -> CompletionState {
        match mark {
            Mark::Pending(_) => CompletionState::Pending,
            Mark::Sent(_) => CompletionState::Notified,
            Mark::Failed(_) => CompletionState::GivenUp,
            Mark::Skipped(_) => CompletionState::Skipped,
        }
    }
}

/// An observed completion, as the reports name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedCompletion {
    pub name: Box<str>,
    pub uid: Box<str>,
    pub phase: Box<str>,
    pub finished_at: Box<str>,
    /// Unix seconds when it was observed.
    pub since: i64,
}

struct Fact {
    /// None: complete, with no mark of its current completion, not observed.
    state: Option<CompletionState>,
    completion: u64,
    /// The watch that last showed it, and which of its lists (see [`CompletionFleet::listing`]).
    seen_in: (usize, u64),
    /// Observed completions only: where, for the reports.
    observed: Option<Box<(Box<str>, ObservedCompletion)>>,
}

#[derive(Default)]
struct Facts {
    by_uid: HashMap<u64, Fact>,
    /// Per watch, the list in progress.
    lists: Vec<u64>,
    /// Namespaces whose observed completions changed since the reports took them.
    changed: BTreeSet<Box<str>>,
}

pub struct CompletionFleet {
    gauge: Family<StateLabel, Gauge>,
    shard: Mutex<Shard>,
    facts: Mutex<Facts>,
}

impl CompletionFleet {
    pub fn register(registry: &mut Registry) -> CompletionFleet {
        let gauge = Family::<StateLabel, Gauge>::default();
        for state in CompletionState::ALL {
            drop(gauge.get_or_create(&label(state)));
        }
        registry.register(
            "exit_completions",
            "Completed workflows of this shard by where their exit notification stands",
            gauge.clone(),
        );
        CompletionFleet {
            gauge,
            shard: Mutex::new(Shard::default()),
            facts: Mutex::default(),
        }
    }

    /// Only this shard's workflows count.
    pub fn set_shard(&self, shard: Shard) {
        *self.shard.lock().unwrap_or_else(|p| p.into_inner()) = shard;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Facts> {
        self.facts.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn owns(&self, uid: &str) -> bool {
        self.shard
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .owns(uid)
    }

    /// Watch `watch` starts a list (its first, or again after a failure).
    pub fn listing(&self, watch: usize) {
        let mut facts = self.lock();
        if facts.lists.len() <= watch {
            facts.lists.resize(watch + 1, 0);
        }
        facts.lists[watch] += 1;
    }

    /// Watch `watch` finished its list: what it showed before and not again was deleted
    /// while it was not watching.
    pub fn relisted(&self, watch: usize) {
        let mut facts = self.lock();
        let list = facts.lists.get(watch).copied().unwrap_or_default();
        let stale: Vec<u64> = facts
            .by_uid
            .iter()
            .filter(|(_, fact)| fact.seen_in.0 == watch && fact.seen_in.1 < list)
            .map(|(uid, _)| *uid)
            .collect();
        for uid in stale {
            self.remove(&mut facts, uid);
        }
    }

    /// A workflow event of watch `watch`, as the gate read it.
    pub fn saw(&self, watch: usize, kind: EventKind, seen: &Seen) {
        if !self.owns(seen.uid()) {
            return;
        }
        let uid = hash(seen.uid());
        let mut facts = self.lock();
        if matches!(kind, EventKind::Deleted) || !seen.facts.complete {
            self.remove(&mut facts, uid);
            return;
        }
        let completion = hash(&seen.facts.completion_key());
        let list = facts.lists.get(watch).copied().unwrap_or_default();
        let marked = seen.own_mark().map(CompletionState::of_mark);
        let kept = facts.by_uid.get(&uid).and_then(|fact| {
            let observed = fact.state == Some(CompletionState::Observed);
            (observed && fact.completion == completion && marked.is_none())
                .then(|| fact.observed.clone())
        });
        let fact = match kept {
            Some(observed) => Fact {
                state: Some(CompletionState::Observed),
                completion,
                seen_in: (watch, list),
                observed,
            },
            None => Fact {
                state: marked,
                completion,
                seen_in: (watch, list),
                observed: None,
            },
        };
        self.put(&mut facts, uid, fact);
    }

    /// Observe mode recorded this completion (an `ExitNotificationObserved` Event); a mark of
    /// its own, written by a controller that notifies, says more and is kept.
    pub fn observed(&self, seen: &WorkflowFacts) {
        if !self.owns(&seen.uid) {
            return;
        }
        let uid = hash(&seen.uid);
        let completion = hash(&seen.completion_key());
        let mut facts = self.lock();
        let seen_in = match facts.by_uid.get(&uid) {
            Some(fact) if fact.completion == completion && fact.state.is_none() => fact.seen_in,
            // Marked meanwhile, another completion, or not shown by the watch (yet).
            _ => return,
        };
        let observed = ObservedCompletion {
            name: capped(&seen.name, NAME_MAX),
            uid: capped(&seen.uid, NAME_MAX),
            phase: capped(&seen.phase_text, NAME_MAX),
            finished_at: capped(seen.finished_at.as_deref().unwrap_or("-"), NAME_MAX),
            since: super::fleet::unix_now(),
        };
        let fact = Fact {
            state: Some(CompletionState::Observed),
            completion,
            seen_in,
            observed: Some(Box::new((capped(&seen.namespace, NAME_MAX), observed))),
        };
        self.put(&mut facts, uid, fact);
    }

    fn put(&self, facts: &mut Facts, uid: u64, fact: Fact) {
        let now = fact.state;
        let place = fact.observed.as_ref().map(|o| o.0.clone());
        let before = facts.by_uid.insert(uid, fact);
        let was = before.as_ref().and_then(|f| f.state);
        if was != now {
            self.count(was, -1);
            self.count(now, 1);
        }
        let before_place = before.and_then(|f| f.observed).map(|o| o.0);
        for namespace in [before_place, place].into_iter().flatten() {
            if was != now {
                facts.changed.insert(namespace);
            }
        }
    }

    fn remove(&self, facts: &mut Facts, uid: u64) {
        if let Some(gone) = facts.by_uid.remove(&uid) {
            self.count(gone.state, -1);
            if let Some(observed) = gone.observed {
                facts.changed.insert(observed.0);
            }
        }
    }

    fn count(&self, state: Option<CompletionState>, by: i64) {
        if let Some(state) = state {
            self.gauge.get_or_create(&label(state)).inc_by(by);
        }
    }

    /// Completions by state.
    pub fn counts(&self) -> Vec<(CompletionState, i64)> {
        CompletionState::ALL
            .iter()
            .map(|state| (*state, self.gauge.get_or_create(&label(*state)).get()))
            .collect()
    }

    /// Namespaces whose observed completions changed since the last call.
    pub fn take_changed(&self) -> BTreeSet<Box<str>> {
        std::mem::take(&mut self.lock().changed)
    }

    /// Namespaces with observed completions now.
    pub fn namespaces(&self) -> BTreeSet<Box<str>> {
        self.lock()
            .by_uid
            .values()
            .filter_map(|fact| fact.observed.as_ref().map(|o| o.0.clone()))
            .collect()
    }

    /// The observed completions of `namespace`, by name.
    pub fn observed_in(&self, namespace: &str) -> Vec<ObservedCompletion> {
        let mut found: Vec<ObservedCompletion> = self
            .lock()
            .by_uid
            .values()
            .filter_map(|fact| fact.observed.as_deref())
            .filter(|(place, _)| &**place == namespace)
            .map(|(_, observed)| observed.clone())
            .collect();
        found.sort_by(|a, b| a.name.cmp(&b.name));
        found
    }
}

fn label(state: CompletionState) -> StateLabel {
    StateLabel {
        state: state.label().to_owned(),
    }
}

/// A fixed 64-bit digest (the std hasher with its fixed keys): uids and completion keys are
/// kept as this, not as text.
fn hash(text: &str) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn workflow(uid: &str, phase: &str, mark: Option<&str>) -> Seen {
        let mut object = json!({
            "metadata": {"name": format!("wf-{uid}"), "namespace": "ns", "uid": uid,
                         "resourceVersion": "1", "annotations": {}},
            "status": {"phase": phase, "startedAt": "a", "finishedAt": "b"}
        });
        if let Some(state) = mark {
            object["metadata"]["annotations"]["pipewarden.io/exit-notification"] =
                json!(format!("{state}/{uid}/a/b/{phase}"));
        }
        Seen::of(&object).unwrap()
    }

    fn counts(fleet: &CompletionFleet) -> Vec<i64> {
        fleet.counts().into_iter().map(|(_, n)| n).collect()
    }

    #[test]
    fn marks_and_observations_count_once_per_completed_workflow() {
        let fleet = CompletionFleet::register(&mut Registry::default());
        fleet.listing(0);
        fleet.saw(
            0,
            EventKind::Relisted,
            &workflow("a", "Succeeded", Some("sent")),
        );
        fleet.saw(
            0,
            EventKind::Relisted,
            &workflow("b", "Failed", Some("pending")),
        );
        fleet.saw(0, EventKind::Relisted, &workflow("c", "Succeeded", None));
        fleet.saw(0, EventKind::Relisted, &workflow("d", "Running", None));
        fleet.relisted(0);
        assert_eq!(counts(&fleet), [1, 1, 0, 0, 0]);
        // b's claim ends in a give-up; c is observed, and seen again unchanged.
        fleet.saw(
            0,
            EventKind::Modified,
            &workflow("b", "Failed", Some("failed")),
        );
        fleet.observed(&workflow("c", "Succeeded", None).facts);
        fleet.saw(0, EventKind::Modified, &workflow("c", "Succeeded", None));
        assert_eq!(counts(&fleet), [1, 0, 1, 0, 1]);
        assert_eq!(fleet.take_changed(), BTreeSet::from(["ns".into()]));
        let observed = fleet.observed_in("ns");
        assert_eq!(
            (&*observed[0].name, &*observed[0].phase),
            ("wf-c", "Succeeded")
        );
        // Retried: running again, nothing counts for it until it completes again.
        fleet.saw(0, EventKind::Modified, &workflow("c", "Running", None));
        assert_eq!(counts(&fleet), [1, 0, 1, 0, 0]);
        fleet.saw(
            0,
            EventKind::Deleted,
            &workflow("a", "Succeeded", Some("sent")),
        );
        assert_eq!(counts(&fleet), [0, 0, 1, 0, 0]);
    }

    #[test]
    fn a_fresh_list_drops_workflows_deleted_while_the_watch_was_down() {
        let fleet = CompletionFleet::register(&mut Registry::default());
        fleet.listing(0);
        fleet.saw(
            0,
            EventKind::Relisted,
            &workflow("a", "Succeeded", Some("sent")),
        );
        fleet.saw(
            0,
            EventKind::Relisted,
            &workflow("b", "Succeeded", Some("sent")),
        );
        fleet.relisted(0);
        fleet.listing(0);
        fleet.saw(
            0,
            EventKind::Relisted,
            &workflow("a", "Succeeded", Some("sent")),
        );
        fleet.relisted(0);
        assert_eq!(counts(&fleet), [1, 0, 0, 0, 0]);
    }

    #[test]
    fn another_shards_workflows_do_not_count() {
        let fleet = CompletionFleet::register(&mut Registry::default());
        let shard = Shard::parse("1/2").unwrap();
        fleet.set_shard(shard);
        let (mine, theirs) = (0..64)
            .map(|i| format!("uid-{i}"))
            .partition::<Vec<_>, _>(|uid| shard.owns(uid));
        for uid in mine.iter().chain(&theirs) {
            fleet.saw(
                0,
                EventKind::Modified,
                &workflow(uid, "Succeeded", Some("sent")),
            );
        }
        assert_eq!(counts(&fleet)[0], mine.len() as i64);
    }
}
