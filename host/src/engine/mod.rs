//! The Wasm engine: loads a policy component and makes one typed call per WIT export.
//!
//! Nothing else in the host touches wasmtime. Each decision runs in a fresh instance from a
//! pooled, pre-instantiated component, under an epoch deadline and a memory cap; a trap costs
//! one decision, never the process.

pub mod bindings;
#[cfg(test)]
mod bounds_tests;
mod budget;
mod cache;
mod decisions;
mod error;
mod instance;
pub mod native;
mod options;
mod retry;
mod store;
mod ticker;
mod world;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

pub use bindings::{
    Eligibility, EventKind, RebuildDecision, RebuildInput, RebuildPolicy, RenderContext, Stamps,
    Tombstone, WorkflowEvent,
};
pub use budget::{BUDGET_KEY, Budget, BudgetPreset, BudgetSettings};
pub use decisions::{Decisions, SwfCalls};
pub use error::{Export, LoadError, PolicyError, PolicyErrorKind};
pub use instance::PolicyInstance;
pub use native::Native;
pub use options::PolicyOptions;
pub use retry::RetryObserver;
pub use world::WORLD;

use bindings::PolicyPre;
use store::StoreState;

/// How a load obtained machine code for the policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeSource {
    /// Compiled with Cranelift now.
    Compiled,
    /// Deserialized from the on-disk cache.
    Cached,
}

#[derive(Clone, Debug)]
pub struct LoadReport {
    pub source: CodeSource,
    /// Time to obtain machine code (compile or deserialize).
    pub code_time: Duration,
    pub wasm_bytes: usize,
}

/// A loaded, world-checked policy. Cheap to clone; safe to call from many threads.
#[derive(Clone)]
pub struct Policy {
    inner: Arc<Inner>,
    /// What the guest's `settings` import returns; `{}` until [`Policy::with_settings`].
    settings: Arc<str>,
}

struct Inner {
    engine: Engine,
    pre: PolicyPre<StoreState>,
    options: PolicyOptions,
    digest: String,
    label: Arc<str>,
    report: LoadReport,
    _ticker: ticker::EpochTicker,
}

impl Policy {
    /// Load a policy from a `.wasm` component file.
    pub fn load(path: &Path, options: PolicyOptions) -> Result<Policy, LoadError> {
        let bytes = std::fs::read(path).map_err(|source| LoadError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let label = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        Policy::from_bytes(&bytes, &label, options)
    }

    /// Load a policy from component bytes; `label` names it in logs.
    pub fn from_bytes(
        bytes: &[u8],
        label: &str,
        options: PolicyOptions,
    ) -> Result<Policy, LoadError> {
        if bytes.len() > options.max_component_bytes {
            return Err(LoadError::TooLarge {
                size: bytes.len(),
                limit: options.max_component_bytes,
            });
        }
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(bytes)));
        if let Some(pin) = &options.pinned_sha256 {
            let pin = normalize_pin(pin)?;
            if pin != digest {
                return Err(LoadError::DigestMismatch {
                    expected: pin,
                    found: digest,
                });
            }
        }
        if !is_component(bytes) {
            return Err(LoadError::NotAComponent);
        }
        let engine = new_engine(&options)?;
        let cache = options.cache_dir.as_deref().map(cache::ArtifactCache::new);

        let started = Instant::now();
        let cached = cache.as_ref().and_then(|c| c.load(&engine, &digest));
        let (component, source) = match cached {
            Some(component) => (component, CodeSource::Cached),
            None => {
                let component = Component::new(&engine, bytes)
                    .map_err(|e| LoadError::Compile(error::chain_message(&e)))?;
                (component, CodeSource::Compiled)
            }
        };
        let code_time = started.elapsed();

