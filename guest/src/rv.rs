//! Ordering Kubernetes resourceVersions: Argo 4.1's rule, from `argo-rules` (the same the host
//! keeps its tombstones with). A value is orderable only as a canonical decimal (ASCII digits,
//! no sign, no leading zero, not "0"); [`compare`] returns `None` for anything else, and
//! callers decide what an unordered pair means for them.

pub use argo_rules::{ResourceVersion, compare};
