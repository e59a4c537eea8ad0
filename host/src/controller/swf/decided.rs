//! Which SWFs were decided under the policy, settings and target in force, and at which
//! resourceVersion. A due resync of one of them waits while any SWF of the loop has not been
//! decided yet (new, changed since, or not since a target or policy change): a pass that
//! outlasts the resync decides every SWF once before it decides any twice. One found with
//! nothing to do is settled: its resync needs no new decision (the same object under the same
//! inputs decides the same), so a steady fleet costs no render per resync.

use std::collections::HashMap;
use std::sync::Mutex;

use super::own_writes::Fingerprint;

/// A decision with nothing to do, which the same object under the same inputs repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// Rendered, and the render was the live object (or it was what the loop wrote).
    UpToDate,
    /// The policy chose not to rebuild.
    Skipped,
}

#[derive(Default)]
pub struct Decided {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// What the decisions below were made under; another one forgets them all.
    fingerprint: Option<Fingerprint>,
    /// `namespace/name` -> the resourceVersion it was decided at, and whether it was settled
    /// (nothing to do) there.
    at: HashMap<String, Decision>,
}

struct Decision {
    rv: String,
    settled: Option<Settled>,
}

impl Decided {
    /// Whether `key` at `rv` was decided under `fingerprint` already: only a resync brings it.
    pub fn is_repeat(&self, key: &str, rv: &str, fingerprint: Fingerprint) -> bool {
        self.at(key, rv, fingerprint).is_some()
    }

    /// How `key` at `rv` was found with nothing to do under `fingerprint`, if it was.
    pub fn settled(&self, key: &str, rv: &str, fingerprint: Fingerprint) -> Option<Settled> {
        self.at(key, rv, fingerprint).flatten()
    }

    /// Whether `key` at `rv` was decided under `fingerprint`, and if so whether it was settled.
    fn at(&self, key: &str, rv: &str, fingerprint: Fingerprint) -> Option<Option<Settled>> {
        let state = self.lock();
        let decision = state.at.get(key)?;
        (state.fingerprint == Some(fingerprint) && decision.rv == rv).then_some(decision.settled)
    }

    pub fn record(&self, key: &str, rv: &str, fingerprint: Fingerprint, settled: Option<Settled>) {
        let mut state = self.lock();
        if state.fingerprint != Some(fingerprint) {
            state.fingerprint = Some(fingerprint);
            state.at.clear();
        }
        let decision = Decision {
            rv: rv.to_owned(),
            settled,
        };
        state.at.insert(key.to_owned(), decision);
    }

    pub fn forget(&self, key: &str) {
        self.lock().at.remove(key);
    }

    /// SWFs decided under `fingerprint`, of the `known` ones `present` says still exist. The
    /// deleted are forgotten here once they outnumber what is known.
    pub fn count(
        &self,
        fingerprint: Fingerprint,
        known: usize,
        present: impl Fn(&str) -> bool,
    ) -> usize {
        let mut state = self.lock();
        if state.fingerprint != Some(fingerprint) {
            return 0;
        }
        if state.at.len() > known {
            state.at.retain(|key, _| present(key));
        }
        state.at.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A repeat waits while some of the `known` SWFs are not decided yet.
pub fn waits(repeat: bool, known: usize, decided: usize) -> bool {
    repeat && decided < known
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fingerprint(target: &str) -> Fingerprint {
        Fingerprint::of(Some(target), "sha256:ab", "{}", "always")
    }

    #[test]
    fn a_resync_waits_until_every_swf_was_decided_under_what_is_in_force() {
        let decided = Decided::default();
        let now = fingerprint("2.17.0");
        decided.record("a/one", "10", now, None);
        assert!(decided.is_repeat("a/one", "10", now));
        // Changed since, or never decided: not a repeat.
        assert!(!decided.is_repeat("a/one", "11", now));
        assert!(!decided.is_repeat("a/two", "5", now));
        let all = |_: &str| true;
        assert!(waits(true, 2, decided.count(now, 2, all)));
        decided.record("a/two", "5", now, None);
        assert!(!waits(true, 2, decided.count(now, 2, all)));
        assert!(!waits(false, 3, 0), "a first decision never waits");

        // Another target: nothing counts as decided any more.
        let next = fingerprint("2.16.1");
        assert!(!decided.is_repeat("a/one", "10", next));
        assert_eq!(decided.count(next, 2, all), 0);
        decided.record("a/one", "10", next, None);
        assert_eq!(decided.count(next, 2, all), 1);
        assert!(!decided.is_repeat("a/two", "5", next));
    }

    #[test]
    fn deleted_swfs_stop_counting_once_they_outnumber_the_known() {
        let decided = Decided::default();
        let now = fingerprint("2.17.0");
        for key in ["a/one", "a/two", "a/three"] {
            decided.record(key, "1", now, None);
        }
        decided.forget("a/three");
        assert_eq!(decided.count(now, 2, |_| true), 2);
        // a/two deleted without a reconcile to say so: pruned against what exists.
        assert_eq!(decided.count(now, 1, |key| key == "a/one"), 1);
    }

    #[test]
    fn only_a_decision_with_nothing_to_do_at_the_same_version_and_inputs_is_settled() {
        let decided = Decided::default();
        let now = fingerprint("2.17.0");
        decided.record("a/current", "10", now, Some(Settled::UpToDate));
        decided.record("a/failed", "4", now, None);
        let up_to_date = Some(Settled::UpToDate);
        assert_eq!(decided.settled("a/current", "10", now), up_to_date);
        assert_eq!(
            decided.settled("a/failed", "4", now),
            None,
            "a failure is decided again"
        );
        assert_eq!(
            decided.settled("a/current", "11", now),
            None,
            "changed since"
        );
        assert_eq!(decided.settled("a/other", "10", now), None, "never decided");
        assert_eq!(
            decided.settled("a/current", "10", fingerprint("2.16.1")),
            None
        );
        decided.forget("a/current");
        assert_eq!(decided.settled("a/current", "10", now), None);
    }
}
