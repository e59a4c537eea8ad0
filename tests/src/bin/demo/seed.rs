//! Seeds the control plane with objects as KFP and Argo would have left them.

use std::collections::BTreeSet;

use anyhow::{Context as _, Result};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DynamicObject, ObjectMeta, PostParams};
use kube::{Client, ResourceExt as _};
use pipewarden_tests::apply_yaml;
use pipewarden_tests::resources::{
    SWF_KFP_2_17, WORKFLOW_KFP_SUCCEEDED, WORKFLOW_NOTIFY_RUNNING, data_dir, parse_object,
};

/// Where the KFP 2.3-era SWF fixture lives.
const KFP_2_3_FIXTURE: &str = "swf/kfp-2.3.yaml";
/// More SWFs as KFP leaves them: one with runtime parameters, one that only references a
/// pipeline version, and one whose embedded workflow was overwritten (the patch from KFP #11296's reproduction).
const MORE_FIXTURES: [&str; 3] = [
    "swf/kfp-2.3-parameters.yaml",
    "swf/kfp-reference-only.yaml",
    "swf/kfp-2.3-corrupted.yaml",
];

/// KFP's API server, `namespace/name`, as `--settings-from` names it.
pub const API_SERVER: &str = "kubeflow/ml-pipeline";

/// KFP's API server as its multi-user manifests install it, with the target's images:
/// `MULTIUSER=true` from the generated `envFrom` ConfigMap.
fn multi_user_api_server(version: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: pipeline-api-server-config-dk58g2h7b4
  namespace: kubeflow
data:
  MULTIUSER: "true"
  DEFAULTPIPELINERUNNERSERVICEACCOUNT: default-editor
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ml-pipeline
  namespace: kubeflow
spec:
  selector:
    matchLabels: {{app: ml-pipeline}}
  template:
    metadata:
      labels: {{app: ml-pipeline}}
    spec:
      containers:
        - name: ml-pipeline-api-server
          image: ghcr.io/kubeflow/kfp-api-server:{version}
          envFrom:
            - configMapRef: {{name: pipeline-api-server-config-dk58g2h7b4}}
          env:
            - {{name: V2_DRIVER_IMAGE, value: "ghcr.io/kubeflow/kfp-driver:{version}"}}
            - {{name: V2_LAUNCHER_IMAGE, value: "ghcr.io/kubeflow/kfp-launcher:{version}"}}
            - name: POD_NAMESPACE
              valueFrom: {{fieldRef: {{fieldPath: metadata.namespace}}}}
"#
    )
}

pub struct Seeded {
    objects: Vec<DynamicObject>,
    kfp_2_3_fixture: bool,
}

impl Seeded {
    pub fn count(&self, kind: &str) -> usize {
        self.objects.iter().filter(|o| kind_of(o) == kind).count()
    }

    pub fn summary(&self) -> String {
        let count = |kind: &str| self.objects.iter().filter(|o| kind_of(o) == kind).count();
        let namespaces: BTreeSet<String> =
            self.objects.iter().filter_map(|o| o.namespace()).collect();
        let fixture = if self.kfp_2_3_fixture { "with" } else { "no" };
        format!(
            "{} ScheduledWorkflows, {} Workflows in {} namespaces ({fixture} KFP 2.3 fixture)",
            count("ScheduledWorkflow"),
            count("Workflow"),
            namespaces.len()
        )
    }
}

/// Applies the samples: the KFP 2.17 SWF in two profiles, the KFP 2.3 fixture in a third, more
/// SWF fixtures, a completed KFP run and a running Argo workflow with an exit handler.
pub async fn seed(client: &Client) -> Result<Seeded> {
    let mut documents = vec![
        SWF_KFP_2_17.to_owned(),
        placed(
            SWF_KFP_2_17,
            "kubeflow-user-team-b",
            Some("nightlytrainq8z3m"),
        )?,
        WORKFLOW_KFP_SUCCEEDED.to_owned(),
        WORKFLOW_NOTIFY_RUNNING.to_owned(),
    ];
    let fixture = data_dir().join(KFP_2_3_FIXTURE);
    let kfp_2_3_fixture = fixture.is_file();
    if kfp_2_3_fixture {
        let yaml = std::fs::read_to_string(&fixture)
            .with_context(|| format!("reading {}", fixture.display()))?;
        // The same recurring run, left behind in a profile that was never re-rendered.
        documents.push(placed(&yaml, "kubeflow-user-team-a", None)?);
    }
    for fixture in MORE_FIXTURES {
        let path = data_dir().join(fixture);
        documents.push(
            std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?,
        );
    }

    if crate::api_owned() {
        documents.push(multi_user_api_server(crate::target()));
    }
    let mut objects = Vec::new();
    for yaml in &documents {
        create_namespaces_of(client, yaml).await?;
        objects.extend(apply_yaml(client, None, yaml).await?);
    }
    Ok(Seeded {
        objects,
        kfp_2_3_fixture,
    })
}

/// The object of `yaml` moved to another profile namespace, optionally renamed. An SWF's
/// embedded workflow moves too, as KFP's API server writes the namespace into it.
fn placed(yaml: &str, namespace: &str, name: Option<&str>) -> Result<String> {
    let mut object = parse_object(yaml)?;
    object.metadata.namespace = Some(namespace.to_owned());
    if let Some(text) = object.data["spec"]["workflow"]["spec"].as_str() {
        let mut workflow: serde_json::Value = serde_json::from_str(text)?;
        workflow["metadata"]["namespace"] = namespace.into();
        object.data["spec"]["workflow"]["spec"] = workflow.to_string().into();
    }
    if let Some(name) = name {
        object.metadata.name = Some(name.to_owned());
    }
    Ok(serde_yaml::to_string(&object)?)
}

async fn create_namespaces_of(client: &Client, yaml: &str) -> Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for document in yaml.split("\n---") {
        let Some(name) = parse_object(document).ok().and_then(|o| o.namespace()) else {
            continue;
        };
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name),
                ..Default::default()
            },
            ..Default::default()
        };
        match namespaces.create(&PostParams::default(), &namespace).await {
            Err(kube::Error::Api(status)) if status.is_already_exists() => {}
            other => drop(other?),
        }
    }
    Ok(())
}

pub fn kind_of(object: &DynamicObject) -> &str {
    object.types.as_ref().map_or("", |t| t.kind.as_str())
}
