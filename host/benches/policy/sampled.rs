//! A sampled call: its timings and its failures by kind. A sample that fails (a deadline missed
//! on a busy machine) is a figure in its row, never a panic.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use pipewarden::engine::PolicyError;

use super::common::Percentiles;

/// Timings of a sampled call and its failures by kind.
#[derive(Default)]
pub struct Sampled {
    times: Vec<Duration>,
    failed: BTreeMap<&'static str, usize>,
}

impl Sampled {
    pub fn run(&mut self, call: impl FnOnce() -> Result<(), PolicyError>) {
        let started = Instant::now();
        let result = call();
        self.times.push(started.elapsed());
        if let Err(error) = result {
            *self.failed.entry(error.kind().label()).or_default() += 1;
        }
    }

    pub fn count(&self) -> usize {
        self.times.len()
    }

    pub fn percentiles(&self) -> (Duration, Duration) {
        let mut times = self.times.clone();
        times.sort();
        let at = |q: usize| times[(times.len() * q / 100).min(times.len() - 1)];
        (at(50), at(99))
    }

    pub fn as_percentiles(&self) -> Percentiles {
        let (p50, p99) = self.percentiles();
        Percentiles { p50, p99 }
    }

    /// `0`, or the failures by kind, e.g. `3 timeout`.
    pub fn failures(&self) -> String {
        if self.failed.is_empty() {
            return "0".into();
        }
        let parts: Vec<String> = self
            .failed
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        parts.join(", ")
    }
}

/// `warmup` unmeasured calls, then `samples` timed ones; failures of either are counted.
pub fn sample(
    warmup: usize,
    samples: usize,
    mut call: impl FnMut() -> Result<(), PolicyError>,
) -> Sampled {
    let mut warm = Sampled::default();
    for _ in 0..warmup {
        warm.run(&mut call);
    }
    let mut sampled = Sampled::default();
    for _ in 0..samples {
        sampled.run(&mut call);
    }
    for (kind, count) in warm.failed {
        *sampled.failed.entry(kind).or_default() += count;
    }
    sampled
}
