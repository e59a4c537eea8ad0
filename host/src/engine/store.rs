//! Per-call store state: an empty WASI context, captured stdio, the memory cap, the log import.

use std::sync::Arc;

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::bindings::LogLevel;
use super::bindings::pipewarden::policy::host;
use super::ticker::CallClock;

/// Bytes of guest stdout/stderr and log text kept per call; the rest is dropped.
const GUEST_OUTPUT_BUDGET: usize = 64 * 1024;

/// The most one `wasi:random` call may ask for: seeding a hash map or an interpreter needs
/// tens of bytes, and the host allocates whatever is asked before the guest sees it.
pub(crate) const MAX_RANDOM_BYTES: u64 = 4 * 1024;

pub(crate) struct StoreState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) memory: MemoryCap,
    stdout: MemoryOutputPipe,
    stderr: MemoryOutputPipe,
    log_budget: usize,
    policy: Arc<str>,
    /// What the `settings` import returns.
    settings: Arc<str>,
    /// The running call's time budget.
    pub(crate) clock: CallClock,
}

impl StoreState {
    /// No files, no env, no args, no network; stdio goes to bounded in-memory pipes.
    pub(crate) fn new(policy: Arc<str>, settings: Arc<str>, memory_limit: usize) -> Self {
        let stdout = MemoryOutputPipe::new(GUEST_OUTPUT_BUDGET);
        let stderr = MemoryOutputPipe::new(GUEST_OUTPUT_BUDGET);
        let wasi = WasiCtx::builder()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .max_random_size(MAX_RANDOM_BYTES)
            .build();
        StoreState {
            wasi,
            table: ResourceTable::new(),
            memory: MemoryCap::new(memory_limit),
            stdout,
            stderr,
            log_budget: GUEST_OUTPUT_BUDGET,
            policy,
            settings,
            clock: CallClock::start(std::time::Duration::ZERO),
        }
    }

    /// What the guest wrote to stderr (a panic message lands here), lossily decoded.
    pub(crate) fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.contents())
            .trim()
            .to_string()
    }

    /// Forward captured guest stdio to the host log once the call is over.
    pub(crate) fn flush_stdio(&self) {
        for (stream, pipe) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            let bytes = pipe.contents();
            if !bytes.is_empty() {
                let text = String::from_utf8_lossy(&bytes);
                tracing::debug!(target: "pipewarden::policy", policy = %self.policy, stream, "{}", text.trim_end());
            }
        }
    }
}

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl host::Host for StoreState {
    fn log(&mut self, level: LogLevel, message: String) {
        if self.log_budget == 0 {
            return;
        }
        let mut message = message;
        if message.len() > self.log_budget {
            let mut cut = self.log_budget;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push_str(" [policy log budget exhausted]");
            self.log_budget = 0;
        } else {
            self.log_budget -= message.len();
        }
        let policy = &*self.policy;
        match level {
            LogLevel::Debug => tracing::debug!(target: "pipewarden::policy", policy, "{message}"),
            LogLevel::Info => tracing::info!(target: "pipewarden::policy", policy, "{message}"),
            LogLevel::Warn => tracing::warn!(target: "pipewarden::policy", policy, "{message}"),
            LogLevel::Error => tracing::error!(target: "pipewarden::policy", policy, "{message}"),
        }
    }

    fn settings(&mut self) -> String {
        self.settings.to_string()
    }
}

impl super::bindings::pipewarden::policy::types::Host for StoreState {}

/// Caps the guest's linear memories together (a component may hold several); remembers that
/// the cap was hit so the trap is reported as out-of-memory rather than a generic trap.
pub(crate) struct MemoryCap {
    limit: usize,
    /// Bytes of all memories of the store, as granted.
    used: usize,
    pub(crate) exceeded: bool,
}

impl MemoryCap {
    pub(crate) fn new(limit: usize) -> Self {
        MemoryCap {
            limit,
            used: 0,
            exceeded: false,
        }
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Grants growing one memory from `current` to `desired` bytes if all of them together
    /// stay within the limit. A new memory grows from 0.
    fn grant(&mut self, current: usize, desired: usize) -> bool {
        let total = (self.used - current.min(self.used)).saturating_add(desired);
        if total > self.limit {
            self.exceeded = true;
            return false;
        }
        self.used = total;
        true
    }
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(self.grant(current, desired))
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

/// Generous for any real policy; stops a guest from growing tables without bound.
const MAX_TABLE_ELEMENTS: usize = 100_000;

#[cfg(test)]
mod tests {
    use super::MemoryCap;

    #[test]
    fn the_memories_of_one_guest_share_one_cap() {
        let mut cap = MemoryCap::new(64 << 20);
        assert!(cap.grant(0, 40 << 20), "a first memory within the cap");
        assert!(cap.grant(40 << 20, 48 << 20), "growing it within the cap");
        assert!(
            !cap.grant(0, 32 << 20),
            "a second memory past the cap together"
        );
        assert!(cap.exceeded);
        assert!(
            cap.grant(0, 16 << 20),
            "a second memory that fits beside the first"
        );
        assert!(!cap.grant(16 << 20, 17 << 20), "not one byte more");
    }
}
