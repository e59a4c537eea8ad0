//! Shared by the golden tests: finding KFP's test data, reading IR and workflows, the
//! per-case environments of upstream's test, and a readable structural diff.

#![allow(dead_code)]

pub mod releases;

use std::fmt::Write;
use std::path::{Path, PathBuf};

use kfp_compiler::{CompileOptions, IrFile};
use serde::Deserialize;
use serde_json::{Value, json};

/// `tests/data/upstream/<release>` in this repository (upstream's files, copied verbatim with
/// their provenance); `KFP_UPSTREAM_DATA` points elsewhere. Panics naming the place it looked.
pub fn upstream_dir(release: &str) -> PathBuf {
    let base = std::env::var_os("KFP_UPSTREAM_DATA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/upstream"),
        PathBuf::from,
    );
    let dir = base.join(release);
    assert!(
        dir.join("index.json").is_file() || dir.join("README.md").is_file(),
        "KFP upstream test data not found at {} (set KFP_UPSTREAM_DATA to the directory holding `{release}`)",
        dir.display()
    );
    dir
}

#[derive(Deserialize)]
struct IndexEntry {
    name: String,
}

/// The case names of `index.json`, each checked to have an IR and a golden.
pub fn case_names(dir: &Path) -> Vec<String> {
    let index = std::fs::read_to_string(dir.join("index.json"))
        .unwrap_or_else(|e| panic!("reading {}/index.json: {e}", dir.display()));
    let entries: Vec<IndexEntry> =
        serde_json::from_str(&index).expect("index.json is a list of cases");
    assert!(!entries.is_empty(), "index.json lists no cases");
    entries
        .into_iter()
        .map(|entry| {
            assert!(
                ir_path(dir, &entry.name).is_file(),
                "no IR for case {}",
                entry.name
            );
            assert!(
                golden_path(dir, &entry.name).is_file(),
                "no golden for case {}",
                entry.name
            );
            entry.name
        })
        .collect()
}

pub fn ir_path(dir: &Path, case: &str) -> PathBuf {
    let yaml = dir.join("ir").join(format!("{case}.yaml"));
    if yaml.is_file() {
        yaml
    } else {
        dir.join("ir").join(format!("{case}.json"))
    }
}

pub fn golden_path(dir: &Path, case: &str) -> PathBuf {
    dir.join("compiled").join(format!("{case}.yaml"))
}

/// Every document of a YAML (or JSON) text.
pub fn yaml_documents(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|document| Value::deserialize(document).expect("YAML document converts to JSON"))
        .collect()
}

pub fn load_ir(path: &Path) -> IrFile {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    IrFile::from_documents(yaml_documents(&text))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn load_yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    yaml_documents(&text)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("{} holds no document", path.display()))
}

/// One compile of upstream's test: cache setting and environment variables.
#[derive(Clone, Debug)]
pub struct Environment {
    pub cache_disabled: bool,
    pub variables: Value,
}

impl Environment {
    pub fn label(&self) -> &'static str {
        if self.cache_disabled {
            "cache disabled"
        } else {
            "cache enabled"
        }
    }

    pub fn options(&self) -> CompileOptions {
        let mut options =
            CompileOptions::from_settings(&self.variables).expect("test settings are valid");
        options.cache_disabled = self.cache_disabled;
        options
    }
}

/// The compiles upstream's `argo_ginkgo_test.go` runs for a case: every file with the cache
/// disabled and enabled, except the cases that need their own variables, which run only
/// in the context that sets them.
pub fn environments(case: &str) -> Vec<Environment> {
    let run_as_user = json!({"PIPELINE_RUN_AS_USER": "1001", "PIPELINE_LOG_LEVEL": "3"});
    let env = |cache_disabled: bool, variables: &Value| Environment {
        cache_disabled,
        variables: variables.clone(),
    };
    match case {
        "run_as_user_cache_disabled" => vec![env(true, &run_as_user)],
        "run_as_user_cache_enabled" => vec![env(false, &run_as_user)],
        "mounted_cabundle_configmap" => vec![env(
            false,
            &json!({"CABUNDLE_CONFIGMAP_NAME": "test-configmap-name", "CABUNDLE_KEY_NAME": "test-configmap-key"}),
        )],
        "mounted_cabundle_secret" => vec![env(
            false,
            &json!({"CABUNDLE_SECRET_NAME": "test-secret-name"}),
        )],
        _ => vec![env(true, &json!({})), env(false, &json!({}))],
    }
}

