//! Limits and settings for loading and running a policy.

use std::path::PathBuf;
use std::time::Duration;

use super::RetryObserver;
use super::budget::Budget;

#[derive(Clone, Debug)]
pub struct PolicyOptions {
    /// Deadline for `render-swf`.
    pub render_timeout: Duration,
    /// Deadline for every other export.
    pub decision_timeout: Duration,
    /// Cap on a guest's linear memory, per call.
    pub memory_limit: usize,
    /// Cap on the JSON handed to a guest in one call.
    pub max_input_bytes: usize,
    /// Cap on the text a guest returns from one call.
    pub max_output_bytes: usize,
    /// Cap on the size of the `.wasm` file itself.
    pub max_component_bytes: usize,
    /// Instances that may be alive at once (the size of the instance pool).
    pub max_concurrent_calls: u32,
    /// Core instances one component instance may create; an interpreter component holds more
    /// modules (and tables and memories, sized from this) than a Rust one.
    pub max_core_instances: u32,
    /// Guest memory a pool slot keeps resident between instances (see [`Budget`]).
    pub resident_bytes: usize,
    /// Where compiled policies are cached; None compiles on every load.
    pub cache_dir: Option<PathBuf>,
    /// The policy's expected digest, `sha256:<hex>`; loading fails on any other file.
    pub pinned_sha256: Option<String>,
    /// Told of each decision tried again after missing its deadline.
    pub retry_observer: Option<RetryObserver>,
}

impl Default for PolicyOptions {
    fn default() -> Self {
        PolicyOptions {
            render_timeout: Duration::from_millis(100),
            decision_timeout: Duration::from_millis(10),
            memory_limit: 64 << 20,
            max_input_bytes: 4 << 20,
            max_output_bytes: 4 << 20,
            max_component_bytes: 64 << 20,
            max_concurrent_calls: 64,
            max_core_instances: 16,
            resident_bytes: 256 << 10,
            cache_dir: None,
            pinned_sha256: None,
            retry_observer: None,
        }
    }
}

impl PolicyOptions {
    /// These options with a budget's limits.
    pub fn with_budget(self, budget: &Budget) -> Self {
        PolicyOptions {
            render_timeout: budget.render_timeout,
            decision_timeout: budget.decision_timeout,
            memory_limit: budget.memory_mib << 20,
            max_concurrent_calls: budget.pool_size,
            max_core_instances: budget.core_instances,
            resident_bytes: budget.resident_bytes,
            ..self
        }
    }
}
