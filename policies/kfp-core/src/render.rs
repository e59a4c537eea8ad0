//! Rendering: the ScheduledWorkflow the target release's KFP API server would write today for
//! the pipeline an SWF carries. The IR is recovered from the embedded workflow, compiled with
//! `kfp-compiler` for the target's release and environment, and wrapped as that release's API
//! server wraps a compile when it writes an SWF (`backend/src/apiserver/template/
//! v2_template.go`, `ScheduledWorkflow`). A target this policy cannot compile for exactly is
//! never rendered.

use kfp_compiler::{CompileOptions, RecoverError, Release, compile_job, recover_ir};
use pipewarden_guest::swf::{EmbeddedWorkflow, SpecForm};
use pipewarden_guest::{
    RENDER_HASH_ANNOTATION, SETTINGS_HASH_ANNOTATION, Swf, VERSION_ANNOTATION, not_rebuildable,
    unsupported_target,
};
use serde_json::{Map, Value, json};

use crate::Settings;
use crate::settings::SettingsProblem;
use crate::target::Target;

/// Name of the init container that copies the launcher binary into each executor pod.
pub const LAUNCHER_CONTAINER: &str = "kfp-launcher";
/// What the API server puts on every template that does not say otherwise.
const ISTIO_SIDECAR_ANNOTATION: &str = "sidecar.istio.io/inject";
const ISTIO_SIDECAR_DISABLED: &str = "false";

/// The desired SWF for `swf_json`: its pipeline recompiled for the target ([`rebuild_workflow`]),
/// written back as a compact JSON string, then stamped with the target version, the render
/// digest and the settings digest.
///
/// Only `spec` and the stamp annotations change; `status` and every other field are kept. The
/// output is canonical JSON, so rendering a render gives the same bytes. An SWF whose IR cannot
/// be recovered is an error marked [`pipewarden_guest::NOT_REBUILDABLE_PREFIX`]; a target this
/// policy cannot compile for exactly (an unknown or unsupported version, or settings that
/// release does not read) one marked [`pipewarden_guest::UNSUPPORTED_TARGET_PREFIX`].
pub fn render_swf(
    swf_json: &str,
    target_version: Option<&str>,
    settings: &Settings,
) -> Result<String, String> {
    render_swf_with(swf_json, target_version, settings, |_| Ok(()))
}

/// [`render_swf`] with a distribution's own step, run on the compiled workflow after the API
/// server's wrapping and before stamping (so the digest covers it).
pub fn render_swf_with(
    swf_json: &str,
    target_version: Option<&str>,
    settings: &Settings,
    extra: impl FnOnce(&mut EmbeddedWorkflow) -> Result<(), String>,
) -> Result<String, String> {
    let target = Target::of(target_version).map_err(|why| unsupported_target(&why))?;
    let compile = settings
        .compile_options(&target)
        .map_err(|problem| match problem {
            SettingsProblem::NotForTarget(why) => {
                unsupported_target(&format!("cannot compile with these settings: {why}"))
            }
            SettingsProblem::Invalid(why) => format!("invalid settings: {why}"),
        })?;
    let mut swf = Swf::from_json(swf_json).map_err(|e| e.to_string())?;
    let mut workflow = rebuild_workflow(&mut swf, &compile)?;
    extra(&mut workflow)?;
    swf.set_embedded_workflow(&workflow);
    swf.set_annotation(VERSION_ANNOTATION, target.version);
    let digest = swf.render_digest_with(&workflow);
    swf.set_annotation(RENDER_HASH_ANNOTATION, &digest);
    swf.set_annotation(SETTINGS_HASH_ANNOTATION, &settings.source_digest);
    Ok(swf.to_json())
}

/// Recovers the IR from `swf`'s embedded workflow, compiles it with the settings and wraps it as
/// the API server does: the workflow's namespace, its service account (also written to the
/// SWF's `spec.serviceAccount`) and the Istio sidecar annotation on every template.
///
/// `spec.workflow.parameters` are the recurring run's own runtime parameters as the API server
/// wrote them (`StringMapToCRDParameters`): they are kept as they are, and go into the compile's
/// runtime config as they did when the API server compiled the job. They cannot be rebuilt from
/// the workflow, whose root runtime config also holds the defaults the compiler filled in. The
/// API server adds no labels to a v2 SWF: the compiled workflow's own are all it carries.
pub fn rebuild_workflow(
    swf: &mut Swf,
    compile: &CompileOptions,
) -> Result<EmbeddedWorkflow, String> {
    let Some(live) = swf.embedded_workflow().map_err(|e| e.to_string())? else {
        return Err(not_rebuildable(
            "reference-only SWF: it embeds no workflow, KFP compiles its pipeline version at \
             each run",
        ));
    };
    let recovered = recover_ir(&live.value).map_err(|error| recover_failure(&error))?;
    let mut job = recovered.pipeline_job();
    merge_job_parameters(&mut job, &swf.parameters());
    let compiled = compile_job(&job, recovered.platform_spec.as_ref(), compile).map_err(|e| {
        format!("the pipeline recovered from spec.workflow.spec does not compile: {e}")
    })?;
    let mut workflow = EmbeddedWorkflow {
        value: compiled,
        form: SpecForm::String,
    };
    if let Some(namespace) = swf.namespace().filter(|n| !n.is_empty()) {
        set_namespace(&mut workflow.value, namespace);
    }
    let account = wrap_service_account(swf, &mut workflow, compile)?;
    annotate_templates(&mut workflow)?;
    swf_spec_mut(swf)?.insert("serviceAccount".to_owned(), json!(account));
    Ok(workflow)
}