/// A compiled workflow in the form upstream compares: arguments sorted by name, and for a
/// cache-disabled compile the `--cache_disabled` flags taken out after checking they are
/// exactly where upstream's `ConfigureCacheSettings` expects them (drivers and importer, that
/// is containers taking `--run_id`, and launcher init containers).
pub fn comparable(mut workflow: Value, cache_disabled: bool) -> Result<Value, String> {
    if let Some(parameters) = workflow
        .pointer_mut("/spec/arguments/parameters")
        .and_then(Value::as_array_mut)
    {
        parameters.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    }
    let templates = workflow
        .pointer_mut("/spec/templates")
        .and_then(Value::as_array_mut)
        .map(std::mem::take)
        .unwrap_or_default();
    let mut checked = Vec::with_capacity(templates.len());
    for mut template in templates {
        let name = template["name"].as_str().unwrap_or("?").to_owned();
        if let Some(args) = template
            .pointer_mut("/container/args")
            .and_then(Value::as_array_mut)
        {
            let expected = cache_disabled && args.iter().any(|a| a == "--run_id");
            take_flag(args, expected).map_err(|e| format!("template {name} container: {e}"))?;
        }
        let has_container = template.get("container").is_some();
        for init in template
            .get_mut("initContainers")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let args = init
                .as_object_mut()
                .expect("init containers are objects")
                .entry("args")
                .or_insert_with(|| json!([]));
            let args = args.as_array_mut().expect("args is a list");
            take_flag(args, cache_disabled && has_container)
                .map_err(|e| format!("template {name} init container: {e}"))?;
        }
        checked.push(template);
    }
    if let Some(spec) = workflow.get_mut("spec").and_then(Value::as_object_mut)
        && !checked.is_empty()
    {
        spec.insert("templates".into(), Value::Array(checked));
    }
    Ok(workflow)
}

fn take_flag(args: &mut Vec<Value>, expected: bool) -> Result<(), String> {
    let count = args.iter().filter(|a| *a == "--cache_disabled").count();
    match (expected, count) {
        (true, 1) | (false, 0) => {
            args.retain(|a| a != "--cache_disabled");
            Ok(())
        }
        _ => Err(format!(
            "expected {} --cache_disabled flag(s), found {count}",
            u8::from(expected)
        )),
    }
}

/// The workflow with the parts Go leaves in random order put in a fixed one.
///
/// Go adds implicit task dependencies while iterating a map, so when a task's inputs name
/// several producers its IR does not list, the order of those `dependentTasks` (and of the
/// `depends` clauses built from them) changes from one Go run to the next. Upstream's matcher
/// never notices (it compares argument strings as bags of characters and DAG tasks not at
/// all). Here both sides get those lists sorted, and nothing else.
pub fn without_go_map_order(mut workflow: Value) -> Value {
    let sort_json_string = |value: &mut Value| {
        if let Some(text) = value.as_str()
            && text.starts_with('{')
            && let Ok(mut parsed) = serde_json::from_str::<Value>(text)
        {
            sort_dependent_tasks(&mut parsed);
            *value = Value::String(kfp_compiler::gojson::to_string(&parsed));
        }
    };
    if let Some(parameters) = workflow
        .pointer_mut("/spec/arguments/parameters")
        .and_then(Value::as_array_mut)
    {
        for parameter in parameters {
            if let Some(value) = parameter.get_mut("value") {
                sort_json_string(value);
            }
        }
    }
    for template in workflow
        .pointer_mut("/spec/templates")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        for task in template
            .pointer_mut("/dag/tasks")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(Value::String(depends)) = task.get_mut("depends") {
                let mut clauses: Vec<&str> = depends.split(" && ").collect();
                clauses.sort_unstable();
                *depends = clauses.join(" && ");
            }
            for parameter in task
                .pointer_mut("/arguments/parameters")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if parameter["name"] == "task"
                    && let Some(value) = parameter.get_mut("value")
                {
                    sort_json_string(value);
                }
            }
        }
    }
    workflow
}

fn sort_dependent_tasks(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                if key == "dependentTasks"
                    && let Value::Array(list) = item
                {
                    list.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
                } else {
                    sort_dependent_tasks(item);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(sort_dependent_tasks),
        _ => {}
    }
}

