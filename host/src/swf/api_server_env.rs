//! The KFP API server's environment: what `--settings-from deployment/NAMESPACE/NAME` hands the
//! policy, so a render follows the install without a copied settings file. Pure: the caller
//! fetches the pods (or the Deployment) and the ConfigMaps; see `install` for which pod spec
//! is read.
//!
//! Resolved as the kubelet resolves a container's environment (`makeEnvironmentVariables` in
//! kubernetes `pkg/kubelet/kubelet_pods.go`): `envFrom` sources in order, a later one
//! overriding an earlier one, keys that are not valid variable names skipped, ConfigMaps'
//! `data` only (never `binaryData`); then `env` in order, overriding `envFrom`, `$(VAR)`
//! references expanded from what is defined so far, `configMapKeyRef` from `data`,
//! `fieldRef: metadata.namespace` as the namespace.
//!
//! Secrets are never read: a variable set from one (`secretKeyRef`) has an unknown value, and
//! an `envFrom` Secret may set any variable with its prefix, so a variable an earlier source
//! set, or no source set, is unknown too unless a later `env` entry sets it. The policy is
//! told which are unknown, and refuses to compile with one it reads.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Container, PodSpec};

/// The container of KFP's API server in its Deployment.
pub const API_SERVER_CONTAINER: &str = "ml-pipeline-api-server";
/// The settings key the environment's known values are handed to the policy under.
pub const API_SERVER_ENV_KEY: &str = "pipewarden.io/api-server-env";
/// The settings key naming the variables whose value cannot be known, each with why; a key
/// ending in `*` stands for every variable with that prefix that the known values do not hold.
pub const API_SERVER_ENV_UNKNOWN_KEY: &str = "pipewarden.io/api-server-env-unknown";

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
    /// Variables whose value is known.
    pub vars: BTreeMap<String, String>,
    /// Variables set, but to a value that cannot be known, with why.
    pub unknown: BTreeMap<String, String>,
    /// `envFrom` Secrets, by prefix: any variable with the prefix that `vars` does not hold
    /// may be set by one of them.
    pub open_prefixes: BTreeMap<String, String>,
    /// Variables left unset: an optional reference to a missing ConfigMap or key, or a field
    /// a pod spec cannot tell (the pod's IP, ...).
    pub unset: Vec<String>,
    /// Where each variable came from, for the operator (`ConfigMap pipeline-install-config`).
    pub origin: BTreeMap<String, String>,
    /// The ConfigMaps read.
    pub config_maps: BTreeSet<String>,
}

/// What is known of one variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup<'a> {
    Known(&'a str),
    Unknown(String),
    Unset,
}

impl ResolvedEnv {
    pub fn lookup(&self, name: &str) -> Lookup<'_> {
        if let Some(value) = self.vars.get(name) {
            return Lookup::Known(value);
        }
        if let Some(why) = self.unknown.get(name) {
            return Lookup::Unknown(why.clone());
        }
        match self
            .open_prefixes
            .iter()
            .find(|(prefix, _)| name.starts_with(prefix.as_str()))
        {
            Some((_, why)) => Lookup::Unknown(why.clone()),
            None => Lookup::Unset,
        }
    }

    /// Where `name` came from, or "" when unknown.
    pub fn origin_of(&self, name: &str) -> &str {
        self.origin.get(name).map(String::as_str).unwrap_or("")
    }

    /// The unknown variables as the policy is handed them ([`API_SERVER_ENV_UNKNOWN_KEY`]).
    pub fn unknown_for_policy(&self) -> BTreeMap<String, String> {
        let mut unknown = self.unknown.clone();
        for (prefix, why) in &self.open_prefixes {
            unknown.insert(format!("{prefix}*"), why.clone());
        }
        unknown
    }

    fn set(&mut self, name: String, value: String, origin: &str) {
        self.unknown.remove(&name);
        self.origin.insert(name.clone(), origin.to_owned());
        self.vars.insert(name, value);
    }

    fn set_unknown(&mut self, name: String, why: String) {
        self.vars.remove(&name);
        self.origin.insert(name.clone(), why.clone());
        self.unknown.insert(name, why);
    }
}

