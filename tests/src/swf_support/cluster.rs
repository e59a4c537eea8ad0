//! SWFs and Events on the control plane, as the tests create and read them.

use crate::resources::{parse_object, swf_resource};
use anyhow::{Context as _, Result, bail};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt as _};
use pipewarden::swf::{RENDER_HASH_ANNOTATION, VERSION_ANNOTATION};
use serde_json::Value;

use super::repo_path;

pub fn swfs(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &swf_resource())
}

/// `tests/data/swf/{name}.yaml`.
pub fn fixture(name: &str) -> Result<DynamicObject> {
    let path = repo_path(&format!("tests/data/swf/{name}.yaml"));
    let text = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
    parse_object(&text)
}

/// Creates `count` copies of a fixture in `namespace`, named `{prefix}-{i}`, as KFP's apiserver
/// would (the fixture's status included: the CRD requires one).
pub async fn seed(
    client: &Client,
    namespace: &str,
    fixture_name: &str,
    prefix: &str,
    count: usize,
) -> Result<Vec<DynamicObject>> {
    let template = fixture(fixture_name)?;
    let api = swfs(client, namespace);
    let mut created = Vec::new();
    for i in 0..count {
        let mut swf = template.clone();
        swf.metadata.name = Some(format!("{prefix}-{i}"));
        swf.metadata.namespace = Some(namespace.to_owned());
        created.push(api.create(&PostParams::default(), &swf).await?);
    }
    Ok(created)
}

/// Applies a JSON merge patch as someone else would (`kubectl patch --type=merge`).
pub async fn merge_patch(client: &Client, namespace: &str, name: &str, patch: &str) -> Result<()> {
    let patch: Value = serde_json::from_str(patch)?;
    swfs(client, namespace)
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

pub fn annotation<'a>(swf: &'a DynamicObject, key: &str) -> Option<&'a str> {
    swf.annotations().get(key).map(String::as_str)
}

/// The version stamp, if the SWF carries a render-hash stamp too.
pub fn stamped_version(swf: &DynamicObject) -> Option<&str> {
    annotation(swf, RENDER_HASH_ANNOTATION)?;
    annotation(swf, VERSION_ANNOTATION)
}

/// The embedded Argo Workflow, parsed; fails unless it is a JSON string, as KFP writes it.
pub fn embedded_workflow(swf: &DynamicObject) -> Result<Value> {
    let text = swf.data["spec"]["workflow"]["spec"]
        .as_str()
        .context("spec.workflow.spec is not a string")?;
    Ok(serde_json::from_str(text)?)
}

fn containers<'a>(workflow: &'a Value, key: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    workflow["spec"]["templates"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(move |template| match key {
            "container" => template.get("container").into_iter().collect::<Vec<_>>(),
            _ => template[key].as_array().into_iter().flatten().collect(),
        })
}

/// Images of every container running the KFP driver.
pub fn driver_images(swf: &DynamicObject) -> Result<Vec<String>> {
    let workflow = embedded_workflow(swf)?;
    Ok(containers(&workflow, "container")
        .filter(|c| c["command"][0] == "driver")
        .filter_map(|c| c["image"].as_str().map(str::to_owned))
        .collect())
}

/// Args of every `kfp-launcher` init container.
pub fn launcher_args(swf: &DynamicObject) -> Result<Vec<Vec<String>>> {
    let workflow = embedded_workflow(swf)?;
    let launchers: Vec<Vec<String>> = containers(&workflow, "initContainers")
        .filter(|c| c["name"] == "kfp-launcher")
        .map(|c| {
            c["args"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect()
        })
        .collect();
    if launchers.is_empty() {
        bail!("no kfp-launcher init container in {}", swf.name_any());
    }
    Ok(launchers)
}

/// `(reason, note)` of every Event about the SWF `name`, oldest first.
pub async fn events_about(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Result<Vec<(String, String)>> {
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let mut found: Vec<Event> = events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .collect();
    found.sort_by_key(|e| e.event_time.as_ref().map(|t| t.0));
    Ok(found
        .into_iter()
        .map(|e| (e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
        .collect())
}

/// Waits for an Event with `reason` about `name` and returns its note.
pub async fn event_note(
    client: &Client,
    namespace: &str,
    name: &str,
    reason: &str,
) -> Result<String> {
    let what = format!("a {reason} Event about {namespace}/{name}");
    crate::wait::until(&what, super::WAIT, || async {
        let events = events_about(client, namespace, name).await?;
        Ok(events
            .into_iter()
            .find(|(r, _)| r == reason)
            .map(|(_, note)| note))
    })
    .await
}

/// Every SWF in `namespace`, by name.
pub async fn list(client: &Client, namespace: &str) -> Result<Vec<DynamicObject>> {
    Ok(swfs(client, namespace)
        .list(&ListParams::default())
        .await?
        .items)
}

/// Waits until every SWF in `namespaces` satisfies `done`, and returns them all.
pub async fn wait_for_all(
    client: &Client,
    namespaces: &[String],
    what: &str,
    done: impl Fn(&DynamicObject) -> bool,
) -> Result<Vec<DynamicObject>> {
    crate::wait::until(what, super::WAIT, || async {
        let mut all = Vec::new();
        for namespace in namespaces {
            all.extend(list(client, namespace).await?);
        }
        Ok(all.iter().all(&done).then_some(all))
    })
    .await
}

/// resourceVersion of every SWF in `namespaces`, by `namespace/name`.
pub async fn resource_versions(
    client: &Client,
    namespaces: &[String],
) -> Result<std::collections::BTreeMap<String, String>> {
    let mut versions = std::collections::BTreeMap::new();
    for namespace in namespaces {
        for swf in list(client, namespace).await? {
            let key = format!("{namespace}/{}", swf.name_any());
            versions.insert(key, swf.resource_version().unwrap_or_default());
        }
    }
    Ok(versions)
}

/// `count` SWFs `daily-N` in `namespace`, each KFP 2.3's compile (stale), 16 at a time.
pub async fn seed_many(client: &Client, namespace: &str, count: usize) -> Result<()> {
    let template = fixture("kfp-2.3")?;
    let api = swfs(client, namespace);
    futures::stream::iter(0..count)
        .map(|i| {
            let mut swf = template.clone();
            swf.metadata.name = Some(format!("daily-{i}"));
            swf.metadata.namespace = Some(namespace.to_owned());
            let api = api.clone();
            async move { api.create(&PostParams::default(), &swf).await.map(drop) }
        })
        .buffer_unordered(16)
        .try_collect::<()>()
        .await
        .context("seeding SWFs")
}