/// v1 pipelines and workflows KFP did not compile carry no IR: nothing to rebuild from. A KFP
/// v2 workflow whose IR is damaged is a render failure (a last good render may be restored).
fn recover_failure(error: &RecoverError) -> String {
    match error {
        RecoverError::KfpV1 => not_rebuildable(
            "a KFP v1 pipeline: it carries no v2 pipeline spec to compile again; migrate it \
             to KFP v2 to have it rebuilt",
        ),
        RecoverError::NotAWorkflow(why) | RecoverError::NotKfp(why) => not_rebuildable(&format!(
            "spec.workflow.spec is not a workflow compiled by KFP v2 ({why})"
        )),
        RecoverError::Damaged(why) => {
            format!(
                "spec.workflow.spec is a KFP v2 workflow whose stored pipeline is damaged: {why}"
            )
        }
    }
}

fn set_namespace(workflow: &mut Value, namespace: &str) {
    if let Some(root) = workflow.as_object_mut() {
        let metadata = root.entry("metadata").or_insert_with(|| json!({}));
        if let Some(metadata) = metadata.as_object_mut() {
            metadata.insert("namespace".to_owned(), json!(namespace));
        }
    }
}

/// Since 2.17.0 the API server applies the recurring run's service account to its workflow
/// whatever the compile chose (kubeflow/pipelines#13325).
const JOB_SERVICE_ACCOUNT_SINCE: Release = Release::V2_17_0;

/// The service account of the wrapped workflow, as the release's API server chooses it, also
/// returned for the SWF's `spec.serviceAccount`. KFP's `setDefaultServiceAccount`: the
/// recurring run's own account (the SWF's `spec.serviceAccount`) wins; without one, an empty or
/// SDK-default (`pipeline-runner`) account becomes the configured default
/// (`DEFAULTPIPELINERUNNERSERVICEACCOUNT`). Before 2.17.0 it ran only when the compile left the
/// account empty, which the compiler never does (it writes the configured default), so the
/// recurring run's account was not applied (kubeflow/pipelines#13325 changed that).
fn wrap_service_account(
    swf: &Swf,
    workflow: &mut EmbeddedWorkflow,
    compile: &CompileOptions,
) -> Result<String, String> {
    const SDK_DEFAULT_ACCOUNT: &str = "pipeline-runner";
    let job_account = swf
        .spec()
        .and_then(|spec| spec.get("serviceAccount"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let spec = workflow
        .workflow_spec_mut()
        .ok_or("the compiled workflow has no spec")?;
    let compiled = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let applies = compile.release >= JOB_SERVICE_ACCOUNT_SINCE || compiled.is_empty();
    let account = match () {
        _ if !applies => compiled,
        _ if !job_account.is_empty() => job_account,
        _ if compiled.is_empty() || compiled == SDK_DEFAULT_ACCOUNT => {
            compile.service_account.clone()
        }
        _ => compiled,
    };
    spec.insert("serviceAccountName".to_owned(), json!(account));
    Ok(account)
}

/// `sidecar.istio.io/inject: "false"` on every template that does not set it.
fn annotate_templates(workflow: &mut EmbeddedWorkflow) -> Result<(), String> {
    let templates = workflow
        .templates_mut()
        .ok_or("the compiled workflow has no templates")?;
    for template in templates.iter_mut().filter_map(Value::as_object_mut) {
        let metadata = object_at(template, "metadata");
        let annotations = object_at(metadata, "annotations");
        annotations
            .entry(ISTIO_SIDECAR_ANNOTATION)
            .or_insert_with(|| json!(ISTIO_SIDECAR_DISABLED));
    }
    Ok(())
}

fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let entry = map.entry(key).or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    entry.as_object_mut().expect("just made an object")
}

fn swf_spec_mut(swf: &mut Swf) -> Result<&mut Map<String, Value>, String> {
    swf.as_value_mut()
        .get_mut("spec")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| "the SWF has no spec object".to_owned())
}

/// The SWF's runtime parameters into the job's runtime config, as the API server compiled the
/// job with them. Each value is the JSON text of a protobuf `Value` (a string keeps its
/// quotes); text that is not JSON is taken as a string.
fn merge_job_parameters(job: &mut Value, parameters: &[(String, Value)]) {
    if parameters.is_empty() {
        return;
    }
    let Some(job) = job.as_object_mut() else {
        return;
    };
    let config = object_at(job, "runtimeConfig");
    let values = object_at(config, "parameterValues");
    for (name, value) in parameters {
        let value = match value {
            Value::String(text) => serde_json::from_str(text).unwrap_or_else(|_| json!(text)),
            other => other.clone(),
        };
        values.insert(name.clone(), value);
    }
}

#[cfg(test)]
mod releases;
#[cfg(test)]
mod tests;
