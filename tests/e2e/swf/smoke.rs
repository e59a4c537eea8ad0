//! Smoke tests against the real kube-apiserver: the CRDs behave as the controller will rely on.

use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use futures::{StreamExt as _, TryStreamExt as _};
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::{Client, ResourceExt as _};
use pipewarden_tests::resources::{
    SWF_KFP_2_17, WORKFLOW_NOTIFY_RUNNING, parse_object, swf_resource, workflow_resource,
};
use pipewarden_tests::{ControlPlane, apply_yaml, log, service_account_token, shared};
use serde_json::json;

const EVENT_TIMEOUT: Duration = Duration::from_secs(10);

async fn setup() -> Result<(&'static ControlPlane, Client, String)> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    Ok((control_plane, client, namespace))
}

/// The sample SWF as KFP's apiserver creates it: placed in `namespace`, with an empty status.
fn fresh_swf(namespace: &str) -> Result<DynamicObject> {
    let mut swf = parse_object(SWF_KFP_2_17)?;
    swf.metadata.namespace = Some(namespace.to_owned());
    swf.data["status"] = json!({});
    Ok(swf)
}

fn event_name(event: &WatchEvent<DynamicObject>) -> String {
    match event {
        WatchEvent::Added(o) => format!("ADDED {}", o.name_any()),
        WatchEvent::Modified(o) => format!("MODIFIED {}", o.name_any()),
        WatchEvent::Deleted(o) => format!("DELETED {}", o.name_any()),
        WatchEvent::Bookmark(_) => "BOOKMARK".to_owned(),
        WatchEvent::Error(status) => format!("ERROR {status:?}"),
    }
}

#[tokio::test]
async fn control_plane_reports_its_versions() -> Result<()> {
    let versions = shared().await?.versions();
    log(format_args!(
        "smoke: kube-apiserver {}, etcd {}",
        versions.apiserver, versions.etcd
    ));
    ensure!(
        versions.apiserver.starts_with("v1.34."),
        "apiserver version {}",
        versions.apiserver
    );
    ensure!(
        versions.etcd.starts_with("3.6."),
        "etcd version {}",
        versions.etcd
    );
    Ok(())
}

#[tokio::test]
async fn swf_requires_status_as_the_crd_says() -> Result<()> {
    let (_, client, namespace) = setup().await?;
    let swfs: Api<DynamicObject> = Api::namespaced_with(client, &namespace, &swf_resource());
    let mut without_status = fresh_swf(&namespace)?;
    without_status
        .data
        .as_object_mut()
        .context("object")?
        .remove("status");
    let err = swfs
        .create(&PostParams::default(), &without_status)
        .await
        .expect_err("status is required");
    ensure!(
        matches!(&err, kube::Error::Api(s) if s.is_invalid()),
        "expected 422 Invalid, got {err}"
    );
    Ok(())
}

#[tokio::test]
async fn swf_create_list_watch_and_conditional_merge_patch() -> Result<()> {
    let (_, client, namespace) = setup().await?;
    let swfs: Api<DynamicObject> = Api::namespaced_with(client, &namespace, &swf_resource());
    let created = swfs
        .create(&PostParams::default(), &fresh_swf(&namespace)?)
        .await?;
    let name = created.name_any();

    let list = swfs.list(&ListParams::default()).await?;
    let listed = list
        .items
        .iter()
        .find(|o| o.name_any() == name)
        .context("SWF not listed")?;
    let embedded = listed.data["spec"]["workflow"]["spec"]
        .as_str()
        .context("workflow.spec is a string")?;
    ensure!(
        embedded.contains("ghcr.io/kubeflow/kfp-driver:2.17.0"),
        "driver image in workflow.spec"
    );
    let list_version = list
        .metadata
        .resource_version
        .context("list resourceVersion")?;

    let watch_params = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .timeout(30);
    let mut events = swfs.watch(&watch_params, &list_version).await?.boxed();

    let created_version = created.resource_version().context("resourceVersion")?;
    let patch =
        json!({ "metadata": { "resourceVersion": created_version }, "spec": { "enabled": false } });
    let patched = swfs
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    ensure!(
        patched.data["spec"]["enabled"] == json!(false),
        "spec.enabled patched"
    );
    ensure!(
        patched.data["spec"]["workflow"]["spec"].as_str() == Some(embedded),
        "rest of spec kept"
    );

    // The same precondition is now stale: the server must refuse with 409 Conflict.
    let stale = swfs
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await;
    ensure!(
        matches!(&stale, Err(kube::Error::Api(s)) if s.is_conflict()),
        "expected 409, got {stale:?}"
    );

    let event = tokio::time::timeout(EVENT_TIMEOUT, events.try_next())
        .await??
        .context("watch ended")?;
    match event {
        WatchEvent::Modified(o) => ensure!(
            o.data["spec"]["enabled"] == json!(false),
            "patched object watched"
        ),
        other => anyhow::bail!("expected MODIFIED, got {}", event_name(&other)),
    }
    Ok(())
}

