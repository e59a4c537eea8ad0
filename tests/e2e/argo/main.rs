//! The exit gate and the SWF rebuild on Argo Workflows' own controller: Argo v4.0.7's workflow
//! controller runs against the local control plane behind a fault-injecting proxy, kwok simulates
//! its node and pods (see `pipewarden_tests::argo`), and Argo decides phases, runs exit handlers,
//! retries and writes status.
//!
//! - `notifications`: one exit notification per completion Argo decided, with its phase.
//! - `stale`: seed 001 live: stale copies replayed into Argo's and pipewarden's watches.
//! - `admission`: Argo admits the workflow of every SWF pipewarden rebuilt.
//!
//! Needs the Argo and kwok binaries `make control-plane` builds; a test that cannot find them
//! fails with that command.

mod support;

use pipewarden_tests::{exit_support, swf_support};

mod admission;
mod notifications;
mod stale;
