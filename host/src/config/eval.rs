//! Flags of `pipewarden eval`.

use std::path::PathBuf;
use std::time::Duration;

use super::PolicyArgs;
use super::duration::parse_duration;
use super::floor::{Floor, SECOND, check};
use crate::swf::REBUILD_POLICY_ENV;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// Aligned tables, each SWF's diff after its table.
    Table,
    /// One JSON document: the SWF rows, each event sequence's rows, what the target said.
    Json,
    /// JSON Lines: one row per line, as decided.
    Jsonl,
    /// One YAML document, as json.
    Yaml,
}

#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// disable | always | on-version-change
    #[arg(long, env = REBUILD_POLICY_ENV, default_value = "always")]
    pub rebuild_policy: String,
    /// The KFP version to render for.
    #[arg(long, env = "PIPEWARDEN_TARGET_VERSION")]
    pub target_version: Option<String>,
    /// Policy settings (JSON or YAML).
    #[arg(long, env = "PIPEWARDEN_SETTINGS")]
    pub settings: Option<PathBuf>,
    /// How long a tombstone lasts in the simulated event sequence.
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub tombstone_ttl: Duration,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
    /// Exit 1 when a decision would write (an SWF that differs from its render, a completion
    /// that would be notified), 0 when none would, 2 on an error (a policy error included),
    /// as `kubectl diff` does. Without it: 0, or 1 on a policy error.
    #[arg(long)]
    pub exit_code: bool,
    /// SWF files, or files of workflow watch events.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
}

impl EvalArgs {
    /// `policy` is the policy flags with the settings' budget filled in.
    pub fn check_floors(&self, policy: &PolicyArgs) -> anyhow::Result<()> {
        let mut floors = policy.floors();
        floors.push(Floor::duration(
            "--tombstone-ttl",
            None,
            self.tombstone_ttl,
            SECOND,
        ));
        check(&floors)
    }
}