        world::check(&engine, &component)?;
        let pre = link(&engine, &component)?;
        if source == CodeSource::Compiled
            && let Some(cache) = &cache
        {
            cache.store(&engine, &digest, &component);
        }
        let ticker =
            ticker::EpochTicker::start(&engine).map_err(|e| LoadError::Engine(e.to_string()))?;
        Ok(Policy {
            inner: Arc::new(Inner {
                engine,
                pre,
                options,
                digest,
                label: label.into(),
                report: LoadReport {
                    source,
                    code_time,
                    wasm_bytes: bytes.len(),
                },
                _ticker: ticker,
            }),
            settings: Arc::from("{}"),
        })
    }

    /// The same policy, answering the guest's `settings` import with `settings` (the text
    /// `validate-settings` accepted). Cheap: the compiled policy is shared.
    pub fn with_settings(&self, settings: &str) -> Policy {
        Policy {
            inner: self.inner.clone(),
            settings: Arc::from(settings),
        }
    }

    /// The settings the guest's `settings` import returns.
    pub fn settings(&self) -> &str {
        &self.settings
    }

    /// `sha256:<hex>` of the component bytes.
    pub fn digest(&self) -> &str {
        &self.inner.digest
    }

    /// The name the policy goes by in logs (its file name).
    pub fn label(&self) -> &str {
        &self.inner.label
    }

    pub fn load_report(&self) -> &LoadReport {
        &self.inner.report
    }

    pub fn options(&self) -> &PolicyOptions {
        &self.inner.options
    }

    /// A fresh instance for one or more calls. Decisions normally use the methods below, which
    /// take a fresh instance per call; a kept instance is for benchmarks and trusted batches.
    pub fn instance(&self) -> Result<PolicyInstance, PolicyError> {
        PolicyInstance::new(self, None)
    }

    /// During the call, the `settings` import returns the settings being validated.
    pub fn validate_settings(&self, settings: &str) -> Result<(), PolicyError> {
        self.with_settings(settings)
            .decide(Export::ValidateSettings, |i| i.validate_settings(settings))
    }

    pub fn should_rebuild(&self, input: &RebuildInput) -> Result<RebuildDecision, PolicyError> {
        self.decide(Export::ShouldRebuild, |i| i.should_rebuild(input))
    }

    pub fn render_swf(&self, swf: &str, context: &RenderContext) -> Result<String, PolicyError> {
        self.decide(Export::RenderSwf, |i| i.render_swf(swf, context))
    }

    pub fn exit_eligibility(
        &self,
        event: &WorkflowEvent,
        tombstone: Option<&Tombstone>,
    ) -> Result<Eligibility, PolicyError> {
        self.decide(Export::ExitEligibility, |i| {
            i.exit_eligibility(event, tombstone)
        })
    }

    /// One SWF decision (should-rebuild, then render-swf) in one fresh instance: instantiated
    /// once, not once per call.
    pub fn swf_decision(&self) -> SwfDecision<'_> {
        SwfDecision {
            policy: self,
            instance: None,
        }
    }

    /// One call of `export` in a fresh instance; a timeout is tried once more in another.
    fn decide<R>(
        &self,
        export: Export,
        call: impl Fn(&mut PolicyInstance) -> Result<R, PolicyError>,
    ) -> Result<R, PolicyError> {
        let observer = self.inner.options.retry_observer.as_ref();
        retry::retry_timeout_once(export, observer, || {
            call(&mut PolicyInstance::new(self, Some(export))?)
        })
    }

    fn timeout_for(&self, export: Export) -> Duration {
        match export {
            Export::RenderSwf => self.inner.options.render_timeout,
            _ => self.inner.options.decision_timeout,
        }
    }
}

/// See [`Policy::swf_decision`]. A call that times out is tried once more in a fresh instance,
/// as a decision of its own is; an instance that trapped is never called again.
pub struct SwfDecision<'a> {
    policy: &'a Policy,
    instance: Option<PolicyInstance>,
}

impl SwfDecision<'_> {
    fn call<R>(
        &mut self,
        export: Export,
        call: impl Fn(&mut PolicyInstance) -> Result<R, PolicyError>,
    ) -> Result<R, PolicyError> {
        let observer = self.policy.inner.options.retry_observer.as_ref();
        let mut attempt = 0;
        retry::retry_timeout_once(export, observer, || {
            attempt += 1;
            // The decision's instance for the first attempt; a fresh one after a timeout.
            let instance = match self.instance.take() {
                Some(instance) if attempt == 1 => instance,
                _ => PolicyInstance::new(self.policy, Some(export))?,
            };
            let instance = self.instance.insert(instance);
            call(instance)
        })
    }
}

impl SwfCalls for SwfDecision<'_> {
    fn should_rebuild(&mut self, input: &RebuildInput) -> Result<RebuildDecision, PolicyError> {
        self.call(Export::ShouldRebuild, |i| i.should_rebuild(input))
    }

    fn render_swf(&mut self, swf: &str, context: &RenderContext) -> Result<String, PolicyError> {
        self.call(Export::RenderSwf, |i| i.render_swf(swf, context))
    }
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("label", &self.inner.label)
            .field("digest", &self.inner.digest)
            .finish()
    }
}

/// A component binary starts with the wasm magic and layer 1 (a core module has layer 0).
/// A component's preamble: the wasm magic and layer 1 (a core module has layer 0).
pub fn is_component(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes[..4] == *b"\0asm" && bytes[6..8] == [1, 0]
}

