//! The manifests under `deploy/`: rendered from a copy (the test never writes into the
//! repository), applied or dry-run through discovery, and the base RBAC bound to a test's own
//! ServiceAccount.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::FIELD_MANAGER;
use crate::binaries::{BIN_ENV, CACHE_ENV};
use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DynamicObject, GroupVersionKind, ObjectMeta, Patch, PatchParams, PostParams};
use kube::discovery::{self, Scope};
use kube::{Client, ResourceExt as _};
use serde::Deserialize as _;
use serde_json::json;

use super::{TempDir, copy_tree, repo_path};

/// The `kustomize` that `make control-plane` builds beside etcd and kube-apiserver.
pub fn kustomize() -> Result<PathBuf> {
    let dir = [BIN_ENV, CACHE_ENV]
        .iter()
        .find_map(std::env::var_os)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_path(".cache/bin"));
    let kustomize = dir.join("kustomize");
    ensure!(
        kustomize.is_file(),
        "missing {}: build it with `make control-plane`",
        kustomize.display()
    );
    Ok(kustomize)
}

/// `deploy/render.sh <overlay> <wasm>` run on a copy of `deploy/`: the YAML a user applies.
pub fn render_overlay(overlay: &str, wasm: &Path) -> Result<String> {
    render_with_components(overlay, "", wasm)
}

/// [`render_overlay`] with `COMPONENTS=<components>` (space-separated, as render.sh takes them).
pub fn render_with_components(overlay: &str, components: &str, wasm: &Path) -> Result<String> {
    let copy = TempDir::new("deploy")?;
    let deploy = copy.path().join("deploy");
    copy_tree(&repo_path("deploy"), &deploy)?;
    let output = Command::new(deploy.join("render.sh"))
        .arg(overlay)
        .arg(wasm)
        .env("KUSTOMIZE", kustomize()?)
        .env("COMPONENTS", components)
        .output()
        .context("running deploy/render.sh")?;
    if !output.status.success() {
        bail!(
            "render.sh {overlay} with components {components:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8(output.stdout)?)
}

/// Every document of a YAML stream.
pub fn documents(yaml: &str) -> Result<Vec<DynamicObject>> {
    let mut objects = Vec::new();
    for document in serde_yaml::Deserializer::from_str(yaml) {
        let value = serde_yaml::Value::deserialize(document)?;
        if !value.is_null() {
            objects.push(serde_yaml::from_value(value).context("a YAML document")?);
        }
    }
    Ok(objects)
}

/// `deploy/base/<file>` as objects.
pub fn base_file(file: &str) -> Result<Vec<DynamicObject>> {
    let path = repo_path(&format!("deploy/base/{file}"));
    documents(&std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?)
}

pub fn kind_of(object: &DynamicObject) -> &str {
    object.types.as_ref().map_or("", |t| t.kind.as_str())
}

/// The one object of `kind` among `objects`.
pub fn one_of<'a>(objects: &'a [DynamicObject], kind: &str) -> Result<&'a DynamicObject> {
    let mut found = objects.iter().filter(|o| kind_of(o) == kind);
    let first = found.next().with_context(|| format!("no {kind}"))?;
    ensure!(found.next().is_none(), "more than one {kind}");
    Ok(first)
}

/// Server-side applies each object where its metadata says (namespaced ones without a
/// namespace go to `default`), as `kubectl apply --server-side [--dry-run=server]` would.
pub async fn apply(
    client: &Client,
    objects: &[DynamicObject],
    dry_run: bool,
) -> Result<Vec<DynamicObject>> {
    let mut applied = Vec::new();
    for object in objects {
        let types = object.types.as_ref().context("no apiVersion/kind")?;
        let gvk = GroupVersionKind::try_from(types)?;
        let (resource, caps) = discovery::pinned_kind(client, &gvk).await?;
        let api: Api<DynamicObject> = match caps.scope {
            Scope::Cluster => Api::all_with(client.clone(), &resource),
            Scope::Namespaced => {
                let namespace = object.namespace().unwrap_or_else(|| "default".into());
                Api::namespaced_with(client.clone(), &namespace, &resource)
            }
        };
        let mut params = PatchParams::apply(FIELD_MANAGER).force();
        if dry_run {
            params = params.dry_run();
        }
        let name = object.name_any();
        let result = api.patch(&name, &params, &Patch::Apply(object)).await;
        applied.push(result.with_context(|| format!("applying {} {name}", gvk.kind))?);
    }
    Ok(applied)
}

/// Creates the namespace `name` unless it exists.
pub async fn ensure_namespace(client: &Client, name: &str) -> Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(name).await?.is_none() {
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        namespaces
            .create(&PostParams::default(), &namespace)
            .await?;
    }
    Ok(())
}

/// The base ServiceAccount and RBAC, bound in `namespace`; the cluster-wide objects get a name
/// of their own (`pipewarden-<namespace>`) so tests side by side do not share them.
pub fn base_rbac(namespace: &str) -> Result<Vec<DynamicObject>> {
    let cluster_name = format!("pipewarden-{namespace}");
    let mut objects = base_file("serviceaccount.yaml")?;
    objects.extend(base_file("rbac.yaml")?);
    for object in &mut objects {
        match kind_of(object) {
            "ClusterRole" => object.metadata.name = Some(cluster_name.clone()),
            "ClusterRoleBinding" => {
                object.metadata.name = Some(cluster_name.clone());
                object.data["roleRef"]["name"] = json!(cluster_name);
            }
            _ => object.metadata.namespace = Some(namespace.into()),
        }
        let subjects = object.data.get_mut("subjects");
        if let Some(subjects) = subjects.and_then(|s| s.as_array_mut()) {
            for subject in subjects {
                subject["namespace"] = json!(namespace);
            }
        }
    }
    Ok(objects)
}

/// `role` with `verb` taken away from the rule on `resource`.
pub fn without_verb(role: &DynamicObject, resource: &str, verb: &str) -> Result<DynamicObject> {
    let mut role = role.clone();
    let rules = role.data["rules"].as_array_mut().context("no rules")?;
    let rule = rules
        .iter_mut()
        .find(|r| {
            r["resources"]
                .as_array()
                .is_some_and(|rs| rs.contains(&json!(resource)))
        })
        .with_context(|| format!("no rule on {resource}"))?;
    let verbs = rule["verbs"].as_array_mut().context("no verbs")?;
    let before = verbs.len();
    verbs.retain(|v| v != verb);
    ensure!(verbs.len() < before, "{resource} had no {verb}");
    Ok(role)
}
