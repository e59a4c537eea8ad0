//! Living beside KFP's own reconcile (`ReconcileSwfCrs`, KFP >= 2.4): SWFs whose embedded
//! workflows are KFP 2.17.0's compiler goldens, wrapped as KFP's API server writes them, are up
//! to date under every rebuild policy, with no write request at all (stamps are never written
//! alone); and a 2.3-era SWF is rebuilt once, to exactly the 2.17 compile of its pipeline.

use anyhow::{Context as _, Result, ensure};
use kube::api::{DynamicObject, PostParams};
use pipewarden_tests::shared;
use pipewarden_tests::swf_support::*;
use serde_json::{Value, json};

/// Goldens of KFP 2.17.0's compiler test (`tests/data/upstream/kfp-2.17.0/compiled`), compiled
/// in its test environment: nothing set, which the settings below are too.
const GOLDENS: [&str; 4] = [
    "add_numbers",
    "pipeline_with_workspace",
    "pipeline_with_loops",
    "pipeline_with_multiple_exit_handlers",
];
const TEST_ENVIRONMENT_SETTINGS: &str = "tests/data/settings/kfp-compiler-test-environment.json";
const ACCOUNT: &str = "default-editor";

/// The SWF KFP 2.17.0's API server writes around a compile: the workflow's namespace and
/// service account set, `sidecar.istio.io/inject: "false"` on each template without one, the
/// workflow as a JSON string in `spec.workflow.spec`, the account in `spec.serviceAccount`.
fn as_kfp_writes(case: &str, namespace: &str) -> Result<DynamicObject> {
    let path = repo_path(&format!(
        "tests/data/upstream/kfp-2.17.0/compiled/{case}.yaml"
    ));
    let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
    let mut workflow: Value = serde_yaml::from_str(&text)?;
    workflow["metadata"]["namespace"] = json!(namespace);
    workflow["spec"]["serviceAccountName"] = json!(ACCOUNT);
    for template in workflow["spec"]["templates"]
        .as_array_mut()
        .context("templates")?
    {
        let annotations = &mut template["metadata"]["annotations"];
        if annotations.get("sidecar.istio.io/inject").is_none() {
            annotations["sidecar.istio.io/inject"] = json!("false");
        }
    }
    // Everything else (trigger, status) as the 2.17 fixture has it.
    let mut swf = fixture("kfp-2.17")?;
    swf.metadata.name = Some(case.replace('_', "-"));
    swf.metadata.namespace = Some(namespace.to_owned());
    swf.data["spec"]["workflow"] = json!({"spec": workflow.to_string()});
    swf.data["spec"]["serviceAccount"] = json!(ACCOUNT);
    Ok(swf)
}

#[tokio::test]
async fn swfs_kfp_2_17_wrote_get_no_write_under_any_rebuild_policy() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let api = swfs(&client, &namespace);
    for case in GOLDENS {
        api.create(&PostParams::default(), &as_kfp_writes(case, &namespace)?)
            .await?;
    }
    let namespaces = [namespace.clone()];
    let versions = resource_versions(&client, &namespaces).await?;
    for (policy, outcome) in [
        ("always", "up-to-date"),
        ("on-version-change", "up-to-date"),
        ("disable", "skip"),
    ] {
        let running = ControllerArgs::new(&namespaces)
            .policy(DEFAULT_POLICY, TEST_ENVIRONMENT_SETTINGS)
            .set("--rebuild-policy", policy)
            .start(control_plane)
            .await?;
        running.wait_ready().await?;
        running
            .wait_for_decisions(outcome, GOLDENS.len() as u64)
            .await?;
        let writes = running.requests.swf_writes();
        ensure!(writes.is_empty(), "{policy}: write requests {writes:?}");
        ensure!(running.writes_total() == 0, "{policy}: write metric");
        for other in [
            "rebuild",
            "would-rebuild",
            "render-failed",
            "not-rebuildable",
        ] {
            ensure!(
                running.decisions(other) == 0,
                "{policy}: {} {other} decision(s)",
                running.decisions(other)
            );
        }
        running.stop().await;
    }
    ensure!(
        resource_versions(&client, &namespaces).await? == versions,
        "an SWF was written"
    );
    Ok(())
}

#[tokio::test]
async fn a_kfp_2_3_swf_is_rebuilt_once_to_the_2_17_compile() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    seed(&client, &namespace, "kfp-2.3", "daily", 1).await?;
    let namespaces = [namespace.clone()];
    let running = ControllerArgs::new(&namespaces)
        .start(control_plane)
        .await?;
    running.wait_for_decisions("rebuild", 1).await?;
    // Its own write comes back through the watch, known as the loop's own.
    running.wait_for_own_writes_seen(1).await?;
    ensure!(
        running.writes_total() == 1,
        "{} writes",
        running.writes_total()
    );
    running.stop().await;
    // Once: a fresh controller decides the rebuilt SWF again and finds it up to date.
    let running = ControllerArgs::new(&namespaces)
        .start(control_plane)
        .await?;
    running.wait_for_decisions("up-to-date", 1).await?;
    ensure!(
        running.writes_total() == 0,
        "{} writes after the rebuild",
        running.writes_total()
    );
    let rebuilt = swfs(&client, &namespace).get("daily-0").await?;
    // kfp-2.17.yaml embeds KFP 2.17.0's compile of the same pipeline in a default install.
    let mut expected = embedded_workflow(&fixture("kfp-2.17")?)?;
    expected["metadata"]["namespace"] = json!(namespace);
    ensure!(
        embedded_workflow(&rebuilt)? == expected,
        "the rebuilt workflow is not the 2.17 compile"
    );
    running.stop().await;
    Ok(())
}
