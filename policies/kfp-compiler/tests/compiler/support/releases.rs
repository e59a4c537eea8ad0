//! The per-release data sets under `tests/data/upstream/kfp-<release>`: what each release's
//! own compiler, built from source at its tag, wrote for the IRs of its tree under that
//! release's default install (`settings/install.json`) and a busier configuration
//! (`settings/busy.json`). Each folder's README says how the outputs were made and which
//! orders Go leaves random; [`normalise`] fixes exactly those.

use std::path::{Path, PathBuf};

use kfp_compiler::{CompileOptions, IrFile, Release};
use serde::Deserialize;
use serde_json::Value;

use super::{upstream_dir, yaml_documents};

/// One release's data set.
pub struct ReleaseSet {
    pub release: Release,
    /// The folder under `tests/data/upstream`.
    pub folder: &'static str,
    pub dir: PathBuf,
    pub cases: Vec<Case>,
}

/// One IR and the workflows the release compiled from it.
pub struct Case {
    pub name: String,
    pub ir: PathBuf,
    pub compiled: PathBuf,
    /// Left out for IRs over 150 KB.
    pub compiled_busy: Option<PathBuf>,
}

/// The settings a case was compiled under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Settings {
    Install,
    Busy,
}

impl Settings {
    pub const ALL: [Settings; 2] = [Settings::Install, Settings::Busy];

    pub fn label(self) -> &'static str {
        match self {
            Settings::Install => "install",
            Settings::Busy => "busy",
        }
    }

    fn file(self) -> &'static str {
        match self {
            Settings::Install => "install.json",
            Settings::Busy => "busy.json",
        }
    }
}

/// The data folder of each supported release, as the release ledger names it (2.17.0: the
/// exact outputs, not upstream's goldens, which `upstream_goldens.rs` replays).
pub fn folder(release: Release) -> &'static str {
    release.data_folder()
}

/// The releases whose data sets are checked in and proven.
pub const PROVEN: &[Release] = &Release::ALL;

/// The releases to test: [`PROVEN`], or those named in `KFP_RELEASES` (comma separated).
pub fn selected_releases() -> Vec<Release> {
    match std::env::var("KFP_RELEASES") {
        Ok(list) if !list.trim().is_empty() => list
            .split(',')
            .map(|v| {
                Release::parse(v.trim()).unwrap_or_else(|| panic!("KFP_RELEASES: unknown {v:?}"))
            })
            .collect(),
        _ => PROVEN.to_vec(),
    }
}

#[derive(Deserialize)]
struct IndexEntry {
    case: String,
    ir: String,
    compiled: String,
    compiled_busy: Option<String>,
}

impl ReleaseSet {
    pub fn load(release: Release) -> Self {
        let folder = folder(release);
        let dir = upstream_dir(folder);
        let index = std::fs::read_to_string(dir.join("index.json"))
            .unwrap_or_else(|e| panic!("reading {}/index.json: {e}", dir.display()));
        let entries: Vec<IndexEntry> =
            serde_json::from_str(&index).expect("index.json is a list of cases");
        assert!(!entries.is_empty(), "{folder}: index.json lists no cases");
        let cases = entries
            .into_iter()
            .map(|entry| {
                let case = Case {
                    ir: dir.join(&entry.ir),
                    compiled: dir.join(&entry.compiled),
                    compiled_busy: entry.compiled_busy.map(|path| dir.join(path)),
                    name: entry.case,
                };
                for path in [
                    Some(&case.ir),
                    Some(&case.compiled),
                    case.compiled_busy.as_ref(),
                ]
                .into_iter()
                .flatten()
                {
                    assert!(path.is_file(), "{folder}: missing {}", path.display());
                }
                case
            })
            .collect();
        ReleaseSet {
            release,
            folder,
            dir,
            cases,
        }
    }

    pub fn settings(&self, settings: Settings) -> Value {
        let path = self.dir.join("settings").join(settings.file());
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    pub fn options(&self, settings: Settings) -> CompileOptions {
        CompileOptions::from_settings_for(self.release, &self.settings(settings))
            .unwrap_or_else(|e| panic!("{} {}: {e}", self.folder, settings.label()))
    }
}

impl Case {
    /// The expected workflow under `settings`, when the data set has one.
    pub fn expected_path(&self, settings: Settings) -> Option<&Path> {
        match settings {
            Settings::Install => Some(&self.compiled),
            Settings::Busy => self.compiled_busy.as_deref(),
        }
    }
}

/// An IR file: JSON read as JSON (YAML does not allow the tabs JSON may hold), else YAML.
pub fn load_ir_file(path: &Path) -> IrFile {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let documents = if text.trim_start().starts_with('{') {
        serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .collect::<Result<Vec<_>, _>>()
            .unwrap_or_else(|_| yaml_documents(&text))
    } else {
        yaml_documents(&text)
    };
    IrFile::from_documents(documents).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn load_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The workflow with the orders Go leaves random (as each data set's README lists them) put
/// in a fixed one, and nothing else changed:
///
/// - `spec.arguments.parameters` sorted by `name`;
/// - every `"dependentTasks":[...]` list inside a JSON-string value sorted, item by item
///   as text (so the rest of the string stays byte for byte what was written);
/// - every DAG task's `depends` with its ` && ` clauses sorted.
pub fn normalise(mut workflow: Value) -> Value {
    if let Some(parameters) = workflow
        .pointer_mut("/spec/arguments/parameters")
        .and_then(Value::as_array_mut)
    {
        parameters.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
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
        }
    }
    sort_dependent_tasks_in_strings(&mut workflow);
    workflow
}

fn sort_dependent_tasks_in_strings(value: &mut Value) {
    match value {
        Value::String(text) => {
            if let Some(sorted) = sort_dependent_tasks_text(text) {
                *text = sorted;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(sort_dependent_tasks_in_strings),
        Value::Object(map) => map.values_mut().for_each(sort_dependent_tasks_in_strings),
        _ => {}
    }
}

/// `text` with the items of each `"dependentTasks":[...]` sorted, when it has any.
pub fn sort_dependent_tasks_text(text: &str) -> Option<String> {
    const KEY: &str = "\"dependentTasks\":[";
    if !text.contains(KEY) {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(KEY) {
        let (before, after) = rest.split_at(start + KEY.len());
        out.push_str(before);
        let Some((mut items, end)) = string_items(after) else {
            // Not a list of strings: leave the text as it is.
            out.push_str(after);
            return Some(out);
        };
        items.sort_unstable();
        out.push_str(&items.join(","));
        rest = &after[end..];
    }
    out.push_str(rest);
    Some(out)
}

/// The raw JSON string items of a list body (`"a","b"]...`) and where its `]` is.
fn string_items(body: &str) -> Option<(Vec<&str>, usize)> {
    let bytes = body.as_bytes();
    let mut items = Vec::new();
    let mut at = 0;
    if bytes.first() == Some(&b']') {
        return Some((items, 0));
    }
    loop {
        if bytes.get(at) != Some(&b'"') {
            return None;
        }
        let start = at;
        at += 1;
        loop {
            match bytes.get(at)? {
                b'\\' => at += 2,
                b'"' => break,
                _ => at += 1,
            }
        }
        at += 1;
        items.push(&body[start..at]);
        match bytes.get(at)? {
            b',' => at += 1,
            b']' => return Some((items, at)),
            _ => return None,
        }
    }
}
