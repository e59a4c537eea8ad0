//! The watch echoes every write the loop makes. An echo needs no new decision when the object
//! is exactly what the write returned (same resourceVersion) and the inputs that decided the
//! write (target version, policy digest, settings, rebuild policy) are still in force: the
//! decision would come out the same. Each write is remembered until the next reconcile of its
//! SWF, which consumes it (later resyncs are `decided`'s).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash as _, Hasher as _};
use std::sync::Mutex;

/// What decided a write; equal fingerprints mean the same decision inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint(u64);

impl Fingerprint {
    pub fn of(target: Option<&str>, digest: &str, settings: &str, rebuild_policy: &str) -> Self {
        let mut hasher = DefaultHasher::new();
        (target, digest, settings, rebuild_policy).hash(&mut hasher);
        Fingerprint(hasher.finish())
    }
}

#[derive(Default)]
pub struct OwnWrites {
    /// (namespace, name) -> the resourceVersion the write returned, and what decided it.
    written: Mutex<HashMap<(String, String), (String, Fingerprint)>>,
}

impl OwnWrites {
    pub fn remember(&self, namespace: &str, name: &str, rv: &str, fingerprint: Fingerprint) {
        self.lock().insert(
            (namespace.to_owned(), name.to_owned()),
            (rv.to_owned(), fingerprint),
        );
    }

    /// Whether this version of the SWF is the echo of a write decided under `fingerprint`.
    /// Forgets the write either way.
    pub fn is_echo(&self, namespace: &str, name: &str, rv: &str, fingerprint: Fingerprint) -> bool {
        let key = (namespace.to_owned(), name.to_owned());
        self.lock()
            .remove(&key)
            .is_some_and(|(written, decided_by)| written == rv && decided_by == fingerprint)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), (String, Fingerprint)>> {
        self.written
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl super::SwfLoop {
    /// The decision inputs in force now.
    pub(super) fn fingerprint(&self) -> Fingerprint {
        let loaded = self.ctx.policy.current();
        let target = self.target.borrow().clone();
        // What the loop may do is a decision input too: a hold lifted decides afresh.
        let standing = format!(
            "{} {:?}",
            crate::swf::rebuild_policy_name(self.rebuild_policy),
            *self.serving.borrow()
        );
        Fingerprint::of(
            target.as_deref(),
            loaded.policy.digest(),
            &loaded.settings,
            &standing,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> Fingerprint {
        Fingerprint::of(Some("2.17.0"), "sha256:abc", "{}", "always")
    }

    #[test]
    fn the_echo_of_a_write_is_recognised_once() {
        let writes = OwnWrites::default();
        writes.remember("team-a", "daily", "105", inputs());
        assert!(writes.is_echo("team-a", "daily", "105", inputs()));
        // Consumed: the resync after it decides again.
        assert!(!writes.is_echo("team-a", "daily", "105", inputs()));
    }

    #[test]
    fn another_version_or_other_inputs_need_a_decision() {
        let writes = OwnWrites::default();
        writes.remember("team-a", "daily", "105", inputs());
        assert!(!writes.is_echo("team-a", "daily", "106", inputs()));
        for changed in [
            Fingerprint::of(Some("2.18.0"), "sha256:abc", "{}", "always"),
            Fingerprint::of(Some("2.17.0"), "sha256:def", "{}", "always"),
            Fingerprint::of(Some("2.17.0"), "sha256:abc", "{\"a\":1}", "always"),
            Fingerprint::of(Some("2.17.0"), "sha256:abc", "{}", "on-version-change"),
            Fingerprint::of(None, "sha256:abc", "{}", "always"),
        ] {
            writes.remember("team-a", "daily", "105", inputs());
            assert!(!writes.is_echo("team-a", "daily", "105", changed));
        }
    }

    #[test]
    fn swfs_are_told_apart_by_namespace_and_name() {
        let writes = OwnWrites::default();
        writes.remember("team-a", "daily", "105", inputs());
        assert!(!writes.is_echo("team-b", "daily", "105", inputs()));
        assert!(writes.is_echo("team-a", "daily", "105", inputs()));
    }
}
