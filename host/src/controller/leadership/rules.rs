//! Leader-election rules over a Kubernetes Lease, as pure functions (the loop that reads and
//! writes the Lease is the parent module). Timings follow client-go: a leader that cannot
//! renew within the renew deadline (2/3 of the lease duration) stops writing, well before a
//! standby may take the lease over (after the full duration). Another holder's lease expires
//! as client-go judges it: once this replica has seen its record unchanged for the lease
//! duration, by its own clock; the holder's `renewTime` is never compared with this clock,
//! so a standby whose clock runs ahead does not take over a live lease.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

/// What the rules need from a Lease.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaseView {
    pub holder: Option<String>,
    pub renewed_at: Option<Timestamp>,
    pub duration: Duration,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// No Lease yet: create it, held by us.
    Create,
    /// We hold it: renew.
    Renew,
    /// Nobody holds it, or the holder's claim expired: take it over.
    TakeOver,
    /// Someone else holds a live claim.
    Follow { holder: String },
}

/// The step to take on `lease`, whose record this replica has seen unchanged for
/// `unchanged_for` (by its own monotonic clock; see [`Observed`]).
pub fn next_step(lease: Option<&LeaseView>, me: &str, unchanged_for: Duration) -> Step {
    let Some(lease) = lease else {
        return Step::Create;
    };
    match lease.holder.as_deref() {
        None | Some("") => Step::TakeOver,
        Some(holder) if holder == me => Step::Renew,
        Some(holder) => {
            if unchanged_for >= lease.duration {
                Step::TakeOver
            } else {
                Step::Follow {
                    holder: holder.to_string(),
                }
            }
        }
    }
}

/// A record as last seen, and when it was first seen so (client-go's `observedRecord` and
/// `observedTime`): any change to it (a renewal, another holder) starts the count again.
#[derive(Clone, Debug)]
pub struct Observed<T> {
    record: Option<T>,
    since: std::time::Instant,
}

impl<T: PartialEq> Observed<T> {
    pub fn new() -> Self {
        Observed {
            record: None,
            since: std::time::Instant::now(),
        }
    }

    /// Records `record` as seen at `now`; returns how long it has been seen unchanged.
    pub fn see(&mut self, record: Option<T>, now: std::time::Instant) -> Duration {
        if record != self.record {
            self.record = record;
            self.since = now;
        }
        now.saturating_duration_since(self.since)
    }
}

impl<T: PartialEq> Default for Observed<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// How long after its last successful renewal a leader may still write.
pub fn renew_deadline(duration: Duration) -> Duration {
    duration * 2 / 3
}

/// How often to try to acquire or renew.
pub fn retry_period(duration: Duration) -> Duration {
    (duration / 7).max(Duration::from_millis(200))
}

/// How long one acquire-or-renew round may wait on the API server. A leader must learn before
/// its renew deadline whether it still leads, so its round ends there (`leading_for`: time since
/// its last successful renewal); a replica that does not lead gets a whole renew deadline.
pub fn round_timeout(duration: Duration, leading_for: Option<Duration>) -> Duration {
    match leading_for {
        Some(elapsed) => renew_deadline(duration).saturating_sub(elapsed),
        None => renew_deadline(duration),
    }
}
