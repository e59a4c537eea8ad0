//! Reading the KFP API server's install (`--settings-from deployment/NAMESPACE/NAME`): its
//! Deployment, its running pods and the ConfigMaps their environment names. Secrets are never
//! read. What it means is decided in `swf::install` and `swf::api_server_env`.

use std::collections::BTreeMap;

use anyhow::Context as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Api;
use kube::api::ListParams;

use crate::swf::api_server_env::{
    DeploymentRef, ResolvedEnv, api_server_container, config_maps_named, resolve,
};
use crate::swf::install::{
    RunningSpec, changed_since_start, last_written, mode_of, running_spec, writer_protocol,
};
use crate::swf::serving::Mode;

/// API server pods listed at most: a Deployment runs a handful.
const MAX_PODS: u32 = 100;

/// What the API server's install says, as read now.
#[derive(Clone, Debug)]
pub struct InstallRead {
    pub env: ResolvedEnv,
    /// Which spec was read: its running pods, or the Deployment's template.
    pub read_from: String,
    /// Multi-user mode, or why it cannot be known.
    pub mode: Result<Mode, String>,
    /// A running pod announcing an API-owned schedule writer, and the annotation's value.
    pub writer_protocol: Option<(String, String)>,
    /// Why the environment in force cannot be known, when it cannot.
    pub uncertain: Option<String>,
}

/// Reads the API server's install now.
pub async fn read(client: &kube::Client, at: &DeploymentRef) -> anyhow::Result<InstallRead> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &at.namespace);
    let deployment = deployments
        .get(&at.name)
        .await
        .with_context(|| format!("cannot read {at} (--settings-from)"))?;
    let pods = pods_of(client, at, &deployment).await?;
    let (spec, read_from, started, mut uncertain) = match running_spec(&deployment, &pods)
        .map_err(|why| anyhow::anyhow!("{at}: {why}"))?
    {
        RunningSpec::Pods {
            spec,
            pods,
            started,
        } => {
            let read_from = match pods.as_slice() {
                [one] => format!("its running pod {one}"),
                [first, rest @ ..] => format!("its running pods {first} and {} more", rest.len()),
                [] => unreachable!("running pods were found"),
            };
            (spec, read_from, started, None)
        }
        RunningSpec::Template(spec) => (
            spec,
            "its pod template (no API server pod runs)".to_owned(),
            None,
            None,
        ),
        RunningSpec::Rollout { templates } => {
            let template = deployment
                .spec
                .as_ref()
                .and_then(|spec| spec.template.spec.as_ref());
            let why = format!(
                "a rollout of {at} is under way: its running pods have {} different templates, \
                 so the environment renders must follow is not settled yet",
                templates.len()
            );
            let spec = template.ok_or_else(|| anyhow::anyhow!("{at}: no pod template"))?;
            (spec, "its pod template".to_owned(), None, Some(why))
        }
    };
    let container =
        api_server_container(Some(spec)).map_err(|why| anyhow::anyhow!("{at}: {why}"))?;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &at.namespace);
    let mut data = BTreeMap::new();
    let mut written = BTreeMap::new();
    for name in config_maps_named(container) {
        if let Some(found) = config_maps
            .get_opt(&name)
            .await
            .with_context(|| format!("cannot read ConfigMap {}/{name} ({at})", at.namespace))?
        {
            if let Some(time) = last_written(&found.metadata) {
                written.insert(name.clone(), time);
            }
            data.insert(name, found.data.unwrap_or_default());
        }
    }
    let env =
        resolve(container, &at.namespace, &data).map_err(|why| anyhow::anyhow!("{at}: {why}"))?;
    uncertain = uncertain.or_else(|| changed_since_start(&env, &written, started.as_ref()));
    Ok(InstallRead {
        mode: mode_of(&env),
        writer_protocol: writer_protocol(&pods),
        read_from,
        uncertain,
        env,
    })
}

/// The pods the Deployment's selector matches.
async fn pods_of(
    client: &kube::Client,
    at: &DeploymentRef,
    deployment: &Deployment,
) -> anyhow::Result<Vec<Pod>> {
    let selector = deployment
        .spec
        .as_ref()
        .map(|spec| label_selector(&spec.selector))
        .filter(|selector| !selector.is_empty())
        .ok_or_else(|| anyhow::anyhow!("{at} has no pod selector"))?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &at.namespace);
    let params = ListParams::default().labels(&selector).limit(MAX_PODS);
    let listed = pods
        .list(&params)
        .await
        .with_context(|| format!("cannot list the pods of {at} ({selector})"))?;
    Ok(listed.items)
}

/// A label selector as the list API takes it.
fn label_selector(selector: &LabelSelector) -> String {
    let mut parts: Vec<String> = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    for expression in selector.match_expressions.iter().flatten() {
        let values = expression.values.clone().unwrap_or_default().join(",");
        let key = &expression.key;
        parts.push(match expression.operator.as_str() {
            "In" => format!("{key} in ({values})"),
            "NotIn" => format!("{key} notin ({values})"),
            "Exists" => key.clone(),
            _ => format!("!{key}"),
        });
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_read_as_the_list_api_takes_them() {
        let selector: LabelSelector = serde_json::from_value(serde_json::json!({
            "matchLabels": {"app": "ml-pipeline"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["api", "web"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "Exists"},
                {"key": "env", "operator": "NotIn", "values": ["dev"]},
            ]
        }))
        .unwrap();
        assert_eq!(
            label_selector(&selector),
            "app=ml-pipeline,tier in (api,web),!canary,zone,env notin (dev)"
        );
    }
}
