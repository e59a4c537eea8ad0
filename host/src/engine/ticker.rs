//! Advances the engine epoch on a fixed tick, so per-call deadlines can interrupt a guest.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wasmtime::Engine;

/// Deadline granularity: a deadline fires between `timeout` and `timeout + TICK` (plus
/// scheduling delay).
pub(crate) const TICK: Duration = Duration::from_millis(1);

/// Stops its thread when dropped.
pub(crate) struct EpochTicker {
    stop: Arc<AtomicBool>,
}

impl EpochTicker {
    pub(crate) fn start(engine: &Engine) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let engine = engine.clone();
        let flag = stop.clone();
        std::thread::Builder::new()
            .name("policy-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(TICK);
                    engine.increment_epoch();
                }
            })?;
        Ok(EpochTicker { stop })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A deadline counts the CPU time the guest used, so a call descheduled on a busy node is not
/// cut short; wall time is still capped at this many deadlines.
const WALL_CAP_FACTOR: u32 = 10;

/// One call's time budget, checked whenever an epoch deadline comes due.
pub(crate) struct CallClock {
    /// This thread's CPU time when the call started (a call runs on one thread).
    cpu_start: Duration,
    wall_start: std::time::Instant,
    budget: Duration,
}

impl CallClock {
    pub(crate) fn start(budget: Duration) -> Self {
        CallClock {
            cpu_start: thread_cpu_time(),
            wall_start: std::time::Instant::now(),
            budget,
        }
    }

    /// Interrupt when the budget of CPU time (or ten times it of wall time) is spent; otherwise
    /// the ticks left of the budget.
    pub(crate) fn check(&self) -> wasmtime::UpdateDeadline {
        let used = thread_cpu_time().saturating_sub(self.cpu_start);
        if used >= self.budget || self.wall_start.elapsed() >= self.budget * WALL_CAP_FACTOR {
            wasmtime::UpdateDeadline::Interrupt
        } else {
            wasmtime::UpdateDeadline::Continue(ticks_for(self.budget - used))
        }
    }
}

fn thread_cpu_time() -> Duration {
    cpu_time::ThreadTime::now().as_duration()
}

/// Epoch ticks that cover `timeout`, at least one.
pub(crate) fn ticks_for(timeout: Duration) -> u64 {
    (timeout.as_micros().div_ceil(TICK.as_micros())).max(1) as u64
}
