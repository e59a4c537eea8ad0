//! Rendering: migrating the workflow embedded in a ScheduledWorkflow to the settings.

use pipewarden_guest::swf::EmbeddedWorkflow;
use pipewarden_guest::{RENDER_HASH_ANNOTATION, SETTINGS_HASH_ANNOTATION, Swf, VERSION_ANNOTATION};
use serde_json::{Map, Value, json};

use crate::args::{apply_flags, flag_value};
use crate::{DriverKind, InputSpec, Settings};

/// Name of the init container that copies the launcher binary into each executor pod.
pub const LAUNCHER_CONTAINER: &str = "kfp-launcher";

/// The desired SWF for `swf_json`: [`migrate_workflow`] applied, the workflow written back as a
/// compact JSON string, then stamped with `target_version` (when known), the render digest and
/// the settings digest.
///
/// A reference-only SWF comes back unchanged, byte for byte. Only `spec` and the stamp
/// annotations change; `status` and every other field are kept. The output is canonical JSON,
/// so rendering a render gives the same bytes.
pub fn render_swf(
    swf_json: &str,
    target_version: Option<&str>,
    settings: &Settings,
) -> Result<String, String> {
    render_swf_with(swf_json, target_version, settings, |_| Ok(()))
}

/// [`render_swf`] with a distribution's own step, run on the embedded workflow after the
/// default migration and before stamping (so the digest covers it).
pub fn render_swf_with(
    swf_json: &str,
    target_version: Option<&str>,
    settings: &Settings,
    extra: impl FnOnce(&mut EmbeddedWorkflow) -> Result<(), String>,
) -> Result<String, String> {
    let mut swf = Swf::from_json(swf_json).map_err(|e| e.to_string())?;
    let Some(mut workflow) = swf.embedded_workflow().map_err(|e| e.to_string())? else {
        return Ok(swf_json.to_owned());
    };
    migrate_workflow(&mut workflow, settings)?;
    extra(&mut workflow)?;
    swf.set_embedded_workflow(&workflow);
    if let Some(account) = &settings.service_account
        && let Some(spec) = swf
            .as_value_mut()
            .get_mut("spec")
            .and_then(Value::as_object_mut)
    {
        spec.insert("serviceAccount".to_owned(), json!(account));
    }
    if let Some(version) = target_version.filter(|version| !version.is_empty()) {
        swf.set_annotation(VERSION_ANNOTATION, version);
    }
    let digest = swf.render_digest_with(&workflow);
    swf.set_annotation(RENDER_HASH_ANNOTATION, &digest);
    swf.set_annotation(SETTINGS_HASH_ANNOTATION, &settings.source_digest);
    Ok(swf.to_json())
}

/// Moves the embedded workflow to the settings: the driver image and flags on every template
/// whose container runs `driver`, the launcher image on every `kfp-launcher` init container,
/// and the service account if one is configured. Anything else is left alone.
pub fn migrate_workflow(
    workflow: &mut EmbeddedWorkflow,
    settings: &Settings,
) -> Result<(), String> {
    let keys = top_level_keys(&workflow.value);
    let spec = workflow.workflow_spec_mut().ok_or_else(|| {
        format!(
            "spec.workflow.spec holds no Argo Workflow: no templates list (top-level keys: {keys})"
        )
    })?;
    if let Some(account) = &settings.service_account {
        spec.insert("serviceAccountName".to_owned(), json!(account));
    }
    let templates = spec
        .get_mut("templates")
        .and_then(Value::as_array_mut)
        .ok_or("spec.workflow.spec: templates is not a list")?;
    for (index, template) in templates.iter_mut().enumerate() {
        let template = template
            .as_object_mut()
            .ok_or_else(|| format!("templates[{index}] is not an object"))?;
        let name = template
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("<unnamed>")
            .to_owned();
        migrate_driver(template, settings).map_err(|e| format!("template {name}: {e}"))?;
        migrate_launcher(template, settings);
    }
    Ok(())
}

fn migrate_driver(template: &mut Map<String, Value>, settings: &Settings) -> Result<(), String> {
    let name = template
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let Some(container) = template.get_mut("container").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    if !runs_driver(container) {
        return Ok(());
    }
    let args = string_list(container.get("args"))?;
    let kind = driver_kind(&args, &name)?;
    let flags = settings.driver_flags(kind);
    let args = apply_flags(&args, &flags)?;
    container.insert("image".to_owned(), json!(settings.driver.image));
    if !args.is_empty() || container.contains_key("args") {
        container.insert("args".to_owned(), json!(args));
    }
    for input in flags.iter().filter_map(|flag| flag.input.as_ref()) {
        declare_input(template, input)?;
    }
    Ok(())
}

fn migrate_launcher(template: &mut Map<String, Value>, settings: &Settings) {
    let Some(init_containers) = template
        .get_mut("initContainers")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for container in init_containers.iter_mut().filter_map(Value::as_object_mut) {
        if container.get("name").and_then(Value::as_str) == Some(LAUNCHER_CONTAINER) {
            container.insert("image".to_owned(), json!(settings.launcher.image));
        }
    }
}

/// KFP's driver templates run `command: [driver]` whatever the image or its tag.
fn runs_driver(container: &Map<String, Value>) -> bool {
    container
        .get("command")
        .and_then(Value::as_array)
        .and_then(|command| command.first())
        .and_then(Value::as_str)
        == Some("driver")
}

/// `--type CONTAINER` is the container driver, any other type the DAG driver; without a
/// `--type` flag the compiler's template names tell.
fn driver_kind(args: &[String], template_name: &str) -> Result<DriverKind, String> {
    match flag_value(args, "type").as_deref() {
        Some("CONTAINER") => Ok(DriverKind::Container),
        Some(_) => Ok(DriverKind::Dag),
        None if template_name.contains("container-driver") => Ok(DriverKind::Container),
        None if template_name.contains("dag-driver") => Ok(DriverKind::Dag),
        None => Err(
            "runs the driver, but neither a --type flag nor the template name tells \
                     whether it is the container or the DAG driver"
                .to_owned(),
        ),
    }
}

fn string_list(value: Option<&Value>) -> Result<Vec<String>, String> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let items = value.as_array().ok_or("container.args is not a list")?;
    items
        .iter()
        .map(|item| {
            item.as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("container.args holds a non-string: {item}"))
        })
        .collect()
}

/// Adds `{name, default}` to `inputs.parameters` unless a parameter of that name exists.
fn declare_input(template: &mut Map<String, Value>, input: &InputSpec) -> Result<(), String> {
    let inputs = template
        .entry("inputs")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or("inputs is not an object")?;
    let parameters = inputs
        .entry("parameters")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or("inputs.parameters is not a list")?;
    let declared = parameters
        .iter()
        .any(|parameter| parameter.get("name").and_then(Value::as_str) == Some(&input.name));
    if !declared {
        parameters.push(json!({"name": input.name, "default": input.default}));
    }
    Ok(())
}

fn top_level_keys(value: &Value) -> String {
    match value.as_object() {
        Some(map) if !map.is_empty() => map.keys().cloned().collect::<Vec<_>>().join(", "),
        Some(_) => "none".to_owned(),
        None => format!("none, it is {}", pipewarden_guest::swf::json_type(value)),
    }
}

#[cfg(test)]
mod tests;