#[tokio::test]
async fn workflow_watch_sees_added_modified_deleted_in_order() -> Result<()> {
    let (_, client, namespace) = setup().await?;
    let workflows: Api<DynamicObject> =
        Api::namespaced_with(client, &namespace, &workflow_resource());
    let start = workflows
        .list(&ListParams::default())
        .await?
        .metadata
        .resource_version
        .context("rv")?;
    let mut events = workflows
        .watch(&WatchParams::default().timeout(30), &start)
        .await?
        .boxed();

    let mut workflow = parse_object(WORKFLOW_NOTIFY_RUNNING)?;
    workflow.metadata.namespace = Some(namespace.clone());
    let name = workflow.name_any();
    let mut created = workflows.create(&PostParams::default(), &workflow).await?;
    created.data["status"]["phase"] = json!("Succeeded");
    created
        .labels_mut()
        .insert("workflows.argoproj.io/completed".into(), "true".into());
    let replaced = workflows
        .replace(&name, &PostParams::default(), &created)
        .await?;
    workflows.delete(&name, &DeleteParams::default()).await?;

    let mut seen = Vec::new();
    let mut versions = Vec::new();
    while seen.len() < 3 {
        let event = tokio::time::timeout(EVENT_TIMEOUT, events.try_next())
            .await??
            .context("watch ended")?;
        if let WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) = &event {
            versions.push(o.resource_version().unwrap_or_default().parse::<u64>()?);
        }
        seen.push(event_name(&event));
    }
    let expected = ["ADDED", "MODIFIED", "DELETED"].map(|kind| format!("{kind} {name}"));
    ensure!(seen == expected, "events {seen:?}");
    ensure!(
        versions.is_sorted() && versions[0] < versions[1],
        "resourceVersions {versions:?}"
    );
    ensure!(
        versions[1]
            == replaced
                .resource_version()
                .unwrap_or_default()
                .parse::<u64>()?,
        "update rv"
    );
    Ok(())
}

#[tokio::test]
async fn service_account_token_is_subject_to_rbac() -> Result<()> {
    let (control_plane, admin, namespace) = setup().await?;
    let token = service_account_token(&admin, &namespace, "pipewarden").await?;
    let as_account = control_plane.client_for_token("pipewarden", &token).await?;
    let swfs: Api<DynamicObject> = Api::namespaced_with(as_account, &namespace, &swf_resource());

    let denied = swfs.list(&ListParams::default()).await;
    ensure!(
        matches!(&denied, Err(kube::Error::Api(s)) if s.is_forbidden()),
        "expected 403, got {denied:?}"
    );

    let rbac = format!(
        "apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: swf-reader
rules:
- apiGroups: [kubeflow.org]
  resources: [scheduledworkflows]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: swf-reader
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: swf-reader
subjects:
- kind: ServiceAccount
  name: pipewarden
  namespace: {namespace}
"
    );
    apply_yaml(&admin, Some(&namespace), &rbac).await?;
    let applied = apply_yaml(&admin, Some(&namespace), SWF_KFP_2_17).await?;
    // RBAC changes reach the authorizer through an informer: allow it a moment.
    let listed =
        pipewarden_tests::wait::until("RoleBinding to take effect", EVENT_TIMEOUT, || async {
            Ok(swfs.list(&ListParams::default()).await.ok())
        })
        .await?;
    ensure!(
        listed.items.len() == 1 && listed.items[0].name_any() == applied[0].name_any(),
        "SWF listed"
    );
    Ok(())
}
