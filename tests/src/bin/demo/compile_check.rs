//! Whether an SWF embeds exactly what the target KFP release writes for the pipeline it carries:
//! the IR recovered from it, compiled by `kfp-compiler` for that release (proven on the
//! release's own compiler output) with the demo's settings, wrapped as that release's API
//! server wraps a compile.

use kfp_compiler::release::ledger::Entry;
use kfp_compiler::{CompileOptions, Release, compile_job, recover_ir};
use kube::ResourceExt as _;
use kube::api::DynamicObject;
use serde_json::{Value, json};

/// The STATE text for an SWF's embedded workflow, compared with the target release's compile.
pub fn versus_target(swf: &DynamicObject, workflow: &Value) -> String {
    let target = crate::target();
    if crate::api_owned() {
        return format!("not adopted: KFP {target}'s API owns schedules, this one does not fire");
    }
    match target_compile(swf, workflow) {
        Ok(expected) if &expected == workflow => format!("equal to KFP {target} compile"),
        Ok(_) => format!("differs from KFP {target} compile"),
        Err(why) => why,
    }
}

fn target_compile(swf: &DynamicObject, workflow: &Value) -> Result<Value, String> {
    let target = crate::target();
    // As the release ledger says: a patch release may run an earlier release's compiler.
    let entry = Entry::find(target);
    let release = entry
        .and_then(Entry::release)
        .ok_or_else(|| format!("no compiler for KFP {target}"))?;
    let ir = recover_ir(workflow).map_err(|_| "no KFP v2 pipeline to compile".to_owned())?;
    let settings = std::fs::read_to_string(crate::run::settings_file())
        .map_err(|e| format!("settings: {e}"))?;
    let mut settings: Value = serde_json::from_str(&settings).map_err(|e| e.to_string())?;
    if settings.as_object().is_some_and(|s| s.is_empty()) {
        settings = entry
            .and_then(Entry::install_settings)
            .unwrap_or_else(|| release.install_settings());
    }
    let options =
        CompileOptions::from_settings_for(release, &settings).map_err(|e| e.to_string())?;
    let mut compiled = compile_job(&ir.pipeline_job(), ir.platform_spec.as_ref(), &options)
        .map_err(|e| e.to_string())?;
    // What the API server sets around a compile (`v2_template.go`, `ScheduledWorkflow`): from
    // 2.17.0 on, the recurring run's own service account (#13325).
    compiled["metadata"]["namespace"] = json!(swf.namespace());
    let account = swf.data["spec"]["serviceAccount"].as_str();
    if let Some(account) = account.filter(|a| !a.is_empty() && release >= Release::V2_17_0) {
        compiled["spec"]["serviceAccountName"] = json!(account);
    }
    for template in compiled["spec"]["templates"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        let annotations = &mut template["metadata"]["annotations"];
        if annotations.get("sidecar.istio.io/inject").is_none() {
            annotations["sidecar.istio.io/inject"] = json!("false");
        }
    }
    Ok(compiled)
}
