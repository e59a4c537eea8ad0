//! Test fixtures: the SWFs under `tests/data/swf` and the shipped 2.17.0 settings.

use std::path::PathBuf;

use serde_json::Value;

use crate::Settings;

fn repo_file(relative: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A fixture SWF (YAML on disk) as JSON text.
pub fn swf_json(name: &str) -> String {
    let yaml: Value = serde_yaml::from_str(&repo_file(&format!("tests/data/swf/{name}"))).unwrap();
    serde_json::to_string(&yaml).unwrap()
}

pub fn settings_text() -> String {
    repo_file("policies/kfp-default/settings/kfp-2.17.0.json")
}

pub fn settings() -> Settings {
    Settings::parse(&settings_text()).unwrap()
}

/// KFP 2.17.0, the target most tests render for.
pub fn target() -> crate::Target {
    crate::Target::of(Some("2.17.0")).unwrap()
}

/// What `settings` compile with for KFP 2.17.0.
pub fn compile_options(settings: &Settings) -> kfp_compiler::CompileOptions {
    settings.compile_options(&target()).unwrap()
}

/// Settings that make the API server KFP's compiler test environment, as upstream's goldens
/// were compiled in: every variable of the default install unset.
pub fn upstream_test_settings() -> Settings {
    let install = target().install_settings();
    let unset: serde_json::Map<String, Value> = install
        .as_object()
        .unwrap()
        .keys()
        .map(|key| (key.clone(), Value::Null))
        .collect();
    Settings::parse(&Value::Object(unset).to_string()).unwrap()
}

/// The workflow embedded in an SWF given as JSON text, in either storage form.
pub fn embedded(swf_json: &str) -> Value {
    let swf: Value = serde_json::from_str(swf_json).unwrap();
    match &swf["spec"]["workflow"]["spec"] {
        Value::String(text) => serde_json::from_str(text).unwrap(),
        other => other.clone(),
    }
}

/// The template called `name` in a parsed workflow.
pub fn template<'a>(workflow: &'a Value, name: &str) -> &'a Value {
    workflow["spec"]["templates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|template| template["name"] == name)
        .unwrap_or_else(|| panic!("no template {name}"))
}

/// A file of KFP's own test data under `tests/data/upstream`.
pub fn upstream_file(relative: &str) -> String {
    repo_file(&format!("tests/data/upstream/{relative}"))
}
