//! What the KFP API server runs with, read from the install: which pod spec its running pods
//! have (the environment a render must follow is the one in force, not one a Deployment edit
//! has not rolled out yet), whether it runs in multi-user mode, whether its pods announce an
//! API-owned schedule writer, and what keeps its environment from being known. Pure: the
//! caller lists the pods and fetches the ConfigMaps.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use super::api_server_env::{API_SERVER_CONTAINER, Lookup, ResolvedEnv};
use super::serving::{Mode, SCHEDULE_WRITER_ANNOTATION, go_bool};

/// The label the Deployment controller gives each pod of one template.
const TEMPLATE_HASH_LABEL: &str = "pod-template-hash";

/// The pod spec whose environment the API server runs.
#[derive(Debug)]
pub enum RunningSpec<'a> {
    /// Every running pod has this template; the earliest API server container start.
    Pods {
        spec: &'a PodSpec,
        pods: Vec<String>,
        started: Option<Time>,
    },
    /// No pod runs: the Deployment's template (what will run when one starts).
    Template(&'a PodSpec),
    /// Running pods of different templates: a rollout is under way.
    Rollout { templates: Vec<String> },
}

/// The spec the running pods of `deployment` share, from `pods` (those its selector matched).
pub fn running_spec<'a>(
    deployment: &'a Deployment,
    pods: &'a [Pod],
) -> Result<RunningSpec<'a>, String> {
    let running: Vec<&Pod> = pods.iter().filter(|pod| is_running(pod)).collect();
    let Some(first) = running.first() else {
        let template = deployment
            .spec
            .as_ref()
            .and_then(|spec| spec.template.spec.as_ref())
            .ok_or("the Deployment has no pod template")?;
        return Ok(RunningSpec::Template(template));
    };
    let key = |pod: &Pod| -> String {
        match pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(TEMPLATE_HASH_LABEL))
        {
            Some(hash) => hash.clone(),
            // Not made by the Deployment controller: compare the API server's environment.
            None => serde_json::to_string(&env_of(pod)).unwrap_or_default(),
        }
    };
    let mut templates: Vec<String> = running.iter().map(|pod| key(pod)).collect();
    templates.sort();
    templates.dedup();
    if templates.len() > 1 {
        return Ok(RunningSpec::Rollout { templates });
    }
    let spec = first.spec.as_ref().ok_or("a running pod has no spec")?;
    let started = running
        .iter()
        .filter_map(|pod| started_at(pod))
        .min_by_key(|t| t.0);
    Ok(RunningSpec::Pods {
        spec,
        pods: running.iter().map(|pod| name_of(&pod.metadata)).collect(),
        started,
    })
}

fn is_running(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

/// The API server container's `envFrom` and `env`, as one comparable value.
fn env_of(pod: &Pod) -> Option<serde_json::Value> {
    let spec = pod.spec.as_ref()?;
    let container = spec
        .containers
        .iter()
        .find(|c| c.name == API_SERVER_CONTAINER)
        .or_else(|| spec.containers.first())?;
    Some(serde_json::json!([container.env_from, container.env]))
}

/// When the pod's API server container started (else the pod).
fn started_at(pod: &Pod) -> Option<Time> {
    let status = pod.status.as_ref()?;
    status
        .container_statuses
        .iter()
        .flatten()
        .find(|c| c.name == API_SERVER_CONTAINER)
        .or_else(|| status.container_statuses.as_ref()?.first())
        .and_then(|c| c.state.as_ref()?.running.as_ref()?.started_at.clone())
        .or_else(|| status.start_time.clone())
}

fn name_of(metadata: &ObjectMeta) -> String {
    format!(
        "{}/{}",
        metadata.namespace.as_deref().unwrap_or_default(),
        metadata.name.as_deref().unwrap_or_default()
    )
}

/// A running pod announcing an API-owned schedule writer, and the annotation's value.
pub fn writer_protocol(pods: &[Pod]) -> Option<(String, String)> {
    pods.iter().filter(|pod| is_running(pod)).find_map(|pod| {
        let value = pod
            .metadata
            .annotations
            .as_ref()?
            .get(SCHEDULE_WRITER_ANNOTATION)?;
        Some((name_of(&pod.metadata), value.clone()))
    })
}

/// When a ConfigMap was last written: its latest managed-fields time, else its creation.
pub fn last_written(metadata: &ObjectMeta) -> Option<Time> {
    metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|entry| entry.time.clone())
        .max_by_key(|t| t.0)
        .or_else(|| metadata.creation_timestamp.clone())
}

/// A ConfigMap the environment reads that changed after the API server started: the API
/// server runs the values it read at its start (the kubelet resolves a container's
/// environment once), which are no longer known.
pub fn changed_since_start(
    env: &ResolvedEnv,
    written: &BTreeMap<String, Time>,
    started: Option<&Time>,
) -> Option<String> {
    let started = started?;
    env.config_maps.iter().find_map(|name| {
        let at = written.get(name)?;
        (at.0 > started.0).then(|| {
            format!(
                "ConfigMap {name} changed at {} after the KFP API server started at {}: it runs \
                 the values it read then until it restarts, and those are not known",
                at.0, started.0
            )
        })
    })
}

/// Multi-user mode as the API server reads it (`MULTIUSER`, Go's `strconv.ParseBool`; unset
/// or empty is single-user), or why it cannot be known.
pub fn mode_of(env: &ResolvedEnv) -> Result<Mode, String> {
    let from = |what: String| format!("MULTIUSER {what}");
    match env.lookup("MULTIUSER") {
        Lookup::Unset => Ok(Mode {
            multi_user: false,
            source: from("unset on the API server".into()),
        }),
        Lookup::Known("") => Ok(Mode {
            multi_user: false,
            source: from("empty on the API server".into()),
        }),
        Lookup::Known(value) => match go_bool(value) {
            Some(multi_user) => Ok(Mode {
                multi_user,
                source: format!("MULTIUSER={value} from {}", env.origin_of("MULTIUSER")),
            }),
            None => Err(format!(
                "MULTIUSER={value:?} ({}) is not a boolean KFP reads; its API server stops on it",
                env.origin_of("MULTIUSER")
            )),
        },
        Lookup::Unknown(why) => Err(format!(
            "whether KFP runs in multi-user mode cannot be known: MULTIUSER is {why}; set \
             --kfp-multi-user"
        )),
    }
}

#[cfg(test)]
mod tests;
