//! The tombstone rules: per workflow uid, the highest resourceVersion seen, and whether the
//! workflow had completed by then. Pure functions over an explicit clock; the bounded
//! in-memory cache the controller keeps them in is in `cache`.

use std::time::{Duration, Instant};

use crate::engine;

pub use argo_rules::{Phase, ResourceVersion};

/// What the host remembers about one uid. Small on purpose: one per recent workflow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub resource_version: ResourceVersion,
    pub phase: Phase,
    /// Seen completed (or deleted) at `resource_version`: a tombstone proper.
    pub completed: bool,
    /// When the entry was created or last raised, on the cache's clock.
    pub raised_at: Duration,
}

/// One observation of a workflow, as the rules need it.
#[derive(Clone, Copy, Debug)]
pub struct Sighting<'a> {
    pub resource_version: &'a str,
    pub phase: Phase,
    /// In a complete phase (Succeeded, Failed, Error).
    pub complete: bool,
    pub deleted: bool,
}

/// Kubernetes resourceVersions compare as decimal integers of any length: no sign, no leading
/// zeros, not 0. Anything else is `None`, and the rules fail open on it.
pub fn parse_resource_version(rv: &str) -> Option<ResourceVersion> {
    ResourceVersion::parse(rv)
}

/// The entry after a sighting. The resourceVersion never goes down; an unparseable one
/// changes nothing. A deleted workflow is treated as finished: nothing may act on a copy of it.
pub fn advance(previous: Option<Entry>, sighting: &Sighting, now: Duration) -> Option<Entry> {
    let Some(resource_version) = parse_resource_version(sighting.resource_version) else {
        return previous;
    };
    match previous {
        Some(entry) if resource_version <= entry.resource_version => Some(entry),
        _ => Some(Entry {
            resource_version,
            phase: sighting.phase,
            completed: sighting.complete || sighting.deleted,
            raised_at: now,
        }),
    }
}

/// Whether an entry still counts at `now`.
pub fn is_live(entry: &Entry, now: Duration, ttl: Duration) -> bool {
    now.saturating_sub(entry.raised_at) < ttl
}

/// The record handed to the policy.
pub fn to_policy_tombstone(entry: &Entry, now: Duration) -> engine::Tombstone {
    engine::Tombstone {
        resource_version: entry.resource_version.to_string(),
        phase: entry.phase.as_str().to_string(),
        completed: entry.completed,
        age_seconds: now.saturating_sub(entry.raised_at).as_secs(),
    }
}

/// Monotonic time for the cache; tests substitute a clock they move by hand.
pub trait Clock: Send + Sync {
    fn now(&self) -> Duration;
}

/// Time since the clock was made.
pub struct MonotonicClock(Instant);

impl MonotonicClock {
    pub fn new() -> Self {
        MonotonicClock(Instant::now())
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

/// A clock moved by hand: for tests, and for `eval`'s simulated time.
#[derive(Default)]
pub struct ManualClock(std::sync::atomic::AtomicU64);

impl ManualClock {
    pub fn advance(&self, by: Duration) {
        self.0
            .fetch_add(by.as_nanos() as u64, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.0.load(std::sync::atomic::Ordering::SeqCst))
    }
}

/// A uid packed into 16 bytes (Kubernetes uids are UUIDs); anything else is hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UidKey(u128);

impl UidKey {
    pub fn new(uid: &str) -> UidKey {
        let mut value: u128 = 0;
        let mut digits = 0;
        for byte in uid.bytes().filter(|b| *b != b'-') {
            let Some(digit) = (byte as char).to_digit(16) else {
                return UidKey::hashed(uid);
            };
            digits += 1;
            if digits > 32 {
                return UidKey::hashed(uid);
            }
            value = value << 4 | u128::from(digit);
        }
        if digits == 32 {
            UidKey(value)
        } else {
            UidKey::hashed(uid)
        }
    }

    fn hashed(uid: &str) -> UidKey {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(uid.as_bytes());
        UidKey(u128::from_be_bytes(
            digest[..16].try_into().expect("16 bytes"),
        ))
    }

    pub fn as_u128(self) -> u128 {
        self.0
    }

    /// The key as two words (8-byte aligned, where u128 is 16).
    pub fn parts(self) -> [u64; 2] {
        [(self.0 >> 64) as u64, self.0 as u64]
    }
}
