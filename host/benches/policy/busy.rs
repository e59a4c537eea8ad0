//! Decisions while burner threads keep every core busy: the engine as the controller runs it
//! (a fresh instance whose clock counts CPU time from the start, a timeout tried once more)
//! beside the engine before (a fresh instance whose clock counted wall time until its first
//! tick, no retry), interleaved so both see the same load.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use pipewarden::engine::{Policy, PolicyError, PolicyOptions, RebuildInput, RetryObserver};

use super::sampled::Sampled;

/// Busy threads, one per core, stopped when dropped.
struct Burners {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Burners {
    fn start(count: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..count)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut turns = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        turns = std::hint::black_box(turns.wrapping_add(1));
                    }
                })
            })
            .collect();
        Burners { stop, threads }
    }
}

impl Drop for Burners {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// Rows for `calls` should-rebuild decisions each way, with a burner per core.
pub fn rows(
    wasm: &std::path::Path,
    input: &RebuildInput,
    calls: usize,
) -> anyhow::Result<Vec<Vec<String>>> {
    let retried = Arc::new(AtomicUsize::new(0));
    let counter = retried.clone();
    let options = PolicyOptions {
        retry_observer: Some(RetryObserver::new(move |_| {
            counter.fetch_add(1, Ordering::Relaxed);
        })),
        ..PolicyOptions::default()
    };
    let policy = Policy::load(wasm, options)?;
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let _burners = Burners::start(cores);
    let mut now = Sampled::default();
    let mut before = Sampled::default();
    for _ in 0..calls {
        now.run(|| policy.should_rebuild(input).map(drop));
        before.run(|| previous_engine(&policy, input));
    }
    let retried = retried.load(Ordering::Relaxed);
    Ok(vec![
        row(
            &format!("before: wall clock until the first tick, no retry ({cores} burners)"),
            &before,
            "-".into(),
        ),
        row(
            &format!("now: CPU clock from the start, one retry ({cores} burners)"),
            &now,
            retried.to_string(),
        ),
    ])
}

/// One decision as the engine made it before: a fresh instance with the lazily anchored clock.
fn previous_engine(policy: &Policy, input: &RebuildInput) -> Result<(), PolicyError> {
    policy.instance()?.should_rebuild(input).map(drop)
}

fn row(name: &str, sampled: &Sampled, retried: String) -> Vec<String> {
    let (p50, p99) = sampled.percentiles();
    vec![
        name.into(),
        sampled.count().to_string(),
        sampled.failures(),
        retried,
        format!("{} / {}", us(p50), us(p99)),
    ]
}

fn us(d: Duration) -> String {
    format!("{:.1} us", d.as_secs_f64() * 1e6)
}
