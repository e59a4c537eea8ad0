//! The base Deployment's container environment, as a test process can run it: volume mount
//! paths moved under a directory of the test's, pod fields given, the HTTP port on loopback.

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::apps::v1::Deployment;

use super::{base_file, one_of};

/// The pod this environment pretends to run in.
pub struct Pod<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub http_port: u16,
}

/// The pins kustomize writes into the Deployment from `policy/*.sha256`
/// (deploy/base/kustomization.yaml's replacements), each with the file of the policy volume
/// it pins: here computed from the files the test's policy volume holds, as deploy/render.sh
/// computes the policy's.
const PINS: [(&str, &str); 2] = [
    ("PIPEWARDEN_POLICY_SHA256", "policy.wasm"),
    ("PIPEWARDEN_SETTINGS_SHA256", "settings.json"),
];

/// `(name, value)` of every environment variable of the base Deployment's container.
pub fn deployment_env(volumes: &Path, pod: &Pod<'_>) -> Result<Vec<(String, String)>> {
    let objects = base_file("deployment.yaml")?;
    let object = serde_json::to_value(one_of(&objects, "Deployment")?)?;
    let deployment: Deployment = serde_json::from_value(object)?;
    let spec = deployment
        .spec
        .context("spec")?
        .template
        .spec
        .context("pod")?;
    let container = spec.containers.first().context("container")?;
    let mounts: Vec<(String, String)> = container
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| (m.mount_path.clone(), m.name.clone()))
        .collect();
    let mut env = Vec::new();
    for var in container.env.iter().flatten() {
        let field = var
            .value_from
            .as_ref()
            .and_then(|from| from.field_ref.as_ref())
            .map(|field| field.field_path.as_str());
        let pinned = PINS
            .iter()
            .find(|(name, _)| *name == var.name)
            .map(|(_, file)| *file);
        let value = match (&var.value, field) {
            (_, Some("metadata.name")) => pod.name.to_owned(),
            (_, Some("metadata.namespace")) => pod.namespace.to_owned(),
            _ if var.name == "PIPEWARDEN_HTTP_ADDR" => format!("127.0.0.1:{}", pod.http_port),
            _ if pinned.is_some() => {
                let path = volumes.join("policy").join(pinned.unwrap_or_default());
                let bytes = std::fs::read(&path).with_context(|| format!("{}", path.display()))?;
                super::sha256_pin(&bytes)?
            }
            (Some(value), None) => match mounts.iter().find(|(p, _)| value.starts_with(p)) {
                Some((path, volume)) => {
                    let rest = value[path.len()..].trim_start_matches('/');
                    volumes.join(volume).join(rest).display().to_string()
                }
                None => value.clone(),
            },
            _ => bail!("cannot give {} a value outside a cluster", var.name),
        };
        env.push((var.name.clone(), value));
    }
    Ok(env)
}

/// `(name, value)` of what the `enforce` component sets on the container: the install that
/// writes, applied over [`deployment_env`].
pub fn enforce_env() -> Result<Vec<(String, String)>> {
    let path = crate::repo::repo_path("deploy/components/enforce/deployment-env.yaml");
    let text = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
    let patch: Deployment = serde_yaml::from_str(&text)?;
    let container = patch
        .spec
        .and_then(|spec| spec.template.spec)
        .and_then(|pod| pod.containers.into_iter().next())
        .context("no container in the enforce patch")?;
    container
        .env
        .into_iter()
        .flatten()
        .map(|var| match var.value {
            Some(value) => Ok((var.name, value)),
            None => bail!("{} has no value", var.name),
        })
        .collect()
}
