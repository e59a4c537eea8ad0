//! Test support for pipewarden: a real etcd + kube-apiserver on loopback (no Docker), the
//! project's CRDs and sample objects, and helpers the end-to-end tests share.
//!
//! ```no_run
//! # async fn example() -> anyhow::Result<()> {
//! let control_plane = pipewarden_tests::shared().await?;
//! let client = control_plane.client()?;
//! let namespace = control_plane.ns().await?;
//! # Ok(()) }
//! ```
//!
//! Binaries come from `$PIPEWARDEN_CONTROL_PLANE_BIN` if set, else from the cache that
//! `make control-plane` fills.

mod apiserver;
pub mod argo;
pub mod binaries;
mod control_plane;
pub mod crds;
pub mod credentials;
pub mod deploy_support;
mod etcd;
pub mod exit_support;
pub mod intercept;
pub mod nats;
mod objects;
pub mod procfs;
pub mod registry;
pub mod repo;
pub mod resources;
pub mod supervise;
pub mod swf_support;
pub mod wait;

pub use binaries::Binaries;
pub use control_plane::{ControlPlane, Versions, shared};
pub use objects::{FIELD_MANAGER, apply_yaml, service_account_token};

/// Writes a progress line straight to stderr, so it shows even where the test harness
/// captures `eprintln!` output.
pub fn log(line: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}
