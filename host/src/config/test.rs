//! Flags of `pipewarden test`.

use std::path::PathBuf;

use super::PolicyArgs;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestOutput {
    /// A row per case, then one line per failure and the counts.
    Table,
    /// One JSON document: every case, passed and failed counts.
    Json,
    /// JSON Lines: one line per case.
    Jsonl,
    /// One YAML document, as json.
    Yaml,
    /// JUnit XML, a test suite per case file, for CI systems that read it.
    Junit,
}

#[derive(clap::Args, Debug)]
pub struct TestArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Policy settings (JSON or YAML) for every file, instead of each file's own `settings`.
    #[arg(long, env = "PIPEWARDEN_SETTINGS")]
    pub settings: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = TestOutput::Table)]
    pub output: TestOutput,
    /// Run only the cases whose name matches this regular expression (Rust `regex` syntax,
    /// unanchored, as `go test -run`); one that matches no case is an error (2).
    #[arg(long, value_name = "REGEX", value_parser = parse_regex)]
    pub run: Option<regex::Regex>,
    /// Case files (YAML).
    #[arg(required = true)]
    pub cases: Vec<PathBuf>,
}

fn parse_regex(text: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(text).map_err(|e| e.to_string())
}
