//! Installs the project's CRDs and waits until their resources can be served.

use std::time::Duration;

use anyhow::{Context as _, Result};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use kube::{Client, ResourceExt as _};

use crate::resources::{SWF_CRD, WORKFLOW_CRD, swf_resource, workflow_resource};
use crate::wait;

const TIMEOUT: Duration = Duration::from_secs(30);

/// Creates the ScheduledWorkflow and Workflow CRDs, waits for `Established` and for each
/// resource to answer a list (discovery lags behind `Established`).
pub async fn install(client: &Client) -> Result<Vec<String>> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut names = Vec::new();
    for yaml in [SWF_CRD, WORKFLOW_CRD] {
        let crd: CustomResourceDefinition = serde_yaml::from_str(yaml).context("parsing a CRD")?;
        let created = crds.create(&PostParams::default(), &crd).await;
        match created {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.is_already_exists() => {}
            Err(e) => return Err(e).with_context(|| format!("creating CRD {}", crd.name_any())),
        }
        names.push(crd.name_any());
    }
    for name in &names {
        wait_established(&crds, name).await?;
    }
    for resource in [swf_resource(), workflow_resource()] {
        wait_listable(client, &resource).await?;
    }
    Ok(names)
}

/// Installs OpenReports' `Report` CRD, as `tests/control-plane/build.sh` copied it from its
/// Go module (github.com/openreports/reports-api), and waits until reports can be listed.
pub async fn install_openreports(client: &Client) -> Result<()> {
    let path = crate::argo::built("openreports-crds")?.join("openreports.io_reports.yaml");
    let yaml = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
    let crd: CustomResourceDefinition = serde_yaml::from_str(&yaml).context("parsing the CRD")?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.is_already_exists() => {}
        Err(e) => return Err(e).context("creating the OpenReports Report CRD"),
    }
    wait_established(&crds, &crd.name_any()).await?;
    wait_listable(client, &pipewarden::controller::reports::report_resource()).await
}

async fn wait_established(crds: &Api<CustomResourceDefinition>, name: &str) -> Result<()> {
    wait::until(
        &format!("CRD {name} to be Established"),
        TIMEOUT,
        || async {
            let crd = crds.get(name).await?;
            let established = crd
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True");
            Ok(established.then_some(()))
        },
    )
    .await
}

async fn wait_listable(client: &Client, resource: &ApiResource) -> Result<()> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    let what = format!("{}.{} to be listable", resource.plural, resource.group);
    wait::until(&what, TIMEOUT, || async {
        match api.list(&ListParams::default().limit(1)).await {
            Ok(_) => Ok(Some(())),
            Err(kube::Error::Api(status)) if status.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    })
    .await
}
