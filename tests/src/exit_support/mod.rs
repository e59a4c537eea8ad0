//! Shared by the exit-gate end-to-end tests: the controller run in-process with the test-only
//! event hook, a webhook receiver that counts deliveries, and Workflows written as Argo's
//! controller writes them.

// Each test binary uses a part of this module.
mod controller;
mod faults;
mod receiver;
mod workflows;

#[allow(unused_imports)]
pub use controller::*;
#[allow(unused_imports)]
pub use faults::*;
pub use receiver::*;
pub use workflows::*;

use std::path::PathBuf;
use std::time::Duration;

/// How long any one condition may take to come true.
pub const WAIT: Duration = Duration::from_secs(120);

pub use crate::repo::{DEFAULT_SETTINGS, init_logs, repo_path};

/// The default policy component built by `make policies`; fails loudly, naming the command.
pub fn default_policy() -> PathBuf {
    crate::repo::built_policy("kfp-default")
}
