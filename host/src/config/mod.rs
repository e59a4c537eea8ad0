//! Every flag of every command, the floor each duration and size flag is held to, and how
//! settings files are read. `cli` and `controller` both read their configuration from here and
//! not from each other.

mod artifacts;
mod cluster;
pub mod duration;
mod eval;
mod exit;
pub mod floor;
mod leadership;
mod plan;
mod policy;
mod reports;
mod run;
mod settings;
pub mod shard;
mod swf;
mod test;

pub use artifacts::{PrecompileArgs, PushArgs};
pub use cluster::ClusterArgs;
pub use eval::{EvalArgs, OutputFormat};
pub use exit::{ExitArgs, ExitMode};
pub use leadership::LeaderArgs;
pub use plan::{PlanArgs, PlanOnly, PlanOutput};
pub use policy::PolicyArgs;
pub use reports::{ReportArgs, ReportsMode};
pub use run::RunArgs;
pub use settings::{Settings, parse_settings, read_settings, split_budget};
pub use shard::Shard;
pub use swf::{CompileAs, SwfArgs};
pub use test::{TestArgs, TestOutput};