/// The API server container of a pod spec: the one named [`API_SERVER_CONTAINER`], or the only
/// container.
pub fn api_server_container(pod: Option<&PodSpec>) -> Result<&Container, String> {
    let containers = pod.map(|pod| pod.containers.as_slice()).unwrap_or_default();
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

/// `container`'s environment in `namespace`, with `config_maps` (name -> `data`) as fetched; a
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
                    env.config_maps.insert(reference.name.clone());
                    let origin = format!("ConfigMap {} (envFrom)", reference.name);
                    for (key, value) in data {
                        let name = format!("{prefix}{key}");
                        if is_env_var_name(&name) {
                            env.set(name, value.clone(), &origin);
                        }
                    }
                }
                None if reference.optional == Some(true) => {}
                None => return Err(format!("envFrom ConfigMap {} not found", reference.name)),
            }
        }
        if let Some(reference) = &source.secret_ref {
            // Any variable with the prefix may now come from the Secret, the ones set so far
            // included.
            let why = format!(
                "envFrom Secret {} may set it (pipewarden never reads Secrets)",
                reference.name
            );
            let shadowed: Vec<String> = env
                .vars
                .keys()
                .filter(|name| name.starts_with(prefix))
                .cloned()
                .collect();
            for name in shadowed {
                env.set_unknown(name, why.clone());
            }
            env.open_prefixes.insert(prefix.to_owned(), why);
        }
    }
    for var in container.env.iter().flatten() {
        let name = var.name.clone();
        let value = var.value.as_deref().unwrap_or("");
        // As the kubelet: a non-empty value wins over a source.
        if !value.is_empty() || var.value_from.is_none() {
            match expand(value, &env) {
                Ok(value) => env.set(name, value, "env"),
                Err(why) => env.set_unknown(name, why),
            }
            continue;
        }
        let from = var.value_from.as_ref().expect("checked above");
        if let Some(reference) = &from.config_map_key_ref {
            let value = config_maps
                .get(&reference.name)
                .and_then(|data| data.get(&reference.key));
            match value {
                Some(value) => {
                    env.config_maps.insert(reference.name.clone());
                    let origin = format!("ConfigMap {} key {}", reference.name, reference.key);
                    env.set(name, value.clone(), &origin);
                }
                None if reference.optional == Some(true) => {
                    env.vars.remove(&name);
                    env.unset.push(name);
                }
                None => {
                    return Err(format!(
                        "{name}: ConfigMap {} has no key {}",
                        reference.name, reference.key
                    ));
                }
            }
        } else if let Some(reference) = &from.secret_key_ref {
            let why = format!(
                "set from Secret {} key {} (pipewarden never reads Secrets)",
                reference.name, reference.key
            );
            env.set_unknown(name, why);
        } else if let Some(field) = &from.field_ref {
            match field.field_path.as_str() {
                "metadata.namespace" => env.set(name, namespace.to_owned(), "the pod's namespace"),
                path => env.set_unknown(name, format!("the pod's {path}")),
            }
        } else {
            env.set_unknown(name, "a resource field of the pod".into());
        }
    }
    Ok(env)
}

/// A name the kubelet takes from an `envFrom` source (`IsEnvVarName`: letters, digits, `_`,
/// `-`, `.`, not starting with a digit).
fn is_env_var_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// `$(VAR)` replaced by the value of a variable defined before, `$$` by `$`; a reference to
/// one not defined stays as written, as Kubernetes leaves it. A reference to a variable whose
/// value is unknown makes the result unknown (the error says which).
fn expand(value: &str, env: &ResolvedEnv) -> Result<String, String> {
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
            match env.lookup(&inner[..end]) {
                Lookup::Known(value) => out.push_str(value),
                Lookup::Unknown(why) => {
                    return Err(format!("it refers to $({}), which is {why}", &inner[..end]));
                }
                Lookup::Unset => out.push_str(&rest[at..at + 2 + end + 1]),
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests;
