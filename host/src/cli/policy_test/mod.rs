//! `pipewarden test`: run case files against a policy through the same engine and decision
//! code as `run`, one row per case. Exit status 0 when every case passes, 1 when any fails, 2
//! when a case file is malformed (nothing runs then). The format is `docs/author/policy-tests.md`.

mod cases;
pub mod format;
mod junit;
mod swf_checks;

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context;
use serde_json::Value;

use super::table::Table;
pub use crate::config::TestOutput;
use crate::config::{TestArgs, split_budget};
use crate::engine::BudgetSettings;
pub use crate::engine::Decisions;
pub use cases::Outcome;
use format::{CaseFile, SettingsSource};

/// One case's row.
#[derive(Debug, serde::Serialize)]
pub struct Row {
    pub file: String,
    pub name: String,
    pub export: &'static str,
    #[serde(flatten)]
    pub outcome: cases::Outcome,
}

/// Every case of the files, against `policy`: rows in file order.
pub struct Report {
    pub rows: Vec<Row>,
}

impl Report {
    pub fn failed(&self) -> usize {
        self.rows.iter().filter(|row| !row.outcome.pass).count()
    }
}

/// Runs every case of every file; returns the exit status (0 all pass, 1 any fails).
pub fn run(args: &TestArgs) -> anyhow::Result<i32> {
    // Every file is read and checked before the policy runs: a malformed one is status 2.
    let mut files = load_files(&args.cases)?;
    if let Some(run) = &args.run {
        for file in &mut files {
            file.cases.retain(|case| run.is_match(&case.name));
        }
        files.retain(|file| !file.cases.is_empty());
        if files.is_empty() {
            anyhow::bail!("--run {run}: no case name matches");
        }
    }
    let override_settings = args
        .settings
        .as_ref()
        .map(|path| read_settings(&SettingsSource::File(path.clone())))
        .transpose()?;
    // One policy for every file: its budget comes from --settings, else the first file's.
    let budget = match (
        &override_settings,
        files.first().and_then(|f| f.settings.as_ref()),
    ) {
        (Some((_, budget)), _) => *budget,
        (None, Some(source)) => read_settings(source)?.1,
        (None, None) => BudgetSettings::default(),
    };
    let policy_args = args.policy.with_settings_budget(&budget);
    policy_args.check_floors()?;
    let policy = policy_args.load()?;
    let override_settings = override_settings.map(|(value, _)| value);
    let report = run_files(&policy, &files, override_settings.as_ref())?;
    print(&report, args.output)?;
    Ok(if report.failed() == 0 { 0 } else { 1 })
}

/// Reads and checks case files; the first malformed one is an error naming it.
pub fn load_files(paths: &[PathBuf]) -> anyhow::Result<Vec<CaseFile>> {
    paths.iter().map(|path| format::load(path)).collect()
}

/// Runs every case of `files` against `policy`, with each file's settings unless `settings`
/// overrides them all.
pub fn run_files<P: Decisions>(
    policy: &P,
    files: &[CaseFile],
    settings: Option<&Value>,
) -> anyhow::Result<Report> {
    let mut rows = Vec::new();
    for file in files {
        let settings = match (settings, &file.settings) {
            (Some(settings), _) => settings.clone(),
            (None, Some(source)) => {
                read_settings(source)
                    .with_context(|| format!("{}: settings", file.path.display()))?
                    .0
            }
            (None, None) => Value::Object(Default::default()),
        };
        rows.extend(run_file(policy, file, &settings));
    }
    Ok(Report { rows })
}

fn run_file<P: Decisions>(policy: &P, file: &CaseFile, settings: &Value) -> Vec<Row> {
    let defaults = cases::Defaults {
        settings,
        target: file.target.as_deref(),
    };
    file.cases
        .iter()
        .map(|case| Row {
            file: file.path.display().to_string(),
            name: case.name.clone(),
            export: case.export.as_str(),
            outcome: cases::run_case(policy, case, &defaults),
        })
        .collect()
}

/// Settings as the policy sees them, and the budget they set for the host.
fn read_settings(source: &SettingsSource) -> anyhow::Result<(Value, BudgetSettings)> {
    let settings = match source {
        SettingsSource::Inline(value) => split_budget(value.clone())?,
        SettingsSource::File(path) => crate::config::read_settings(Some(path))?,
    };
    Ok((serde_json::from_str(&settings.text)?, settings.budget))
}

/// Prints the report as `pipewarden test` does: a table and one line per failure, or one JSON or
/// YAML document.
pub fn print(report: &Report, output: TestOutput) -> anyhow::Result<()> {
    let (rows, failed) = (&report.rows, report.failed());
    let mut out = std::io::stdout().lock();
    let summary = serde_json::json!({
        "cases": rows,
        "passed": rows.len() - failed,
        "failed": failed,
    });
    match output {
        TestOutput::Json => writeln!(out, "{}", serde_json::to_string_pretty(&summary)?)?,
        TestOutput::Jsonl => {
            for row in rows {
                writeln!(out, "{}", serde_json::to_string(row)?)?;
            }
        }
        TestOutput::Yaml => write!(out, "{}", serde_yaml::to_string(&summary)?)?,
        TestOutput::Junit => write!(out, "{}", junit::render(rows))?,
        TestOutput::Table => {
            let mut table = Table::new(&["CASE", "EXPORT", "EXPECTED", "GOT", "RESULT"]);
            for row in rows {
                table.row(vec![
                    row.name.clone(),
                    row.export.into(),
                    brief(&row.outcome.expected),
                    brief(&row.outcome.got),
                    if row.outcome.pass { "pass" } else { "FAIL" }.into(),
                ]);
            }
            write!(out, "{}", table.render())?;
            for row in rows.iter().filter(|row| !row.outcome.pass) {
                writeln!(
                    out,
                    "FAIL {}: {}: {}",
                    row.file, row.name, row.outcome.detail
                )?;
            }
            writeln!(
                out,
                "{} passed, {failed} failed, {} case(s)",
                rows.len() - failed,
                rows.len()
            )?;
        }
    }
    out.flush()?;
    Ok(())
}

/// A table cell cut to a readable width; `-o json` and `-o yaml` keep the whole text.
fn brief(text: &str) -> String {
    const WIDTH: usize = 60;
    if text.chars().count() <= WIDTH {
        return text.to_string();
    }
    let cut: String = text.chars().take(WIDTH - 1).collect();
    format!("{cut}…")
}
