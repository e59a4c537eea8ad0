//! Leader-election rules over a Kubernetes Lease, as pure functions (the loop that reads and
//! writes the Lease is `controller::leader`). Timings follow client-go: a leader that cannot
//! renew within the renew deadline (2/3 of the lease duration) stops writing, well before a
//! standby may take the lease over (after the full duration).

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

pub fn next_step(lease: Option<&LeaseView>, me: &str, now: Timestamp) -> Step {
    let Some(lease) = lease else {
        return Step::Create;
    };
    match lease.holder.as_deref() {
        None | Some("") => Step::TakeOver,
        Some(holder) if holder == me => Step::Renew,
        Some(holder) => {
            let expired = lease.renewed_at.is_none_or(|renewed| {
                let lease_end = renewed.as_millisecond() + lease.duration.as_millis() as i64;
                lease_end < now.as_millisecond()
            });
            if expired {
                Step::TakeOver
            } else {
                Step::Follow {
                    holder: holder.to_string(),
                }
            }
        }
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
