//! The baselines: what KFP's API server does at start-up since 2.4.0 (`ReconcileSwfCrs`), one
//! recurring run after the other: make the SWF its job row gives, GET the live SWF, compare
//! `spec` as a whole (`reflect.DeepEqual`), and if it differs, PUT the whole object back.
//!
//! - **KFP's path** ([`kfp_native`]): from the pipeline the job row stores, compiled natively by
//!   `kfp-compiler` (the crate built for this machine, standing in for KFP's Go compiler), for
//!   the target's default install, wrapped as its API server wraps a compile. A job without a
//!   pipeline (reference-only) is skipped, as upstream skips it.
//! - **Upstream-style** ([`wasm_render`]): the same loop with pipewarden's Wasm render of the
//!   SWF as it was created (what the bench measured before the real fleet).
//!
//! Generous to upstream in two ways: parameters are rendered in a stable order here, while
//! upstream takes them from a Go map (a needless PUT per SWF with 2+ parameters on most
//! restarts); and both compare the embedded workflow parsed, not as text.

use anyhow::{Context as _, Result};
use kfp_compiler::{CompileOptions, IrFile, Release};
use kube::api::{Api, DynamicObject, PostParams};
use pipewarden::engine::{Policy, RenderContext};
use pipewarden_tests::swf_support::fleet::{Job, wrapped};
use serde_json::{Value, json};

/// Reconciles every job with KFP's own compile; returns how many SWFs were written.
pub async fn kfp_native(
    client: &kube::Client,
    jobs: impl Iterator<Item = Result<Job>>,
    release: &str,
) -> Result<usize> {
    let target = Release::parse(release).context("a release the compiler ports")?;
    let options = CompileOptions::install(target);
    let mut written = 0;
    for job in jobs {
        let job = job?;
        let Some(ir) = &job.ir else { continue };
        let compiled = compile(ir, &options).with_context(|| format!("{}", ir.display()))?;
        let workflow = wrapped(compiled, release, &job.namespace, &job.account);
        let api: Api<DynamicObject> = swfs(client, &job.namespace);
        let mut live = api.get(&job.name).await?;
        let account = workflow["spec"]["serviceAccountName"].clone();
        let same = embedded(&live) == Some(workflow.clone())
            && live.data["spec"]["serviceAccount"] == account;
        if !same {
            live.data["spec"]["workflow"]["spec"] = json!(workflow.to_string());
            live.data["spec"]["serviceAccount"] = account;
            api.replace(&job.name, &PostParams::default(), &live)
                .await
                .with_context(|| format!("PUT {}", job.name))?;
            written += 1;
        }
    }
    Ok(written)
}

/// The job row's pipeline, compiled: an IR file (YAML or JSON) as `kfp-compile` reads one.
fn compile(ir: &std::path::Path, options: &CompileOptions) -> Result<Value> {
    let text = std::fs::read_to_string(ir)?;
    let documents: Vec<Value> = if text.trim_start().starts_with('{') {
        serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .collect::<Result<_, _>>()?
    } else {
        serde_yaml::Deserializer::from_str(&text)
            .map(|document| serde::Deserialize::deserialize(document).map_err(anyhow::Error::from))
            .collect::<Result<Vec<Value>>>()?
            .into_iter()
            .filter(|value| !value.is_null())
            .collect()
    };
    let ir = IrFile::from_documents(documents).map_err(anyhow::Error::msg)?;
    ir.compile(options).map_err(|e| anyhow::anyhow!("{e}"))
}

/// An SWF `spec` with its embedded workflow parsed: the comparison is of content, not of key
/// order.
fn parsed(spec: &Value) -> Value {
    let mut spec = spec.clone();
    if let Some(Value::String(text)) = spec.pointer("/workflow/spec")
        && let Ok(workflow) = serde_json::from_str::<Value>(text)
    {
        spec["workflow"]["spec"] = workflow;
    }
    spec
}

fn embedded(swf: &DynamicObject) -> Option<Value> {
    match &swf.data["spec"]["workflow"]["spec"] {
        Value::String(text) => serde_json::from_str(text).ok(),
        _ => None,
    }
}

fn swfs(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    pipewarden_tests::swf_support::swfs(client, namespace)
}

/// Reconciles every job with the Wasm render of its SWF as created; returns how many SWFs were
/// written. A render the policy refuses (reference-only, overwritten) is skipped.
pub async fn wasm_render(
    client: &kube::Client,
    jobs: impl Iterator<Item = Result<Job>>,
    policy: &Policy,
    context: &RenderContext,
) -> Result<usize> {
    let mut written = 0;
    for job in jobs {
        let job = job?;
        // The job row holds what the SWF was created from; here, the SWF as it was created.
        let Ok(rendered) = policy.render_swf(&serde_json::to_string(&job.swf)?, context) else {
            continue;
        };
        let desired: Value = serde_json::from_str(&rendered)?;
        let api = swfs(client, &job.namespace);
        let mut live = api.get(&job.name).await?;
        if parsed(&live.data["spec"]) != parsed(&desired["spec"]) {
            live.data["spec"] = desired["spec"].clone();
            api.replace(&job.name, &PostParams::default(), &live)
                .await
                .with_context(|| format!("PUT {}", job.name))?;
            written += 1;
        }
    }
    Ok(written)
}
