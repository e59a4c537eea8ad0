//! pipewarden: a Kubernetes controller whose decisions are made by a sandboxed Wasm policy.
//!
//! `engine` runs policies; `swf` and `exit` hold the pure logic of the two flows; `cluster` talks
//! to the cluster for `run` and `plan` alike; `controller` runs the loops; `metrics` counts what
//! they do; `config` holds every flag; `cli` is the command line.

pub mod cli;
pub mod cluster;
pub mod compress;
pub mod config;
pub mod controller;
pub mod engine;
pub mod exit;
pub mod logging;
pub mod metrics;
pub mod oci;
pub mod swf;

#[cfg(test)]
mod testing;
