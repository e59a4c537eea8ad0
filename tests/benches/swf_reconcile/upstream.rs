//! The baseline: what KFP's apiserver does at start-up since 2.4.0 (`ReconcileSwfCrs`), over the
//! same SWFs and with the same render: for each recurring run, one after the other, render it,
//! GET the live SWF, compare `spec` as a whole (`reflect.DeepEqual`), and if it differs, PUT the
//! whole object back.
//!
//! Generous to upstream in one way: parameters are rendered in a stable order here, while
//! upstream takes them from a Go map, which costs it a needless PUT per SWF with 2+ parameters
//! on most restarts.

use anyhow::{Context as _, Result};
use kube::ResourceExt as _;
use kube::api::{Api, DynamicObject, PostParams};
use pipewarden::engine::{Policy, RenderContext};
use serde_json::Value;

/// Reconciles every job; returns how many SWFs were written.
pub async fn reconcile_all(
    api: &Api<DynamicObject>,
    jobs: &[DynamicObject],
    policy: &Policy,
    context: &RenderContext,
) -> Result<usize> {
    let mut written = 0;
    for job in jobs {
        // The job row holds what the SWF was created from; here, the SWF as it was created.
        let rendered = policy.render_swf(&serde_json::to_string(job)?, context)?;
        let desired: Value = serde_json::from_str(&rendered)?;
        let name = job.name_any();
        let mut live = api.get(&name).await?;
        if live.data["spec"] != desired["spec"] {
            live.data["spec"] = desired["spec"].clone();
            api.replace(&name, &PostParams::default(), &live)
                .await
                .with_context(|| format!("PUT {name}"))?;
            written += 1;
        }
    }
    Ok(written)
}
