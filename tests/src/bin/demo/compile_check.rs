//! Whether an SWF embeds exactly what KFP 2.17.0 writes for the pipeline it carries: the IR
//! recovered from it, compiled by `kfp-compiler` (KFP 2.17.0's compiler, proven on its 102
//! goldens) with the shipped settings, wrapped as KFP's API server wraps a compile.

use kfp_compiler::{CompileOptions, compile_job, recover_ir};
use kube::ResourceExt as _;
use kube::api::DynamicObject;
use pipewarden_tests::repo::{DEFAULT_SETTINGS, repo_path};
use serde_json::{Value, json};

/// The STATE text for an SWF's embedded workflow, compared with KFP 2.17.0's compile.
pub fn versus_kfp_2_17(swf: &DynamicObject, workflow: &Value) -> String {
    match kfp_2_17_compile(swf, workflow) {
        Ok(expected) if &expected == workflow => "equal to KFP 2.17.0 compile".to_owned(),
        Ok(_) => "differs from KFP 2.17.0 compile".to_owned(),
        Err(why) => why,
    }
}

fn kfp_2_17_compile(swf: &DynamicObject, workflow: &Value) -> Result<Value, String> {
    let ir = recover_ir(workflow).map_err(|_| "no KFP v2 pipeline to compile".to_owned())?;
    let settings = std::fs::read_to_string(repo_path(DEFAULT_SETTINGS))
        .map_err(|e| format!("settings: {e}"))?;
    let options = CompileOptions::from_settings_json(&settings).map_err(|e| e.to_string())?;
    let mut compiled = compile_job(&ir.pipeline_job(), ir.platform_spec.as_ref(), &options)
        .map_err(|e| e.to_string())?;
    // What the API server sets around a compile (`v2_template.go`, `ScheduledWorkflow`).
    compiled["metadata"]["namespace"] = json!(swf.namespace());
    let account = swf.data["spec"]["serviceAccount"].as_str();
    if let Some(account) = account.filter(|a| !a.is_empty()) {
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
