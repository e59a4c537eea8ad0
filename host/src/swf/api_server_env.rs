//! The KFP API server's environment, read from its Deployment: what `--settings-from
//! deployment/NAMESPACE/NAME` hands the policy, so a render follows the install without a
//! copied settings file. Pure: the caller fetches the Deployment and the ConfigMaps it names.
//!
//! Resolved as the kubelet resolves a container's environment: `envFrom` first, then `env`
//! (a later definition wins), `$(VAR)` references expanded from what is defined before them,
//! `configMapKeyRef` values from the ConfigMaps fetched, `fieldRef: metadata.namespace` as the
//! Deployment's namespace. Values from Secrets are never read (none is a compile input; the
//! API server's are database and object-store credentials): their names are listed instead.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Container;

/// The container of KFP's API server in its Deployment.
pub const API_SERVER_CONTAINER: &str = "ml-pipeline-api-server";
/// The settings key the environment is handed to the policy under.
pub const API_SERVER_ENV_KEY: &str = "pipewarden.io/api-server-env";

/// `deployment/NAMESPACE/NAME`, as `--settings-from` takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeploymentRef {
    pub namespace: String,
    pub name: String,
}

impl DeploymentRef {
    pub fn parse(text: &str) -> Result<DeploymentRef, String> {
        let parts: Vec<&str> = text.split('/').collect();
        match parts[..] {
            ["deployment" | "deployments" | "deploy", namespace, name]
                if !namespace.is_empty() && !name.is_empty() =>
            {
                Ok(DeploymentRef {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                })
            }
            _ => Err(format!(
                "{text:?} is not deployment/NAMESPACE/NAME, e.g. deployment/kubeflow/ml-pipeline"
            )),
        }
    }
}

impl std::fmt::Display for DeploymentRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "deployment/{}/{}", self.namespace, self.name)
    }
}

/// A container's environment as resolved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResolvedEnv {
    pub vars: BTreeMap<String, String>,
    /// Variables whose value is in a Secret: not read.
    pub from_secrets: Vec<String>,
    /// Variables left unset: an optional reference to a missing ConfigMap or key, or a field
    /// a Deployment cannot tell (the pod's name, IP, ...).
    pub unset: Vec<String>,
}

/// The API server container of `deployment`: the one named [`API_SERVER_CONTAINER`], or the
/// only container.
pub fn api_server_container(deployment: &Deployment) -> Result<&Container, String> {
    let containers = deployment
        .spec
        .as_ref()
        .and_then(|spec| spec.template.spec.as_ref())
        .map(|pod| pod.containers.as_slice())
        .unwrap_or_default();
    if let Some(container) = containers.iter().find(|c| c.name == API_SERVER_CONTAINER) {
        return Ok(container);
    }
    match containers {
        [only] => Ok(only),
        [] => Err("it has no containers".into()),
        _ => Err(format!(
            "it has {} containers and none is named {API_SERVER_CONTAINER}",
            containers.len()
        )),
    }
}

