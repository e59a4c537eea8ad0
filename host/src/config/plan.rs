//! Flags of `pipewarden plan`: every flag and variable of `run`, so the Deployment's
//! environment gives the same policy, settings, target and windows, and how to print.

use std::time::Duration;

use super::duration::parse_duration;
use super::{OutputFormat, RunArgs};

#[derive(clap::Args, Debug)]
pub struct PlanArgs {
    /// table, or one json or yaml document with both lists and the summary.
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
    /// Exit 1 when the plan has something to write (an SWF that differs from its render, a
    /// completion that would be notified), 0 when not, 2 on an error, as `kubectl diff` does.
    #[arg(long)]
    pub exit_code: bool,
    /// List the completed workflows that finished within this long; older ones are counted.
    #[arg(long, default_value = "24h", value_parser = parse_duration)]
    pub workflows_since: Duration,
    #[command(flatten)]
    pub run: RunArgs,
}
