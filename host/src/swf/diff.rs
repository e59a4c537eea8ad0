//! Semantic diff of ScheduledWorkflows: what a write would change, ignoring representation.
//!
//! The embedded workflow (`spec.workflow.spec`, a JSON string) is compared parsed, and
//! `spec.workflow.parameters` as name -> value, so key order, whitespace and parameter order
//! never cause a write. Only `spec` and the annotations the render sets are compared: status
//! and server-set metadata are never ours to write.

use serde_json::{Map, Value};

/// One difference between the live and the desired object.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    Added {
        path: String,
        value: Value,
    },
    Removed {
        path: String,
        value: Value,
    },
    Changed {
        path: String,
        from: Value,
        to: Value,
    },
    /// A list of plain values (e.g. container args) edited in place.
    Items {
        path: String,
        removed: Vec<Value>,
        added: Vec<Value>,
    },
}

impl Change {
    pub fn path(&self) -> &str {
        match self {
            Change::Added { path, .. }
            | Change::Removed { path, .. }
            | Change::Changed { path, .. }
            | Change::Items { path, .. } => path,
        }
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Added { path, value } => write!(f, "+ {path}: {}", brief(value)),
            Change::Removed { path, value } => write!(f, "- {path}: {}", brief(value)),
            Change::Changed { path, from, to } => {
                write!(f, "~ {path}: {} -> {}", brief(from), brief(to))
            }
            Change::Items {
                path,
                removed,
                added,
            } => {
                if removed.len() + added.len() <= SHORT_LIST {
                    write!(f, "~ {path}:")?;
                    for value in removed {
                        write!(f, " -{}", brief(value))?;
                    }
                    for value in added {
                        write!(f, " +{}", brief(value))?;
                    }
                    return Ok(());
                }
                write!(f, "~ {path}: -{} +{} items", removed.len(), added.len())?;
                for (sign, values) in [('-', removed), ('+', added)] {
                    for item in flag_groups(values) {
                        write!(f, "\n    {sign} {item}")?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// Item edits up to this many print on one line; longer ones print one item per line.
const SHORT_LIST: usize = 4;

/// Items as lines, a `--flag` joined with the value that follows it, as on a command line.
fn flag_groups(values: &[Value]) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut pending_flag = false;
    for value in values {
        let text = value
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| value.to_string());
        let shown = if text.is_empty() {
            "\"\"".to_string()
        } else {
            text.clone()
        };
        match lines.last_mut() {
            Some(last) if pending_flag && !text.starts_with("--") => {
                last.push(' ');
                last.push_str(&shown);
                pending_flag = false;
            }
            _ => {
                pending_flag = text.starts_with("--") && !text.contains('=');
                lines.push(shown);
            }
        }
    }
    lines
}

/// Differences in `spec` and in the annotations `desired` sets; empty means no write is needed.
pub fn semantic_diff(live: &Value, desired: &Value) -> Vec<Change> {
    let mut changes = Vec::new();
    let empty = Map::new();
    let live_annotations = annotations(live).unwrap_or(&empty);
    for (key, value) in annotations(desired).unwrap_or(&empty) {
        let path = format!("metadata.annotations{}", key_segment(key));
        match live_annotations.get(key) {
            None => changes.push(Change::Added {
                path,
                value: value.clone(),
            }),
            Some(old) if old != value => changes.push(Change::Changed {
                path,
                from: old.clone(),
                to: value.clone(),
            }),
            Some(_) => {}
        }
    }
    // The same spec needs no parse: an SWF already rendered, on every resync.
    if live.get("spec") == desired.get("spec") {
        return changes;
    }
    let live_spec = live.get("spec").map(normalized_spec);
    let desired_spec = desired.get("spec").map(normalized_spec);
    if let (Some(Form::Object), Some(Form::String)) = (
        live.get("spec").and_then(workflow_spec_form),
        desired.get("spec").and_then(workflow_spec_form),
    ) {
        changes.push(Change::Changed {
            path: "spec.workflow.spec".into(),
            from: "(legacy object form)".into(),
            to: "(JSON string form)".into(),
        });
    }
    if live_spec != desired_spec {
        walk(
            "spec",
            live_spec.as_ref(),
            desired_spec.as_ref(),
            &mut changes,
        );
    }
    changes
}

fn annotations(object: &Value) -> Option<&Map<String, Value>> {
    object.pointer("/metadata/annotations")?.as_object()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    String,
    Object,
}

fn workflow_spec_form(spec: &Value) -> Option<Form> {
    match spec.pointer("/workflow/spec")? {
        Value::String(_) => Some(Form::String),
        Value::Object(_) => Some(Form::Object),
        _ => None,
    }
}

/// `spec` with the embedded workflow parsed and parameters keyed by name. Built field by field:
/// the embedded workflow's text is parsed where it lies, never copied first.
fn normalized_spec(spec: &Value) -> Value {
    let Value::Object(fields) = spec else {
        return spec.clone();
    };
    let normalized = fields.iter().map(|(key, value)| {
        let value = match (key.as_str(), value) {
            ("workflow", Value::Object(workflow)) => normalized_workflow(workflow),
            _ => value.clone(),
        };
        (key.clone(), value)
    });
    Value::Object(normalized.collect())
}

fn normalized_workflow(workflow: &Map<String, Value>) -> Value {
    let normalized = workflow.iter().map(|(key, value)| {
        let parsed = match (key.as_str(), value) {
            ("spec", Value::String(text)) => serde_json::from_str::<Value>(text).ok(),
            ("parameters", Value::Array(list)) => by_name(list, "value").map(Value::Object),
            _ => None,
        };
        (key.clone(), parsed.unwrap_or_else(|| value.clone()))
    });
    Value::Object(normalized.collect())
}

/// `[{name, <field>}]` as name -> field, if every item has a unique string name.
fn by_name(list: &[Value], field: &str) -> Option<Map<String, Value>> {
    let mut map = Map::new();
    for item in list {
        let name = item.get("name")?.as_str()?;
        let value = item.get(field).cloned().unwrap_or(Value::Null);
        if map.insert(name.to_string(), value).is_some() {
            return None;
        }
    }
    Some(map)
}

/// The changes from `live` to `desired`, which differ: every caller compares first, so equal
/// subtrees are compared once and their paths never formatted.
fn walk(path: &str, live: Option<&Value>, desired: Option<&Value>, out: &mut Vec<Change>) {
    match (live, desired) {
        (None, None) => {}
        (None, Some(value)) => out.push(Change::Added {
            path: path.into(),
            value: value.clone(),
        }),
        (Some(value), None) => out.push(Change::Removed {
            path: path.into(),
            value: value.clone(),
        }),
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let (a, b) = (a.get(key), b.get(key));
                if a != b {
                    walk(&format!("{path}{}", key_segment(key)), a, b, out);
                }
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) => walk_list(path, a, b, out),
        (Some(a), Some(b)) => out.push(Change::Changed {
            path: path.into(),
            from: a.clone(),
            to: b.clone(),
        }),
    }
}

fn walk_list<'a>(path: &str, a: &'a [Value], b: &'a [Value], out: &mut Vec<Change>) {
    if let (Some(names_a), Some(names_b)) = (item_names(a), item_names(b)) {
        let mut sorted_a = names_a.clone();
        let mut sorted_b = names_b.clone();
        sorted_a.sort();
        sorted_b.sort();
        if sorted_a == sorted_b && names_a != names_b && !order_is_irrelevant(path) {
            out.push(Change::Changed {
                path: format!("{path} (order)"),
                from: names_a.iter().map(|n| Value::from(*n)).collect(),
                to: names_b.iter().map(|n| Value::from(*n)).collect(),
            });
        }
        let mut names: Vec<&str> = names_a.iter().chain(&names_b).copied().collect();
        names.sort();
        names.dedup();
        for name in names {
            let find = |list: &'a [Value]| {
                list.iter()
                    .find(|item| item.get("name").and_then(Value::as_str) == Some(name))
            };
            let (a, b) = (find(a), find(b));
            if a != b {
                walk(&format!("{path}[{name}]"), a, b, out);
            }
        }
    } else if a.iter().chain(b).all(|v| !v.is_object() && !v.is_array()) {
        let (removed, added) = list_edits(a, b);
        out.push(Change::Items {
            path: path.into(),
            removed,
            added,
        });
    } else {
        for i in 0..a.len().max(b.len()) {
            let (a, b) = (a.get(i), b.get(i));
            if a != b {
                walk(&format!("{path}[{i}]"), a, b, out);
            }
        }
    }
}

/// Argo looks parameters and templates up by name; their order carries no meaning.
fn order_is_irrelevant(path: &str) -> bool {
    path.ends_with(".parameters") || path.ends_with(".templates")
}

/// Names of `[{name: ...}]` items, if all are unique strings.
fn item_names(list: &[Value]) -> Option<Vec<&str>> {
    let names: Vec<&str> = list
        .iter()
        .map(|item| item.get("name")?.as_str())
        .collect::<Option<_>>()?;
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    (unique.len() == names.len() && !names.is_empty()).then_some(names)
}

/// Items removed from `a` and added in `b`, outside their longest common subsequence.
fn list_edits(a: &[Value], b: &[Value]) -> (Vec<Value>, Vec<Value>) {
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            added.push(b[j].clone());
            j += 1;
        } else {
            removed.push(a[i].clone());
            i += 1;
        }
    }
    (removed, added)
}

pub(crate) fn key_segment(key: &str) -> String {
    if key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        format!(".{key}")
    } else {
        format!("[{key:?}]")
    }
}

/// A value shortened for one line of output.
fn brief(value: &Value) -> String {
    const MAX: usize = 160;
    let text = value.to_string();
    if text.chars().count() <= MAX {
        return text;
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}...")
}