fn normalize_pin(pin: &str) -> Result<String, LoadError> {
    let hex = pin
        .trim()
        .strip_prefix("sha256:")
        .unwrap_or(pin.trim())
        .to_ascii_lowercase();
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(LoadError::BadPin(pin.to_string()));
    }
    Ok(format!("sha256:{hex}"))
}

/// Without PAGEMAP_SCAN a slot's first pages are reset whether written or not, so more than this
/// costs more to memset than the page faults it saves.
const MEMSET_RESIDENT_BYTES: usize = 256 << 10;

/// How a slot is reset between instances: the bytes kept resident, and whether the kernel lists
/// the pages written (PAGEMAP_SCAN, Linux 6.7+) so only those are reset. The scan serves budgets
/// that keep more than a memset's worth; a compiled policy's few pages are as fast to memset,
/// and steadier. Without the scan a slot keeps at most [`MEMSET_RESIDENT_BYTES`].
fn slot_reset(options: &PolicyOptions) -> (usize, wasmtime::Enabled) {
    let scan = options.resident_bytes > MEMSET_RESIDENT_BYTES
        && PoolingAllocationConfig::is_pagemap_scan_available();
    if scan {
        (options.resident_bytes, wasmtime::Enabled::Yes)
    } else {
        (
            options.resident_bytes.min(MEMSET_RESIDENT_BYTES),
            wasmtime::Enabled::No,
        )
    }
}

fn new_engine(options: &PolicyOptions) -> Result<Engine, LoadError> {
    let slots = options.max_concurrent_calls.max(1);
    let per_slot = options.max_core_instances.max(1);
    let (resident_bytes, pagemap_scan) = slot_reset(options);
    let memories_per_slot = per_slot.div_ceil(4).max(4);
    let tables_per_slot = per_slot.max(8) / 2;
    let mut pool = PoolingAllocationConfig::default();
    // A Rust wasip2 component holds a handful of core instances, memories and tables; one
    // carrying an interpreter (componentize-py, ComponentizeJS) more, each table a module's.
    // The per-component caps keep one guest from taking the slots of every other decision.
    pool.total_component_instances(slots)
        .total_core_instances(slots * per_slot)
        .total_memories(slots * memories_per_slot)
        .total_tables(slots * tables_per_slot)
        .max_core_instances_per_component(per_slot)
        .max_memories_per_component(memories_per_slot)
        .max_tables_per_component(tables_per_slot)
        .total_stacks(slots)
        .max_memory_size(options.memory_limit.next_multiple_of(64 << 10))
        // Reset a slot's pages in place instead of releasing them with madvise: a fresh
        // instance then touches resident pages instead of faulting them in on every decision.
        .linear_memory_keep_resident(resident_bytes)
        .pagemap_scan(pagemap_scan)
        .table_keep_resident(64 << 10);
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config).map_err(|e| LoadError::Engine(error::chain_message(&e)))
}

/// What a guest that tries to wait is told.
const WAIT_REFUSED: &str =
    "policies may not wait (wasi:io/poll): a decision must compute, not sleep";

/// A guest waiting in a host call cannot be interrupted by an epoch deadline, so the calls that
/// wait (`poll`, `pollable.block`, which a sleep comes down to) trap instead. Nothing a policy
/// needs waits: its stdio goes to memory and it has no files or sockets.
fn refuse_waiting(linker: &mut Linker<StoreState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut poll = linker.instance("wasi:io/poll@0.2.12")?;
    for name in ["poll", "[method]pollable.block"] {
        poll.func_new(name, |_, _, _, _| Err(wasmtime::Error::msg(WAIT_REFUSED)))?;
    }
    linker.allow_shadowing(false);
    Ok(())
}

fn link(engine: &Engine, component: &Component) -> Result<PolicyPre<StoreState>, LoadError> {
    let engine_error = |e: wasmtime::Error| LoadError::Engine(error::chain_message(&e));
    let mut linker: Linker<StoreState> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(engine_error)?;
    refuse_waiting(&mut linker).map_err(engine_error)?;
    bindings::Policy::add_to_linker::<StoreState, HasSelf<StoreState>>(&mut linker, |s| s)
        .map_err(engine_error)?;
    let mismatch = |e: wasmtime::Error| LoadError::WorldMismatch {
        expected: WORLD,
        found: error::chain_message(&e),
    };
    let instance_pre = linker.instantiate_pre(component).map_err(mismatch)?;
    PolicyPre::new(instance_pre).map_err(mismatch)
}
