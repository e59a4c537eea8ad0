//! Which SWFs were decided under the policy, settings and target in force, and at which
//! resourceVersion. A due resync of one of them waits while any SWF of the loop has not been
//! decided yet (new, changed since, or not since a target or policy change): a pass that
//! outlasts the resync decides every SWF once before it decides any twice.

use std::collections::HashMap;
use std::sync::Mutex;

use super::own_writes::Fingerprint;

#[derive(Default)]
pub struct Decided {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// What the decisions below were made under; another one forgets them all.
    fingerprint: Option<Fingerprint>,
    /// `namespace/name` -> the resourceVersion it was decided at.
    at: HashMap<String, String>,
}

impl Decided {
    /// Whether `key` at `rv` was decided under `fingerprint` already: only a resync brings it.
    pub fn is_repeat(&self, key: &str, rv: &str, fingerprint: Fingerprint) -> bool {
        let state = self.lock();
        state.fingerprint == Some(fingerprint) && state.at.get(key).is_some_and(|at| at == rv)
    }

    pub fn record(&self, key: &str, rv: &str, fingerprint: Fingerprint) {
        let mut state = self.lock();
        if state.fingerprint != Some(fingerprint) {
            state.fingerprint = Some(fingerprint);
            state.at.clear();
        }
        state.at.insert(key.to_owned(), rv.to_owned());
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
        decided.record("a/one", "10", now);
        assert!(decided.is_repeat("a/one", "10", now));
        // Changed since, or never decided: not a repeat.
        assert!(!decided.is_repeat("a/one", "11", now));
        assert!(!decided.is_repeat("a/two", "5", now));
        let all = |_: &str| true;
        assert!(waits(true, 2, decided.count(now, 2, all)));
        decided.record("a/two", "5", now);
        assert!(!waits(true, 2, decided.count(now, 2, all)));
        assert!(!waits(false, 3, 0), "a first decision never waits");

        // Another target: nothing counts as decided any more.
        let next = fingerprint("2.16.1");
        assert!(!decided.is_repeat("a/one", "10", next));
        assert_eq!(decided.count(next, 2, all), 0);
        decided.record("a/one", "10", next);
        assert_eq!(decided.count(next, 2, all), 1);
        assert!(!decided.is_repeat("a/two", "5", next));
    }

    #[test]
    fn deleted_swfs_stop_counting_once_they_outnumber_the_known() {
        let decided = Decided::default();
        let now = fingerprint("2.17.0");
        for key in ["a/one", "a/two", "a/three"] {
            decided.record(key, "1", now);
        }
        decided.forget("a/three");
        assert_eq!(decided.count(now, 2, |_| true), 2);
        // a/two deleted without a reconcile to say so: pruned against what exists.
        assert_eq!(decided.count(now, 1, |key| key == "a/one"), 1);
    }
}
