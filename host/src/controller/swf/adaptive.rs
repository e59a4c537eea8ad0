//! How many SWF decisions and writes run at once: additive increase, multiplicative decrease.
//! The limit starts at a quarter of the maximum (`--concurrency`), grows by one per limit's
//! worth of reconciles that were not throttled, halves when the API server answers 429 Too Many
//! Requests (its priority and fairness shedding load), and nothing new starts until the
//! `Retry-After` it gave has passed.

use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The pure state: no clock, no waiting.
#[derive(Debug, Clone)]
pub struct Aimd {
    max: usize,
    limit: f64,
    in_flight: usize,
    paused_until: Option<Instant>,
}

impl Aimd {
    pub fn new(max: usize) -> Self {
        let max = max.max(1);
        Aimd {
            max,
            limit: max.div_ceil(4) as f64,
            in_flight: 0,
            paused_until: None,
        }
    }

    /// Whole slots allowed now.
    pub fn limit(&self) -> usize {
        (self.limit as usize).clamp(1, self.max)
    }

    /// Takes a slot, or says until when to wait (None: until a slot is freed).
    pub fn try_start(&mut self, now: Instant) -> Result<(), Option<Instant>> {
        if let Some(until) = self.paused_until {
            if until > now {
                return Err(Some(until));
            }
            self.paused_until = None;
        }
        if self.in_flight >= self.limit() {
            return Err(None);
        }
        self.in_flight += 1;
        Ok(())
    }

    /// A slot is freed after work the API server did not throttle: one more slot per limit's
    /// worth of those.
    pub fn succeeded(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.limit = (self.limit + 1.0 / self.limit).min(self.max as f64);
    }

    /// A slot is freed after a 429: half the slots, and nothing starts before `retry_after`.
    pub fn throttled(&mut self, now: Instant, retry_after: Duration) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.limit = (self.limit / 2.0).max(1.0);
        let until = now + retry_after;
        self.paused_until = Some(self.paused_until.map_or(until, |u| u.max(until)));
    }
}

/// [`Aimd`] shared by the reconciles, with waiting.
pub struct AdaptiveLimit {
    state: Mutex<Aimd>,
    freed: Notify,
    gauge: Gauge,
}

impl AdaptiveLimit {
    pub fn new(max: usize, gauge: Gauge) -> Self {
        let state = Aimd::new(max);
        gauge.set(state.limit() as i64);
        AdaptiveLimit {
            state: Mutex::new(state),
            freed: Notify::new(),
            gauge,
        }
    }

    pub async fn acquire(&self) -> Permit<'_> {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            // Registered before looking, so a slot freed meanwhile still wakes this one.
            freed.as_mut().enable();
            let wait = match self.lock().try_start(Instant::now()) {
                Ok(()) => {
                    return Permit {
                        limit: self,
                        throttled: None,
                    };
                }
                Err(wait) => wait,
            };
            match wait {
                Some(until) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(until) => {}
                        () = &mut freed => {}
                    }
                }
                None => freed.await,
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Aimd> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One slot; freeing it counts as a success unless [`Permit::throttled`] was called.
pub struct Permit<'a> {
    limit: &'a AdaptiveLimit,
    throttled: Option<Duration>,
}

impl Permit<'_> {
    /// The API server answered 429; `retry_after` is its `Retry-After` (or a second).
    pub fn throttled(&mut self, retry_after: Duration) {
        self.throttled = Some(retry_after);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let limit = {
            let mut state = self.limit.lock();
            match self.throttled {
                Some(retry_after) => state.throttled(Instant::now(), retry_after),
                None => state.succeeded(),
            }
            state.limit()
        };
        self.limit.gauge.set(limit as i64);
        self.limit.freed.notify_waiters();
    }
}

/// The `Retry-After` of a 429 answer, if `error` is one.
pub fn throttled_for(error: &kube::Error) -> Option<Duration> {
    match error {
        kube::Error::Api(status) if status.code == 429 => {
            let seconds = status
                .details
                .as_ref()
                .map_or(0, |details| details.retry_after_seconds);
            Some(Duration::from_secs(u64::from(seconds.max(1))))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_at_a_quarter_and_grows_to_the_maximum() {
        let mut aimd = Aimd::new(8);
        assert_eq!(aimd.limit(), 2);
        for _ in 0..100 {
            let now = Instant::now();
            aimd.try_start(now).expect("a slot");
            aimd.succeeded();
        }
        assert_eq!(aimd.limit(), 8);
    }

    #[test]
    fn never_lets_more_than_the_limit_start() {
        let mut aimd = Aimd::new(4);
        let now = Instant::now();
        assert!(aimd.try_start(now).is_ok());
        assert_eq!(aimd.try_start(now), Err(None));
    }

    #[test]
    fn a_429_halves_the_limit_and_pauses_until_retry_after() {
        let mut aimd = Aimd::new(16);
        let now = Instant::now();
        for _ in 0..4 {
            aimd.try_start(now).expect("a slot");
        }
        assert_eq!(aimd.limit(), 4);
        aimd.throttled(now, Duration::from_secs(2));
        assert_eq!(aimd.limit(), 2);
        assert_eq!(aimd.try_start(now), Err(Some(now + Duration::from_secs(2))));
        let later = now + Duration::from_secs(2);
        // Three still in flight, above the halved limit: nothing new starts.
        assert_eq!(aimd.try_start(later), Err(None));
        aimd.succeeded();
        aimd.succeeded();
        assert!(aimd.try_start(later).is_ok());
    }

    #[test]
    fn the_limit_never_falls_below_one() {
        let mut aimd = Aimd::new(2);
        let now = Instant::now();
        for _ in 0..10 {
            aimd.try_start(now + Duration::from_secs(60)).ok();
            aimd.throttled(now, Duration::from_secs(1));
        }
        assert_eq!(aimd.limit(), 1);
    }

    #[test]
    fn retry_after_comes_from_the_status_details() {
        let status: kube::core::Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "code": 429, "reason": "TooManyRequests",
            "details": {"retryAfterSeconds": 3},
        }))
        .expect("a status");
        let error = kube::Error::Api(Box::new(status));
        assert_eq!(throttled_for(&error), Some(Duration::from_secs(3)));
        let conflict: kube::core::Status =
            serde_json::from_value(serde_json::json!({"code": 409})).expect("a status");
        assert_eq!(throttled_for(&kube::Error::Api(Box::new(conflict))), None);
    }
}
