//! The bounded, expiring map the exit gate keeps tombstones in: uid -> entry, on moka.
//!
//! moka bounds it (`max_entries`, least recently used first out) and drops entries once they
//! have not been raised for the time to live. Whether an entry still *counts* is decided
//! against the injected [`Clock`], never moka's own: tests and `eval` move that clock by hand,
//! and an entry moka has not dropped yet is not trusted past its time either way.

use std::sync::Arc;
use std::time::Duration;

use moka::ops::compute::Op;
use moka::policy::EvictionPolicy;
use moka::sync::Cache;

use super::tombstone::{Clock, Entry, Phase, ResourceVersion, Sighting, UidKey, advance, is_live};

/// Bounded, expiring map of uid -> entry; liveness follows the injected clock. Cheap to clone.
#[derive(Clone)]
pub struct TombstoneCache {
    inner: Arc<Inner>,
}

struct Inner {
    entries: Cache<UidKey, Stored>,
    ttl: Duration,
    clock: Arc<dyn Clock>,
}

/// An entry as stored: the resourceVersion (one word unless it needs more), the clock
/// reading it was raised at, the phase and whether it is a tombstone proper.
#[derive(Clone)]
struct Stored {
    resource_version: ResourceVersion,
    raised_at_nanos: u64,
    phase: Phase,
    completed: bool,
}

impl From<Entry> for Stored {
    fn from(entry: Entry) -> Self {
        Stored {
            resource_version: entry.resource_version,
            raised_at_nanos: nanos(entry.raised_at),
            phase: entry.phase,
            completed: entry.completed,
        }
    }
}

impl From<Stored> for Entry {
    fn from(stored: Stored) -> Self {
        Entry {
            resource_version: stored.resource_version,
            phase: stored.phase,
            completed: stored.completed,
            raised_at: Duration::from_nanos(stored.raised_at_nanos),
        }
    }
}

impl TombstoneCache {
    /// Holds entries for `ttl` after they were recorded or last raised, and `max_entries` at
    /// most (the least recently used go first).
    pub fn new(ttl: Duration, max_entries: u64, clock: Arc<dyn Clock>) -> Self {
        let entries = Cache::builder()
            .max_capacity(max_entries.max(1))
            .eviction_policy(EvictionPolicy::lru())
            // Frees memory on moka's clock; whether an entry counts is decided on ours.
            .time_to_live(ttl.max(Duration::from_millis(1)))
            .build();
        TombstoneCache {
            inner: Arc::new(Inner {
                entries,
                ttl,
                clock,
            }),
        }
    }

    pub fn now(&self) -> Duration {
        self.inner.clock.now()
    }

    /// The live entry for a uid, if any.
    pub fn get(&self, uid: &str) -> Option<Entry> {
        let stored = self.inner.entries.get(&UidKey::new(uid))?;
        let entry = Entry::from(stored);
        is_live(&entry, self.now(), self.inner.ttl).then_some(entry)
    }

    /// Applies a sighting atomically for its uid; returns the entry now held.
    pub fn observe(&self, uid: &str, sighting: &Sighting) -> Option<Entry> {
        let ttl = self.inner.ttl;
        let clock = &self.inner.clock;
        let mut held = None;
        self.inner
            .entries
            .entry(UidKey::new(uid))
            .and_compute_with(|current| {
                // Read under the entry's lock, so that raised_at never goes back.
                let now = clock.now();
                let previous = current
                    .map(|stored| Entry::from(stored.into_value()))
                    .filter(|entry| is_live(entry, now, ttl));
                let next = advance(previous.clone(), sighting, now);
                held = next.clone();
                match next {
                    Some(entry) if Some(&entry) != previous.as_ref() => Op::Put(entry.into()),
                    _ => Op::Nop,
                }
            });
        held
    }

    /// Live entries held (walks them all: for tests and benchmarks).
    pub fn len(&self) -> u64 {
        let now = self.now();
        self.inner
            .entries
            .iter()
            .filter(|(_, stored)| is_live(&Entry::from(stored.clone()), now, self.inner.ttl))
            .count() as u64
    }

    /// Entries held, expired ones moka has not dropped yet included; cheap, for the gauge.
    pub fn approx_len(&self) -> u64 {
        self.inner.entries.entry_count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Lets moka finish its pending evictions now (it does so on its own as entries are
    /// written); for tests and benchmarks that count entries.
    pub fn settle(&self) {
        self.inner.entries.run_pending_tasks();
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}
