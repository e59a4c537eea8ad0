//! The values table in the chart's README is generated from values.yaml: each value, its default
//! (as Helm reads it) and its `# --` comment. The test fails when the README is stale;
//! `make chart-readme` (UPDATE_CHART_README=1) writes it.

use anyhow::{Context as _, Result, ensure};
use pipewarden_tests::deploy_support::repo_path;
use serde_yaml::Value;

const VALUES: &str = "deploy/helm/pipewarden/values.yaml";
const README: &str = "deploy/helm/pipewarden/README.md";
const START: &str = "<!-- values table: generated from values.yaml by `make chart-readme` -->\n";
const END: &str = "<!-- end of values table -->\n";

/// One row: the dotted key, its default and its description.
struct Row {
    key: String,
    default: String,
    what: String,
}

fn lookup<'a>(values: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(values, |at, key| at.get(key.as_str()))
}

/// A default as a reader writes it on the command line: scalars as they are, the rest as JSON.
fn shown(value: &Value) -> Result<String> {
    Ok(match value {
        Value::String(text) if text.is_empty() => "`\"\"`".to_owned(),
        Value::String(text) => format!("`{text}`"),
        Value::Null => "`null`".to_owned(),
        other => format!("`{}`", serde_json::to_string(other)?),
    })
}

/// The rows, in the file's order: every value that is not a map of further values, and every
/// map that has a description of its own.
fn rows(text: &str) -> Result<Vec<Row>> {
    let values: Value = serde_yaml::from_str(text)?;
    let mut rows = Vec::new();
    let mut path: Vec<(usize, String)> = Vec::new();
    let mut doc: Option<String> = None;
    // Inside a leaf's block value (a list of maps): its lines are not values of their own.
    let mut leaf_at: Option<usize> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if leaf_at.is_some_and(|at| indent > at) && !trimmed.is_empty() {
            continue;
        }
        leaf_at = None;
        if let Some(comment) = trimmed.strip_prefix('#') {
            let comment = comment.trim();
            match (comment.strip_prefix("-- "), &mut doc) {
                (Some(first), _) => doc = Some(first.to_owned()),
                (None, Some(so_far)) => {
                    so_far.push(' ');
                    so_far.push_str(comment);
                }
                (None, None) => {}
            }
            continue;
        }
        if trimmed.is_empty() {
            doc = None;
            continue;
        }
        let Some((key, inline)) = trimmed.split_once(':') else {
            continue;
        };
        if trimmed.starts_with('-') || key.contains(' ') {
            continue;
        }
        while path.last().is_some_and(|(at, _)| *at >= indent) {
            path.pop();
        }
        path.push((indent, key.to_owned()));
        let keys: Vec<String> = path.iter().map(|(_, k)| k.clone()).collect();
        let value = lookup(&values, &keys).with_context(|| keys.join("."))?;
        // A map written inline (`{name: "", key: ca.crt}`) is one value.
        let inline = !inline.trim().is_empty() && !inline.trim().starts_with('#');
        let parent = !inline && value.as_mapping().is_some_and(|m| !m.is_empty());
        let what = doc.take().unwrap_or_default();
        if !parent {
            leaf_at = Some(indent);
        }
        if !parent || !what.is_empty() {
            rows.push(Row {
                key: keys.join("."),
                default: if parent {
                    "(below)".to_owned()
                } else {
                    shown(value)?
                },
                what: what
                    .replace('|', "\\|")
                    .replace('<', "&lt;")
                    .replace('>', "&gt;"),
            });
        }
    }
    Ok(rows)
}

fn table(rows: &[Row]) -> String {
    let mut out = String::from("| value | default | what |\n| --- | --- | --- |\n");
    for row in rows {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            row.key, row.default, row.what
        ));
    }
    out
}

#[test]
fn the_chart_readme_values_table_is_generated_from_values_yaml() -> Result<()> {
    let values = std::fs::read_to_string(repo_path(VALUES))?;
    let rows = rows(&values)?;
    let readme_path = repo_path(README);
    let readme = std::fs::read_to_string(&readme_path)?;
    let (before, rest) = readme
        .split_once(START)
        .context("no values table start marker")?;
    let (_, after) = rest.split_once(END).context("no values table end marker")?;
    let wanted = format!("{before}{START}{}{END}{after}", table(&rows));
    let update = std::env::var_os("UPDATE_CHART_README").is_some();
    if update && readme != wanted {
        std::fs::write(&readme_path, &wanted)?;
    }
    ensure!(
        update || readme == wanted,
        "{README} is out of date with {VALUES}: run `make chart-readme`"
    );
    // Every value a user sets has a description.
    let bare: Vec<&str> = rows
        .iter()
        .filter(|r| r.what.is_empty() && !r.key.contains('.'))
        .map(|r| r.key.as_str())
        .collect();
    println!(
        "{} values in the table; top-level without a `# --` comment: {bare:?}",
        rows.len()
    );
    Ok(())
}
