//! Bounded, jittered retries: pure arithmetic, the randomness passed in.

use std::time::Duration;

/// Delay before retry `attempt` (0 for the first retry): `base * 2^attempt`, capped at `cap`,
/// then scaled into its upper half by `unit` (in `[0, 1)`), so that many callers failing
/// together do not retry together.
pub fn backoff(attempt: u32, base: Duration, cap: Duration, unit: f64) -> Duration {
    let full = base.saturating_mul(1u32 << attempt.min(20)).min(cap);
    full.mul_f64(0.5 + 0.5 * unit.clamp(0.0, 1.0))
}

/// [`backoff`] with a random `unit`.
pub fn jittered(attempt: u32, base: Duration, cap: Duration) -> Duration {
    backoff(attempt, base, cap, rand::random::<f64>())
}

/// Whether an HTTP status is worth retrying soon: server errors, timeouts, throttling.
/// Other failures (a 4xx) are left for a later pass.
pub fn retryable_status(status: u16) -> bool {
    status >= 500 || status == 408 || status == 429
}
