//! SDK for writing pipewarden policies as WebAssembly components.
//!
//! A policy is a Rust library crate built for `wasm32-wasip2`. It implements [`Policy`] (the
//! exports of the `pipewarden:policy@0.1.1` world) and names its type once with
//! [`export_policy!`]:
//!
//! ```no_run
//! use pipewarden_guest::{
//!     Eligibility, Policy, RebuildDecision, RebuildInput, RenderContext, Tombstone,
//!     WorkflowEvent,
//! };
//!
//! struct Noop;
//!
//! impl Policy for Noop {
//!     fn validate_settings(_settings: String) -> Result<(), String> {
//!         Ok(())
//!     }
//!     fn should_rebuild(_input: RebuildInput) -> RebuildDecision {
//!         RebuildDecision::Skip("this policy never rebuilds".into())
//!     }
//!     fn render_swf(swf: String, _context: RenderContext) -> Result<String, String> {
//!         Ok(swf)
//!     }
//!     fn exit_eligibility(event: WorkflowEvent, tombstone: Option<Tombstone>) -> Eligibility {
//!         pipewarden_guest::eligibility::argo_exit_eligibility(&event, tombstone.as_ref())
//!     }
//! }
//!
//! pipewarden_guest::export_policy!(Noop);
//! ```
//!
//! Whole Kubernetes objects cross the boundary as JSON text. [`Swf`] and [`Workflow`] wrap the
//! parsed `serde_json::Value` and read typed fields from it, so a policy that edits an object
//! writes back everything it did not touch, unknown fields included.
//!
//! Helpers: [`rv`] orders resourceVersions, [`canonical`] gives canonical JSON and digests,
//! [`swf`] reads `spec.workflow.spec` in either form and computes the render digest,
//! [`eligibility`] holds Argo 4.1's exit-eligibility rules, [`workflow`] finds a workflow's exit
//! handler, [`log`] writes to the host's log and [`settings`] reads the settings in force.

pub mod canonical;
pub mod eligibility;
pub mod log;
pub mod rv;
pub mod settings;
pub mod swf;
pub mod workflow;

/// The bindings generated from `wit/policy.wit`, shared by every policy.
#[allow(clippy::too_many_arguments)] // the canonical ABI flattens records into arguments
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "policy",
        additional_derives: [PartialEq, Eq],
        pub_export_macro: true,
        export_macro_name: "export",
        default_bindings_module: "pipewarden_guest::bindings",
    });
}

/// The exports a policy implements (the generated `Guest` trait of the `policy` world).
pub use bindings::Guest as Policy;
pub use bindings::pipewarden::policy::host::LogLevel;
pub use bindings::pipewarden::policy::types::{
    Eligibility, EventKind, RebuildDecision, RebuildInput, RebuildPolicy, RenderContext, Stamps,
    Tombstone, WorkflowEvent,
};
pub use swf::Swf;
pub use workflow::Workflow;

/// The annotation KFP-side tools read the rendered version from.
pub const VERSION_ANNOTATION: &str = "pipelines.kubeflow.org/version";
/// The annotation holding the digest of the last rendered spec (see [`swf::render_digest`]).
pub const RENDER_HASH_ANNOTATION: &str = "pipewarden.io/render-hash";
/// The annotation holding the digest of the settings the last render used (see
/// [`canonical::settings_digest`]).
pub const SETTINGS_HASH_ANNOTATION: &str = "pipewarden.io/settings-hash";

/// How a policy says an SWF cannot be rebuilt (a v1 pipeline, a reference-only SWF, a workflow
/// KFP did not compile): a `should-rebuild` skip reason or a `render-swf` error that starts with
/// this. The host leaves such an SWF as it is and reports `NotRebuildable` with the rest of the
/// text as the reason, instead of a render failure; the WIT contract is unchanged.
pub const NOT_REBUILDABLE_PREFIX: &str = "not-rebuildable: ";

/// `reason` marked with [`NOT_REBUILDABLE_PREFIX`].
pub fn not_rebuildable(reason: &str) -> String {
    format!("{NOT_REBUILDABLE_PREFIX}{reason}")
}

/// How a policy says it cannot compile for the target version (a KFP release it does not
/// support, or an unknown version): a `should-rebuild` skip reason or a `render-swf` error that
/// starts with this. The host writes nothing for any SWF under that target, reports
/// `UnsupportedTarget` once per SWF, and says in `pipewarden_target_info` that the target is
/// not supported; the WIT contract is unchanged.
pub const UNSUPPORTED_TARGET_PREFIX: &str = "unsupported-target: ";

/// `reason` marked with [`UNSUPPORTED_TARGET_PREFIX`].
pub fn unsupported_target(reason: &str) -> String {
    format!("{UNSUPPORTED_TARGET_PREFIX}{reason}")
}

/// The annotation that marks the host's target probe: an SWF that exists nowhere, handed to
/// `should-rebuild` once per target version, settings and policy, so that the host can say
/// whether the target is served before (and whether or not) any SWF is decided. A policy that
/// knows the probe answers it with [`target_served`] or [`unsupported_target`]; any other
/// answer leaves the host to learn it from the SWFs' own decisions, as before.
pub const TARGET_PROBE_ANNOTATION: &str = "pipewarden.io/target-probe";

/// How a policy says it serves the target, answering the probe: a `should-rebuild` skip
/// reason that starts with this, then how its renders are proven (one word, e.g.
/// `own-compiler-output`), `; ` and a sentence for the operator.
pub const TARGET_SERVED_PREFIX: &str = "target-served: ";

/// Whether `swf_json` is the host's target probe (a cheap scan: the probe is small).
pub fn is_target_probe(swf_json: &str) -> bool {
    swf_json.len() < 4096 && swf_json.contains(TARGET_PROBE_ANNOTATION)
}

/// The answer to the probe for a served target: `proof` is one word, `note` a sentence.
pub fn target_served(proof: &str, note: &str) -> String {
    format!("{TARGET_SERVED_PREFIX}{proof}; {note}")
}

/// Exports a type implementing [`Policy`] as the component's `policy` world.
///
/// Invoke it once, in the crate that is built into the `.wasm` (a `cdylib`); a library meant to
/// be reused by other policies must not invoke it, or the exports would clash at link time.
#[macro_export]
macro_rules! export_policy {
    ($policy:ident) => {
        $crate::bindings::export!($policy with_types_in $crate::bindings);
    };
}
