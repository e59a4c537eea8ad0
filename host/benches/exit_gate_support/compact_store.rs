//! The tombstone store the exit gate used before it moved to moka, kept here as the exit-gate
//! bench's baseline for bytes per tombstone: uid -> entry in shards behind mutexes, one
//! hash-map slot and one expiry-queue slot per uid, resourceVersions as u64 (so it could not
//! hold one past 64 bits).

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use pipewarden::exit::tombstone::{
    Clock, Entry, Phase, ResourceVersion, Sighting, UidKey, advance, is_live,
};

const SHARDS: usize = 16;

/// Bounded, expiring map of uid -> entry; expiry follows the injected clock. Cheap to clone.
#[derive(Clone)]
pub struct CompactStore {
    inner: Arc<Inner>,
}

struct Inner {
    shards: Vec<Mutex<Shard>>,
    ttl: Duration,
    per_shard: usize,
    clock: Arc<dyn Clock>,
}

/// An entry as stored: 24 bytes.
#[derive(Clone, Copy)]
struct Stored {
    resource_version: u64,
    raised_at_nanos: u64,
    phase: Phase,
    completed: bool,
}

impl From<Entry> for Stored {
    fn from(entry: Entry) -> Self {
        Stored {
            resource_version: match entry.resource_version {
                ResourceVersion::Word(word) => word,
                ResourceVersion::Wide(_) => u64::MAX,
            },
            raised_at_nanos: nanos(entry.raised_at),
            phase: entry.phase,
            completed: entry.completed,
        }
    }
}

impl From<Stored> for Entry {
    fn from(stored: Stored) -> Self {
        Entry {
            resource_version: ResourceVersion::Word(stored.resource_version),
            phase: stored.phase,
            completed: stored.completed,
            raised_at: Duration::from_nanos(stored.raised_at_nanos),
        }
    }
}

type Key = [u64; 2];

#[derive(Default)]
struct Shard {
    entries: HashMap<Key, Stored>,
    /// Keys in the order they were raised, oldest first, with the time they were queued at.
    /// An entry raised again keeps its slot until the slot reaches the front.
    expiry: VecDeque<(u64, Key)>,
}

impl Shard {
    /// Drops entries expired at `now` and, while over `capacity`, the least recently raised.
    fn sweep(&mut self, now: u64, ttl: u64, capacity: usize) {
        while let Some(&(queued, key)) = self.expiry.front() {
            if self.entries.len() <= capacity && now.saturating_sub(queued) < ttl {
                break;
            }
            self.expiry.pop_front();
            match self.entries.get(&key) {
                Some(stored) if stored.raised_at_nanos > queued => {
                    // Raised since it was queued: back in line, keeping the queue in order.
                    let back = self.expiry.back().map_or(0, |(at, _)| *at);
                    self.expiry
                        .push_back((stored.raised_at_nanos.max(back), key));
                }
                Some(_) => {
                    self.entries.remove(&key);
                }
                None => {}
            }
        }
    }
}

impl CompactStore {
    /// Holds entries for `ttl` after they were recorded or last raised, and about
    /// `max_entries` at most (the least recently raised go first).
    pub fn new(ttl: Duration, max_entries: u64, clock: Arc<dyn Clock>) -> Self {
        let max_entries = usize::try_from(max_entries).unwrap_or(usize::MAX);
        CompactStore {
            inner: Arc::new(Inner {
                shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
                ttl,
                per_shard: max_entries.div_ceil(SHARDS).max(1),
                clock,
            }),
        }
    }

    pub fn now(&self) -> Duration {
        self.inner.clock.now()
    }

    /// The live entry for a uid, if any.
    pub fn get(&self, uid: &str) -> Option<Entry> {
        let key = UidKey::new(uid).parts();
        let (shard, now) = self.lock(key);
        let entry = Entry::from(*shard.entries.get(&key)?);
        is_live(&entry, now, self.inner.ttl).then_some(entry)
    }

    /// Applies a sighting atomically for its uid; returns the entry now held.
    pub fn observe(&self, uid: &str, sighting: &Sighting) -> Option<Entry> {
        let key = UidKey::new(uid).parts();
        let (mut shard, now) = self.lock(key);
        let previous = shard
            .entries
            .get(&key)
            .map(|stored| Entry::from(*stored))
            .filter(|entry| is_live(entry, now, self.inner.ttl));
        let next = advance(previous.clone(), sighting, now);
        if let Some(entry) = next.clone()
            && next != previous
        {
            if shard.entries.insert(key, entry.into()).is_none() {
                shard.expiry.push_back((nanos(now), key));
            }
            if shard.entries.len() > self.inner.per_shard {
                shard.sweep(nanos(now), nanos(self.inner.ttl), self.inner.per_shard);
            }
        }
        next
    }

    /// Entries held, after dropping the expired ones.
    pub fn len(&self) -> u64 {
        (0..SHARDS)
            .map(|i| self.lock_shard(i).0.entries.len() as u64)
            .sum()
    }

    /// Entries held, expired ones not yet dropped included; cheap, for the gauge.
    pub fn approx_len(&self) -> u64 {
        let shards = &self.inner.shards;
        shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).entries.len() as u64)
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The shard of `key`, swept, and the time read under its lock (so that the shard's
    /// expiry queue stays in time order).
    fn lock(&self, key: Key) -> (MutexGuard<'_, Shard>, Duration) {
        self.lock_shard((key[1] % SHARDS as u64) as usize)
    }

    fn lock_shard(&self, index: usize) -> (MutexGuard<'_, Shard>, Duration) {
        // A panic elsewhere while holding the lock cannot leave a shard half-updated.
        let mut shard = self.inner.shards[index]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = self.inner.clock.now();
        let ttl = nanos(self.inner.ttl);
        shard.sweep(nanos(now), ttl, self.inner.per_shard);
        (shard, now)
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}
