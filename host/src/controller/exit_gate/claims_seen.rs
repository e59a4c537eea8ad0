//! Another holder's claims as this replica has seen them: each claim, and since when (by this
//! replica's monotonic clock) it has been seen unchanged. A claim expires as client-go judges a
//! Lease: once seen unchanged for its time to live, never by comparing the time it names with
//! this replica's clock, so hosts whose clocks disagree do not take over each other's live
//! claims. Bounded: entries not looked at for a while are dropped.

use std::time::{Duration, Instant};

use crate::exit::claim::Claim;

pub(super) struct ClaimsSeen {
    /// Completion key -> (the claim as seen, first seen so at).
    seen: moka::sync::Cache<String, (Claim, Instant)>,
}

impl ClaimsSeen {
    /// Remembers up to `capacity` claims, each until it was not looked at for `remember`.
    pub fn new(remember: Duration, capacity: u64) -> ClaimsSeen {
        ClaimsSeen {
            seen: moka::sync::Cache::builder()
                .max_capacity(capacity.max(1))
                .time_to_idle(remember.max(Duration::from_secs(1)))
                .build(),
        }
    }

    /// How long `claim` on the completion `key` has been seen unchanged, counting from now
    /// when it is new (or changed).
    pub fn unchanged_for(&self, key: &str, claim: &Claim) -> Duration {
        let now = Instant::now();
        let since = match self.seen.get(key) {
            Some((known, since)) if known == *claim => since,
            _ => {
                self.seen.insert(key.to_owned(), (claim.clone(), now));
                now
            }
        };
        now.saturating_duration_since(since)
    }
}
