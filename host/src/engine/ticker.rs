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

/// Epoch ticks that cover `timeout`, at least one.
pub(crate) fn ticks_for(timeout: Duration) -> u64 {
    (timeout.as_micros().div_ceil(TICK.as_micros())).max(1) as u64
}
