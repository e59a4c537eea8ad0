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

/// One call's time budget, checked whenever an epoch deadline comes due. Reading a thread's
/// CPU time is a system call, so a call on a kept instance reads it only once it has lasted a
/// tick: the first deadline is one tick away, and there the CPU clock is anchored; time before
/// the anchor counts in full. Guests cannot wait in a host call (see `engine::link`), so wall
/// time before the anchor is spent computing or descheduled, never sleeping. A decision in a
/// fresh instance anchors at once ([`CallClock::start_anchored`]): beside instantiating, the
/// system call costs nothing, and then no time the thread spent descheduled counts against the
/// policy.
pub(crate) struct CallClock {
    wall_start: std::time::Instant,
    /// This thread's CPU time and the wall time at the anchor (a call runs on one thread).
    anchor: Option<(Duration, std::time::Instant)>,
    budget: Duration,
}

impl CallClock {
    /// Epoch ticks until the first check.
    pub(crate) const FIRST_DEADLINE: u64 = 1;

    /// A clock anchored at the first deadline.
    pub(crate) fn start(budget: Duration) -> Self {
        CallClock {
            wall_start: std::time::Instant::now(),
            anchor: None,
            budget,
        }
    }

    /// A clock anchored now: only CPU time counts, from the first instruction.
    pub(crate) fn start_anchored(budget: Duration) -> Self {
        let wall_start = std::time::Instant::now();
        CallClock {
            wall_start,
            anchor: Some((thread_cpu_time(), wall_start)),
            budget,
        }
    }

    /// Interrupt when the budget of CPU time (or ten times it of wall time) is spent; otherwise
    /// the ticks left of the budget.
    pub(crate) fn check(&mut self) -> wasmtime::UpdateDeadline {
        let cpu_now = thread_cpu_time();
        let (cpu_anchor, wall_anchor) = *self
            .anchor
            .get_or_insert_with(|| (cpu_now, std::time::Instant::now()));
        let used = (wall_anchor - self.wall_start) + cpu_now.saturating_sub(cpu_anchor);
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
