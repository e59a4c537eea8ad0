//! Flags of `pipewarden plan`: every flag and variable of `run`, so the Deployment's
//! environment gives the same policy, settings, target and windows, and how to print.

use std::time::Duration;

use super::RunArgs;
use super::duration::parse_duration;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanOutput {
    /// Aligned tables: the summary by namespace, the SWFs, their diffs, the workflows.
    Table,
    /// One JSON document: settings, summary, both lists.
    Json,
    /// JSON Lines: the settings and summary first, then one line per SWF and per workflow.
    Jsonl,
    /// One YAML document, as json.
    Yaml,
    /// Markdown for a change ticket: the summary, the rows, a diff per SWF that would change.
    Markdown,
}

/// Which rows to list (the summary always counts every SWF and completion).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanOnly {
    /// What would be written: SWFs that would be rebuilt or restored, completions that would
    /// be notified.
    Changed,
    /// What cannot be served: SWFs not rebuildable, on an unsupported target, not adopted or
    /// failed; completions given up, not confirmed or failed by the policy.
    Problems,
}

#[derive(clap::Args, Debug)]
#[command(next_help_heading = "Output")]
pub struct PlanArgs {
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = PlanOutput::Table)]
    pub output: PlanOutput,
    /// List only these rows; the summary still counts everything.
    #[arg(long, value_enum)]
    pub only: Option<PlanOnly>,
    /// Diff lines shown per SWF in table and markdown output, the rest counted (0: no diff);
    /// json, jsonl and yaml carry every line.
    #[arg(long, default_value_t = 40)]
    pub diff_lines: usize,
    /// Exit 1 when the plan has something to write (an SWF that differs from its render, a
    /// completion that would be notified), 0 when not, 2 on an error, as `kubectl diff` does.
    #[arg(long)]
    pub exit_code: bool,
    /// List the completed workflows that finished within this long; older ones are counted.
    #[arg(long, default_value = "24h", value_parser = parse_duration)]
    pub workflows_since: Duration,
    /// No progress lines on stderr.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub run: RunArgs,
}