/// The ConfigMaps `container`'s environment reads, by name.
pub fn config_maps_named(container: &Container) -> Vec<String> {
    let mut names: Vec<String> = container
        .env_from
        .iter()
        .flatten()
        .filter_map(|source| source.config_map_ref.as_ref().map(|r| r.name.clone()))
        .chain(container.env.iter().flatten().filter_map(|var| {
            var.value_from
                .as_ref()?
                .config_map_key_ref
                .as_ref()
                .map(|r| r.name.clone())
        }))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// `container`'s environment in `namespace`, with `config_maps` (name -> data) as fetched; a
/// ConfigMap absent from it does not exist. A required reference to a missing ConfigMap or
/// key is an error, as it keeps the kubelet from starting the container.
pub fn resolve(
    container: &Container,
    namespace: &str,
    config_maps: &BTreeMap<String, BTreeMap<String, String>>,
) -> Result<ResolvedEnv, String> {
    let mut env = ResolvedEnv::default();
    for source in container.env_from.iter().flatten() {
        let prefix = source.prefix.as_deref().unwrap_or("");
        if let Some(reference) = &source.config_map_ref {
            match config_maps.get(&reference.name) {
                Some(data) => {
                    for (key, value) in data {
                        env.vars.insert(format!("{prefix}{key}"), value.clone());
                    }
                }
                None if reference.optional == Some(true) => {}
                None => return Err(format!("envFrom ConfigMap {} not found", reference.name)),
            }
        }
        if let Some(reference) = &source.secret_ref {
            env.from_secrets
                .push(format!("{prefix}* (Secret {})", reference.name));
        }
    }
    for var in container.env.iter().flatten() {
        let name = var.name.clone();
        let Some(from) = &var.value_from else {
            let value = expand(var.value.as_deref().unwrap_or(""), &env.vars);
            env.vars.insert(name, value);
            continue;
        };
        env.vars.remove(&name);
        if let Some(reference) = &from.config_map_key_ref {
            let value = config_maps
                .get(&reference.name)
                .and_then(|data| data.get(&reference.key));
            match value {
                Some(value) => {
                    env.vars.insert(name, value.clone());
                }
                None if reference.optional == Some(true) => env.unset.push(name),
                None => {
                    return Err(format!(
                        "{name}: ConfigMap {} has no key {}",
                        reference.name, reference.key
                    ));
                }
            }
        } else if from.secret_key_ref.is_some() {
            env.from_secrets.push(name);
        } else if let Some(field) = &from.field_ref {
            match field.field_path.as_str() {
                "metadata.namespace" => {
                    env.vars.insert(name, namespace.to_owned());
                }
                _ => env.unset.push(name),
            }
        } else {
            env.unset.push(name);
        }
    }
    Ok(env)
}

/// `$(VAR)` replaced by the value of a variable defined before, `$$` by `$`; a reference to
/// one not defined stays as written, as Kubernetes leaves it.
fn expand(value: &str, defined: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
        {
            match defined.get(&inner[..end]) {
                Some(value) => out.push_str(value),
                None => out.push_str(&rest[at..at + 2 + end + 1]),
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn container(env: serde_json::Value) -> Container {
        serde_json::from_value(json!({"name": API_SERVER_CONTAINER, "env": env})).unwrap()
    }

    fn maps(entries: &[(&str, &[(&str, &str)])]) -> BTreeMap<String, BTreeMap<String, String>> {
        entries
            .iter()
            .map(|(name, data)| {
                let data = data
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect();
                ((*name).to_owned(), data)
            })
            .collect()
    }

    #[test]
    fn values_config_map_keys_and_the_namespace_resolve_and_secrets_are_never_read() {
        let c = container(json!([
            {"name": "V2_DRIVER_IMAGE", "value": "ghcr.io/kubeflow/kfp-driver:2.16.1"},
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "DEFAULT_SECURITY_CONTEXT_RUN_AS_USER", "valueFrom": {"configMapKeyRef":
                {"name": "pipeline-install-config", "key": "defaultSecurityContextRunAsUser", "optional": true}}},
            {"name": "DBCONFIG_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "mysql-secret", "key": "password"}}},
            {"name": "MISSING_OPTIONAL", "valueFrom": {"configMapKeyRef":
                {"name": "pipeline-install-config", "key": "nope", "optional": true}}},
        ]));
        let config = maps(&[(
            "pipeline-install-config",
            &[("defaultSecurityContextRunAsUser", "1001")],
        )]);
        let env = resolve(&c, "kubeflow", &config).unwrap();
        assert_eq!(
            env.vars["V2_DRIVER_IMAGE"],
            "ghcr.io/kubeflow/kfp-driver:2.16.1"
        );
        assert_eq!(env.vars["POD_NAMESPACE"], "kubeflow");
        assert_eq!(env.vars["DEFAULT_SECURITY_CONTEXT_RUN_AS_USER"], "1001");
        assert!(!env.vars.contains_key("DBCONFIG_PASSWORD"));
        assert_eq!(env.from_secrets, ["DBCONFIG_PASSWORD"]);
        assert_eq!(env.unset, ["MISSING_OPTIONAL"]);
        assert_eq!(config_maps_named(&c), ["pipeline-install-config"]);
    }

    #[test]
    fn a_required_reference_that_cannot_resolve_is_an_error_naming_it() {
        let c = container(json!([{"name": "X", "valueFrom": {"configMapKeyRef":
            {"name": "pipeline-install-config", "key": "k"}}}]));
        let error = resolve(&c, "kubeflow", &maps(&[])).unwrap_err();
        assert!(
            error.contains("pipeline-install-config") && error.contains('k'),
            "{error}"
        );
    }

    #[test]
    fn env_wins_over_env_from_and_references_expand_in_order() {
        let c: Container = serde_json::from_value(json!({
            "name": "api",
            "envFrom": [{"configMapRef": {"name": "base"}, "prefix": "KFP_"}],
            "env": [
                {"name": "KFP_A", "value": "from-env"},
                {"name": "B", "value": "$(KFP_A)-$(KFP_C)-$$(KFP_A)-$(UNDEFINED)"},
            ]
        }))
        .unwrap();
        let env = resolve(
            &c,
            "ns",
            &maps(&[("base", &[("A", "from-map"), ("C", "c")])]),
        )
        .unwrap();
        assert_eq!(env.vars["KFP_A"], "from-env");
        assert_eq!(env.vars["B"], "from-env-c-$(KFP_A)-$(UNDEFINED)");
    }

    #[test]
    fn deployment_references_parse_and_the_api_server_container_is_found() {
        assert_eq!(
            DeploymentRef::parse("deployment/kubeflow/ml-pipeline"),
            Ok(DeploymentRef {
                namespace: "kubeflow".into(),
                name: "ml-pipeline".into()
            })
        );
        for bad in [
            "kubeflow/ml-pipeline",
            "deployment/kubeflow",
            "pod/kubeflow/x",
            "deployment//x",
        ] {
            assert!(DeploymentRef::parse(bad).is_err(), "{bad}");
        }
        let deployment: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "ml-pipeline"},
            "spec": {"selector": {}, "template": {"spec": {"containers": [
                {"name": "sidecar"}, {"name": API_SERVER_CONTAINER}
            ]}}}
        }))
        .unwrap();
        assert_eq!(
            api_server_container(&deployment).unwrap().name,
            API_SERVER_CONTAINER
        );
    }
}
