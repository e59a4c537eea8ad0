//! At most N writes per SWF per window: a fight with another writer (KFP's own reconcile, a
//! GitOps tool) that changes an SWF back after each write stops after N writes with one
//! `WriteLoop` Warning, instead of going on forever.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Above this many SWFs remembered, those without a write in the window are forgotten.
const PRUNE_AT: usize = 4096;

pub struct WriteBudget {
    limit: usize,
    window: Duration,
    writes: Mutex<Writes>,
}

struct Writes {
    by_swf: HashMap<String, VecDeque<Instant>>,
    prune_at: usize,
}

impl WriteBudget {
    pub fn new(limit: usize, window: Duration) -> Self {
        WriteBudget {
            limit: limit.max(1),
            window,
            writes: Mutex::new(Writes {
                by_swf: HashMap::new(),
                prune_at: PRUNE_AT,
            }),
        }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn window(&self) -> Duration {
        self.window
    }

    /// Whether `swf` may be written at `now`: fewer than the limit written in the window.
    pub fn allows(&self, swf: &str, now: Instant) -> bool {
        let mut writes = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        match writes.by_swf.get_mut(swf) {
            Some(times) => {
                forget_before(times, now, self.window);
                times.len() < self.limit
            }
            None => true,
        }
    }

    /// Counts a write of `swf` at `now`.
    pub fn record(&self, swf: &str, now: Instant) {
        let window = self.window;
        let mut writes = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        if writes.by_swf.len() >= writes.prune_at {
            writes.by_swf.retain(|_, times| {
                forget_before(times, now, window);
                !times.is_empty()
            });
            writes.prune_at = (2 * writes.by_swf.len()).max(PRUNE_AT);
        }
        let times = writes.by_swf.entry(swf.to_owned()).or_default();
        forget_before(times, now, window);
        times.push_back(now);
    }
}

fn forget_before(times: &mut VecDeque<Instant>, now: Instant, window: Duration) {
    while times
        .front()
        .is_some_and(|at| now.saturating_duration_since(*at) >= window)
    {
        times.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_holds_within_the_window_and_frees_up_as_writes_age() {
        let hour = Duration::from_secs(3600);
        let budget = WriteBudget::new(3, hour);
        let start = Instant::now();
        for minute in 0..3 {
            let at = start + Duration::from_secs(60 * minute);
            assert!(budget.allows("team-a/daily", at));
            budget.record("team-a/daily", at);
        }
        assert!(!budget.allows("team-a/daily", start + Duration::from_secs(600)));
        assert!(budget.allows("team-b/other", start + Duration::from_secs(600)));
        // The first write leaves the window: one more is allowed.
        assert!(budget.allows("team-a/daily", start + hour));
        budget.record("team-a/daily", start + hour);
        assert!(!budget.allows("team-a/daily", start + hour + Duration::from_secs(59)));
    }
}
