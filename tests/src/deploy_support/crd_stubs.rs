//! Just enough of other projects' CRDs (the Prometheus Operator's, Istio's) for the API server
//! to accept their kinds in a dry run: the names and a schema that keeps every field.

use anyhow::Result;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, PostParams};

use super::WAIT;

/// Creates (unless there) a CRD per `(plural, kind)` in `group`/v1 and waits until all are served.
pub async fn install_crd_stubs(client: &Client, group: &str, kinds: &[(&str, &str)]) -> Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for (plural, kind) in kinds {
        let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"plural": plural, "kind": kind, "singular": kind.to_lowercase()},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}],
            },
        }))?;
        match crds.create(&PostParams::default(), &crd).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.is_already_exists() => {}
            Err(error) => return Err(error.into()),
        }
    }
    let group_version = format!("{group}/v1").parse()?;
    crate::wait::until(&format!("the {group} CRDs to be served"), WAIT, || async {
        let served = kube::discovery::pinned_group(client, &group_version)
            .await
            .is_ok_and(|found| found.resources_by_stability().len() == kinds.len());
        Ok(served.then_some(()))
    })
    .await
}

/// ServiceMonitor and PrometheusRule.
pub async fn install_monitoring_crds(client: &Client) -> Result<()> {
    install_crd_stubs(
        client,
        "monitoring.coreos.com",
        &[
            ("servicemonitors", "ServiceMonitor"),
            ("prometheusrules", "PrometheusRule"),
        ],
    )
    .await
}

/// AuthorizationPolicy and ServiceEntry.
pub async fn install_istio_crds(client: &Client) -> Result<()> {
    install_crd_stubs(
        client,
        "security.istio.io",
        &[("authorizationpolicies", "AuthorizationPolicy")],
    )
    .await?;
    install_crd_stubs(
        client,
        "networking.istio.io",
        &[("serviceentries", "ServiceEntry")],
    )
    .await
}
