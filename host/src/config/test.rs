//! Flags of `pipewarden test`.

use std::path::PathBuf;

use super::PolicyArgs;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestOutput {
    Table,
    Json,
    Yaml,
}

#[derive(clap::Args, Debug)]
pub struct TestArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Policy settings (JSON or YAML) for every file, instead of each file's own `settings`.
    #[arg(long, env = "PIPEWARDEN_SETTINGS")]
    pub settings: Option<PathBuf>,
    #[arg(short = 'o', long, value_enum, default_value_t = TestOutput::Table)]
    pub output: TestOutput,
    /// Case files (YAML).
    #[arg(required = true)]
    pub cases: Vec<PathBuf>,
}