/// One place where two JSON values differ.
pub struct Difference {
    pub path: String,
    pub expected: String,
    pub got: String,
}

/// Structural differences, at most `limit`.
pub fn diff(expected: &Value, got: &Value, limit: usize) -> Vec<Difference> {
    let mut out = Vec::new();
    walk(expected, got, &mut String::new(), &mut out, limit);
    out
}

fn walk(expected: &Value, got: &Value, path: &mut String, out: &mut Vec<Difference>, limit: usize) {
    if out.len() >= limit || expected == got {
        return;
    }
    match (expected, got) {
        (Value::Object(e), Value::Object(g)) => {
            let mut keys: Vec<&String> = e.keys().chain(g.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let length = path.len();
                let _ = write!(path, ".{key}");
                match (e.get(key), g.get(key)) {
                    (Some(ev), Some(gv)) => walk(ev, gv, path, out, limit),
                    (ev, gv) => push(out, path, ev, gv),
                }
                path.truncate(length);
            }
        }
        (Value::Array(e), Value::Array(g)) if all_scalars(e) && all_scalars(g) => {
            // Argument lists and the like: one difference, as an edit script.
            out.push(Difference {
                path: path.clone(),
                expected: format!("{} items", e.len()),
                got: format!("{} items: {}", g.len(), edit_script(e, g)),
            });
        }
        (Value::Array(e), Value::Array(g)) => {
            for index in 0..e.len().max(g.len()) {
                let length = path.len();
                let label = e
                    .get(index)
                    .or_else(|| g.get(index))
                    .and_then(|item| item.get("name"))
                    .and_then(Value::as_str)
                    .map(|name| format!("[{index}:{name}]"))
                    .unwrap_or_else(|| format!("[{index}]"));
                path.push_str(&label);
                match (e.get(index), g.get(index)) {
                    (Some(ev), Some(gv)) => walk(ev, gv, path, out, limit),
                    (ev, gv) => push(out, path, ev, gv),
                }
                path.truncate(length);
            }
        }
        (Value::String(e), Value::String(g)) => {
            let at = e.bytes().zip(g.bytes()).take_while(|(a, b)| a == b).count();
            let window = |s: &str| {
                let start = floor_char(s, at.saturating_sub(60));
                let end = floor_char(s, (at + 100).min(s.len()));
                format!(
                    "…{}… (length {}, first difference at {at})",
                    &s[start..end],
                    s.len()
                )
            };
            out.push(Difference {
                path: path.clone(),
                expected: window(e),
                got: window(g),
            });
        }
        _ => push(out, path, Some(expected), Some(got)),
    }
}

fn all_scalars(items: &[Value]) -> bool {
    items
        .iter()
        .all(|item| !item.is_array() && !item.is_object())
}

/// The items of `expected` missing from `got` (`-`) and those added (`+`), at their
/// positions, from a longest common subsequence.
fn edit_script(expected: &[Value], got: &[Value]) -> String {
    let (n, m) = (expected.len(), got.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if expected[i] == got[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut edits = Vec::new();
    while i < n || j < m {
        if i < n && j < m && expected[i] == got[j] {
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            edits.push(format!("+[{j}] {}", got[j]));
            j += 1;
        } else {
            edits.push(format!("-[{i}] {}", expected[i]));
            i += 1;
        }
    }
    edits.join(", ")
}

fn floor_char(s: &str, mut index: usize) -> usize {
    while !s.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn push(out: &mut Vec<Difference>, path: &str, expected: Option<&Value>, got: Option<&Value>) {
    let show = |v: Option<&Value>| match v {
        None => "(absent)".to_owned(),
        Some(v) => {
            let text = v.to_string();
            if text.len() > 300 {
                format!(
                    "{}… ({} bytes)",
                    &text[..floor_char(&text, 300)],
                    text.len()
                )
            } else {
                text
            }
        }
    };
    out.push(Difference {
        path: path.to_owned(),
        expected: show(expected),
        got: show(got),
    });
}

pub fn render_differences(differences: &[Difference]) -> String {
    let mut text = String::new();
    for d in differences {
        let _ = writeln!(
            text,
            "    at {}\n      expected: {}\n      got:      {}",
            d.path, d.expected, d.got
        );
    }
    text
}
