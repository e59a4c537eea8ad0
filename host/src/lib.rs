//! pipewarden: a Kubernetes controller whose decisions are made by a sandboxed Wasm policy.
//!
//! `engine` runs policies; `swf` and `exit` hold the pure logic of the two flows; `controller` runs
//! the loops; `config` holds every flag; `cli` is the command line.

pub mod cli;
pub mod compress;
pub mod config;
pub mod controller;
pub mod engine;
pub mod exit;
pub mod lease;
pub mod logging;
pub mod oci;
pub mod swf;

#[cfg(test)]
mod testing;
