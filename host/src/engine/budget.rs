//! Per-policy budgets: how much memory and time one decision may take, and how many decisions
//! may run at once. A compiled policy (Rust) and an interpreter carried inside the component
//! (CPython from componentize-py, SpiderMonkey from ComponentizeJS) need very different ones,
//! so a policy is run under a named preset, each limit overridable on its own.

use std::time::Duration;

/// The presets `--budget` names.
#[derive(clap::ValueEnum, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum BudgetPreset {
    /// Policies compiled to Wasm (Rust): small instances, decisions in microseconds.
    #[default]
    Compiled,
    /// Policies carrying an interpreter (Python, JavaScript): instances of tens of MiB whose
    /// first call in a fresh instance runs interpreted code.
    Interpreter,
}

/// The limits one policy runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Cap on one instance's linear memory, MiB.
    pub memory_mib: usize,
    pub render_timeout: Duration,
    pub decision_timeout: Duration,
    /// Instances alive at once: decisions running concurrently (a decision beyond it fails
    /// fast rather than queue, so it must cover the controller's concurrency).
    pub pool_size: u32,
    /// Core Wasm instances one component instance may create (its modules, adapters, shims).
    pub core_instances: u32,
    /// Guest memory an instance slot keeps resident after a decision, reset in place rather
    /// than released, so the slot's next instance does not fault those pages in again. Set by
    /// the preset alone.
    pub resident_bytes: usize,
}

/// The budget a settings document sets for its policy, under [`BUDGET_KEY`]; each limit given
/// replaces the preset's, and a flag replaces it in turn.
#[derive(serde::Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BudgetSettings {
    pub preset: Option<BudgetPreset>,
    pub memory_mib: Option<usize>,
    pub render_timeout_ms: Option<u64>,
    pub decision_timeout_ms: Option<u64>,
    pub pool_size: Option<u32>,
    pub core_instances: Option<u32>,
}

/// The settings key holding a [`BudgetSettings`]; the host removes it before the policy sees
/// the settings, so it is in neither `validate-settings` nor the settings hash.
pub const BUDGET_KEY: &str = "pipewarden.io/budget";

impl BudgetPreset {
    pub fn budget(self) -> Budget {
        match self {
            BudgetPreset::Compiled => Budget {
                memory_mib: 64,
                render_timeout: Duration::from_millis(100),
                decision_timeout: Duration::from_millis(10),
                pool_size: 64,
                core_instances: 16,
                // Stack, data and first heap pages of a Rust policy built with this
                // workspace's 128 KiB stack: cheaper to memset than to fault in again.
                resident_bytes: 256 << 10,
            },
            BudgetPreset::Interpreter => Budget {
                memory_mib: 128,
                render_timeout: Duration::from_millis(1000),
                decision_timeout: Duration::from_millis(250),
                pool_size: 16,
                core_instances: 64,
                // An interpreter writes pages all over a heap of tens of MiB: keep every page
                // written (reset in place where the kernel can list them, see `new_engine`).
                resident_bytes: 128 << 20,
            },
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            BudgetPreset::Compiled => "compiled",
            BudgetPreset::Interpreter => "interpreter",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interpreter_preset_is_roomier_in_time_and_memory_but_runs_fewer_at_once() {
        let compiled = BudgetPreset::Compiled.budget();
        let interpreter = BudgetPreset::Interpreter.budget();
        assert!(interpreter.memory_mib > compiled.memory_mib);
        assert!(interpreter.decision_timeout > compiled.decision_timeout);
        assert!(interpreter.render_timeout > compiled.render_timeout);
        assert!(interpreter.core_instances > compiled.core_instances);
        assert!(interpreter.pool_size < compiled.pool_size);
    }

    #[test]
    fn the_compiled_preset_is_the_engine_default() {
        let compiled = BudgetPreset::Compiled.budget();
        let defaults = super::super::PolicyOptions::default();
        assert_eq!(compiled.memory_mib << 20, defaults.memory_limit);
        assert_eq!(compiled.render_timeout, defaults.render_timeout);
        assert_eq!(compiled.decision_timeout, defaults.decision_timeout);
        assert_eq!(compiled.pool_size, defaults.max_concurrent_calls);
        assert_eq!(compiled.core_instances, defaults.max_core_instances);
        assert_eq!(compiled.resident_bytes, defaults.resident_bytes);
    }
}
