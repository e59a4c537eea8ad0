//! Argo Workflows' rules that both sides of the policy boundary apply: what a phase means, and
//! how resourceVersions are ordered. The host keeps its tombstones with them; the SDK's exit
//! eligibility decides with them. No dependencies.

mod phase;
mod resource_version;

pub use phase::Phase;
pub use resource_version::{ResourceVersion, compare};
