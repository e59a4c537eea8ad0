//! At most one policy-failure Event per SWF in a window: a policy that keeps failing on one SWF
//! (retried every 15 s after a timeout, every resync otherwise) says so once, not on every
//! attempt. Each decision is still counted and logged.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long after a policy-failure Event about an SWF another one is held back.
pub const POLICY_FAILURE_EVENT_WINDOW: Duration = Duration::from_secs(600);
/// Above this many remembered SWFs, the ones outside the window are forgotten.
const PRUNE_AT: usize = 4096;

pub struct EventLimiter {
    window: Duration,
    last: HashMap<String, Instant>,
    /// Size at which to prune next: twice what a prune kept, so that keys still within the
    /// window (all of them, for an endless window) are not scanned again on every call.
    prune_at: usize,
}

impl EventLimiter {
    pub fn new(window: Duration) -> Self {
        EventLimiter {
            window,
            last: HashMap::new(),
            prune_at: PRUNE_AT,
        }
    }

    /// Whether an Event about `key` may go out at `now`; if so, it is remembered.
    pub fn allow(&mut self, key: &str, now: Instant) -> bool {
        let within = |at: &Instant| now.saturating_duration_since(*at) < self.window;
        if self.last.get(key).is_some_and(within) {
            return false;
        }
        if self.last.len() >= self.prune_at {
            self.last.retain(|_, at| within(at));
            self.prune_at = (2 * self.last.len()).max(PRUNE_AT);
        }
        self.last.insert(key.to_owned(), now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_event_per_swf_per_window() {
        let window = Duration::from_secs(600);
        let mut limiter = EventLimiter::new(window);
        let start = Instant::now();
        assert!(limiter.allow("team-a/daily PolicyFailed", start));
        for seconds in [15, 30, 599] {
            let at = start + Duration::from_secs(seconds);
            assert!(
                !limiter.allow("team-a/daily PolicyFailed", at),
                "{seconds}s"
            );
        }
        assert!(
            limiter.allow(
                "team-a/hourly PolicyFailed",
                start + Duration::from_secs(15)
            ),
            "another SWF has its own allowance"
        );
        assert!(limiter.allow("team-a/daily PolicyFailed", start + window));
        assert!(!limiter.allow(
            "team-a/daily PolicyFailed",
            start + window + Duration::from_secs(1)
        ));
    }

    #[test]
    fn forgets_swfs_outside_the_window_once_it_holds_many() {
        let window = Duration::from_secs(60);
        let mut limiter = EventLimiter::new(window);
        let start = Instant::now();
        for i in 0..PRUNE_AT {
            assert!(limiter.allow(&format!("ns/swf-{i}"), start));
        }
        let later = start + window;
        assert!(limiter.allow("ns/new", later));
        assert_eq!(limiter.last.len(), 1, "the expired entries were dropped");
        assert!(!limiter.allow("ns/new", later));
    }

    #[test]
    fn an_endless_window_prunes_rarely_not_on_every_call() {
        let mut limiter = EventLimiter::new(Duration::MAX);
        let now = Instant::now();
        for i in 0..=PRUNE_AT {
            assert!(limiter.allow(&format!("ns/swf-{i}"), now));
        }
        // Nothing could be forgotten: the next prune waits until the map has doubled.
        assert_eq!(limiter.prune_at, 2 * PRUNE_AT);
        assert!(!limiter.allow("ns/swf-0", now));
    }
}
