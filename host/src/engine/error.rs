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

/// What kind of failure a [`PolicyError`] is: the `kind` label of `pipewarden_policy_errors`.
#[derive(Clone, Copy, Debug, Default, Hash, PartialEq, Eq)]
pub enum PolicyErrorKind {
    #[default]
    Timeout,
    OutOfMemory,
    Trap,
    Guest,
    BadOutput,
    InputTooLarge,
    Instantiate,
}

impl PolicyErrorKind {
    /// Every kind, for metrics that start at zero.
    pub const ALL: [PolicyErrorKind; 7] = [
        PolicyErrorKind::Timeout,
        PolicyErrorKind::OutOfMemory,
        PolicyErrorKind::Trap,
        PolicyErrorKind::Guest,
        PolicyErrorKind::BadOutput,
        PolicyErrorKind::InputTooLarge,
        PolicyErrorKind::Instantiate,
    ];

    /// A stable label for metrics and logs.
    pub fn label(self) -> &'static str {
        match self {
            PolicyErrorKind::Timeout => "timeout",
            PolicyErrorKind::OutOfMemory => "out_of_memory",
            PolicyErrorKind::Trap => "trap",
            PolicyErrorKind::Guest => "guest_error",
            PolicyErrorKind::BadOutput => "bad_output",
            PolicyErrorKind::InputTooLarge => "input_too_large",
            PolicyErrorKind::Instantiate => "instantiate",
        }
    }

    /// Says more about the moment (a busy node) than about the input: worth trying again
    /// soon. Other kinds repeat on the same input.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            PolicyErrorKind::Timeout | PolicyErrorKind::Instantiate
        )
    }
}

impl PolicyError {
    pub fn kind(&self) -> PolicyErrorKind {
        match self {
            PolicyError::Timeout { .. } => PolicyErrorKind::Timeout,
            PolicyError::OutOfMemory { .. } => PolicyErrorKind::OutOfMemory,
            PolicyError::Trap { .. } => PolicyErrorKind::Trap,
            PolicyError::Guest { .. } => PolicyErrorKind::Guest,
            PolicyError::BadOutput { .. } => PolicyErrorKind::BadOutput,
            PolicyError::InputTooLarge { .. } => PolicyErrorKind::InputTooLarge,
            PolicyError::Instantiate { .. } => PolicyErrorKind::Instantiate,
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
