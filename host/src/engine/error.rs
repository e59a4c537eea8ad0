//! Errors from loading a policy and from calling it. Each call error has a distinct metric label.

use std::path::PathBuf;
use std::time::Duration;

/// One export of the policy world; used in errors, logs and metric labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Export {
    ValidateSettings,
    ShouldRebuild,
    RenderSwf,
    ExitEligibility,
}

impl Export {
    pub const ALL: [Export; 4] = [
        Export::ValidateSettings,
        Export::ShouldRebuild,
        Export::RenderSwf,
        Export::ExitEligibility,
    ];

    /// The export's name in the WIT world.
    pub fn name(self) -> &'static str {
        match self {
            Export::ValidateSettings => "validate-settings",
            Export::ShouldRebuild => "should-rebuild",
            Export::RenderSwf => "render-swf",
            Export::ExitEligibility => "exit-eligibility",
        }
    }
}

impl std::fmt::Display for Export {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a policy could not be loaded. The controller refuses to start (or keeps the old policy).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read policy {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("policy is {size} bytes, over the {limit}-byte limit")]
    TooLarge { size: usize, limit: usize },
    #[error("policy digest mismatch: pinned {expected}, the file is {found}")]
    DigestMismatch { expected: String, found: String },
    #[error("pinned digest {0:?} is not of the form sha256:<64 hex digits>")]
    BadPin(String),
    #[error(
        "not a WebAssembly component (a core module or other bytes); build the policy for wasm32-wasip2"
    )]
    NotAComponent,
    #[error("cannot compile policy: {0}")]
    Compile(String),
    #[error("policy does not implement {expected}: {found}")]
    WorldMismatch {
        expected: &'static str,
        found: String,
    },
    #[error("cannot set up the Wasm engine: {0}")]
    Engine(String),
}

/// Why one policy call produced no decision. The object it was about is left untouched.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("policy {export} exceeded its {limit:?} deadline")]
    Timeout { export: Export, limit: Duration },
    #[error("policy {export} exceeded its memory limit of {limit} bytes")]
    OutOfMemory { export: Export, limit: usize },
    #[error("policy {export} trapped: {message}")]
    Trap { export: Export, message: String },
    #[error("policy {export} returned an error: {message}")]
    Guest { export: Export, message: String },
    #[error("policy {export} returned bad output: {reason}")]
    BadOutput { export: Export, reason: String },
    #[error("input to policy {export} is {size} bytes, over the {limit}-byte limit")]
    InputTooLarge {
        export: Export,
        size: usize,
        limit: usize,
    },
    #[error("cannot instantiate policy for {export}: {message}")]
    Instantiate { export: Export, message: String },
}

impl PolicyError {
    /// Every [`kind`](Self::kind), for metrics that start at zero.
    pub const KINDS: [&'static str; 7] = [
        "timeout",
        "out_of_memory",
        "trap",
        "guest_error",
        "bad_output",
        "input_too_large",
        "instantiate",
    ];

    /// A stable label for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            PolicyError::Timeout { .. } => "timeout",
            PolicyError::OutOfMemory { .. } => "out_of_memory",
            PolicyError::Trap { .. } => "trap",
            PolicyError::Guest { .. } => "guest_error",
            PolicyError::BadOutput { .. } => "bad_output",
            PolicyError::InputTooLarge { .. } => "input_too_large",
            PolicyError::Instantiate { .. } => "instantiate",
        }
    }

    pub fn export(&self) -> Export {
        match self {
            PolicyError::Timeout { export, .. }
            | PolicyError::OutOfMemory { export, .. }
            | PolicyError::Trap { export, .. }
            | PolicyError::Guest { export, .. }
            | PolicyError::BadOutput { export, .. }
            | PolicyError::InputTooLarge { export, .. }
            | PolicyError::Instantiate { export, .. } => *export,
        }
    }
}

/// Every message in a wasmtime error chain, joined, so nothing useful is dropped.
pub(crate) fn chain_message(error: &wasmtime::Error) -> String {
    error
        .chain()
        .map(|cause| cause.to_string())
        .collect::<Vec<_>>()
        .join(": ")
}
