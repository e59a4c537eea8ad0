//! The `argo` overlay (Argo Workflows without Kubeflow) and its receiver recipes, as rendered
//! manifests: everything in `argo`, nothing read from or granted in a `kubeflow` namespace, the
//! SWF loop off and its RBAC gone; each recipe's webhook URL leads to what the recipe creates
//! (the Argo Events EventSource's Service, port and endpoint; the Knative Broker's ingress
//! path), and the Trigger filters on the type pipewarden sends. Each rendering passes a
//! server-side dry run (the receivers' kinds as schemaless CRDs). Each recipe of the guide's
//! Helm section (the component's file applied, the chart's `--set` values) gives the
//! environment and objects the component gives.

use std::collections::BTreeMap;

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, PostParams};
use kube::{Client, ResourceExt as _};
use pipewarden::exit::notification::CLOUDEVENT_TYPE;
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::shared;

use crate::chart_loops::{chart, template_in};

fn env_value(deployment: &DynamicObject, name: &str) -> Option<String> {
    deployment.data["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()?
        .iter()
        .find(|var| var["name"] == name)
        .and_then(|var| var["value"].as_str().map(str::to_owned))
}

/// Argo Events' EventSource (argoproj.io/v1alpha1, beside Argo's own CRDs), schemaless.
async fn install_event_source_crd(client: &Client) -> Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "eventsources.argoproj.io"},
        "spec": {
            "group": "argoproj.io",
            "scope": "Namespaced",
            "names": {"plural": "eventsources", "kind": "EventSource", "singular": "eventsource"},
            "versions": [{"name": "v1alpha1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    }))?;
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.is_already_exists() => {}
        Err(error) => return Err(error.into()),
    }
    let group = "argoproj.io/v1alpha1".parse()?;
    pipewarden_tests::wait::until("EventSources to be served", WAIT, || async {
        let served = kube::discovery::pinned_group(client, &group)
            .await
            .is_ok_and(|found| {
                found
                    .resources_by_stability()
                    .iter()
                    .any(|(r, _)| r.kind == "EventSource")
            });
        Ok(served.then_some(()))
    })
    .await
}

/// What every rendering of the overlay holds to; returns its Deployment.
fn check_argo_only(objects: &[DynamicObject]) -> Result<DynamicObject> {
    for object in objects {
        let namespace = object.namespace();
        ensure!(
            namespace.as_deref().is_none_or(|ns| ns == "argo"),
            "{} {} in {namespace:?}",
            kind_of(object),
            object.name_any()
        );
    }
    let deployment = one_of(objects, "Deployment")?.clone();
    ensure!(env_value(&deployment, "PIPEWARDEN_SWF_LOOP").as_deref() == Some("false"));
    for var in ["PIPEWARDEN_SETTINGS_FROM", "PIPEWARDEN_KFP_API_URL"] {
        ensure!(env_value(&deployment, var).is_none(), "{var} is set");
    }
    let role = one_of(objects, "ClusterRole")?;
    let groups = serde_json::to_string(&role.data["rules"])?;
    ensure!(
        !groups.contains("kubeflow.org"),
        "the ClusterRole grants {groups}"
    );
    ensure!(
        groups.contains("argoproj.io"),
        "the ClusterRole lost the exit gate's rule"
    );
    Ok(deployment)
}

#[tokio::test]
async fn the_argo_overlay_and_its_receivers_render_without_kubeflow() -> Result<()> {
    let policy = built_policy("kfp-default");
    let client = shared().await?.client()?;
    ensure_namespace(&client, "argo").await?;
    install_event_source_crd(&client).await?;
    install_crd_stubs(
        &client,
        "eventing.knative.dev",
        &[("brokers", "Broker"), ("triggers", "Trigger")],
    )
    .await?;
    // Knative's kinds are v1 under eventing.knative.dev; the stubs serve v1 too.
    for components in ["", "argo-events-receiver", "knative-receiver"] {
        let objects = documents(&render_with_components("argo", components, &policy)?)?;
        let deployment = check_argo_only(&objects)?;
        let url = env_value(&deployment, "PIPEWARDEN_EXIT_WEBHOOK_URL");
        match components {
            "" => ensure!(url.is_none(), "a webhook without a receiver: {url:?}"),
            "argo-events-receiver" => {
                let source = one_of(&objects, "EventSource")?;
                let port = &source.data["spec"]["service"]["ports"][0];
                let (_, hook) = source.data["spec"]["webhook"]
                    .as_object()
                    .and_then(|hooks| hooks.iter().next())
                    .context("no webhook")?;
                let target_port = port["targetPort"].to_string();
                ensure!(hook["method"] == "POST" && hook["port"] == target_port.as_str());
                let wanted = format!(
                    "http://{}-eventsource-svc.{}.svc.cluster.local:{}{}",
                    source.name_any(),
                    source.namespace().unwrap_or_default(),
                    port["port"],
                    hook["endpoint"].as_str().unwrap_or_default()
                );
                ensure!(
                    url.as_deref() == Some(wanted.as_str()),
                    "{url:?} vs {wanted}"
                );
            }
            _ => {
                let broker = one_of(&objects, "Broker")?;
                let trigger = one_of(&objects, "Trigger")?;
                let wanted = format!(
                    "http://broker-ingress.knative-eventing.svc.cluster.local/{}/{}",
                    broker.namespace().unwrap_or_default(),
                    broker.name_any()
                );
                ensure!(
                    url.as_deref() == Some(wanted.as_str()),
                    "{url:?} vs {wanted}"
                );
                ensure!(trigger.data["spec"]["broker"] == broker.name_any().as_str());
                ensure!(
                    trigger.data["spec"]["filter"]["attributes"]["type"] == CLOUDEVENT_TYPE,
                    "the Trigger filters on {}",
                    trigger.data["spec"]["filter"]
                );
            }
        }
        if url.is_some() {
            ensure!(
                env_value(&deployment, "PIPEWARDEN_EXIT_WEBHOOK_ALLOW_HTTP").as_deref()
                    == Some("true")
            );
        }
        let answers = apply(&client, &objects, true).await?;
        ensure!(answers.len() == objects.len());
        println!(
            "argo + [{components}]: {} objects, all in argo, SWF loop off, webhook {}; dry-run applied",
            objects.len(),
            url.as_deref().unwrap_or("none")
        );
    }
    Ok(())
}

/// The Deployment's container env as name -> value (or valueFrom), after the chart
/// comparison's normalisations (the settings pin as whether it pins the render's settings).
fn env_map(objects: &[DynamicObject]) -> Result<BTreeMap<String, serde_json::Value>> {
    let normal = normalised(objects)?;
    let key = ("Deployment".to_owned(), "pipewarden".to_owned());
    let deployment = normal.get(&key).context("no Deployment pipewarden")?;
    let env = deployment
        .pointer("/spec/template/spec/containers/0/env")
        .and_then(serde_json::Value::as_array)
        .context("env")?;
    Ok(env
        .iter()
        .map(|var| {
            let name = var["name"].as_str().unwrap_or_default().to_owned();
            let value = var.get("value").or_else(|| var.get("valueFrom"));
            (name, value.cloned().unwrap_or_default())
        })
        .collect())
}

/// Each receiver recipe of argo-only.md's Helm section: the component whose file the
/// `kubectl apply` names, and the `--set` values of the `helm upgrade` after it.
fn helm_recipes() -> Result<Vec<(String, String, Vec<String>)>> {
    let guide = std::fs::read_to_string(repo_path("docs/install/argo-only.md"))?;
    let section = guide
        .split("## With Helm")
        .nth(1)
        .context("no Helm section")?;
    let mut recipes = Vec::new();
    for block in section.split("```sh\n").skip(1) {
        let block = block.split("```").next().unwrap_or_default();
        let lines: Vec<Vec<&str>> = block
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        let file = lines.iter().find_map(|words| match words.as_slice() {
            ["kubectl", "apply", "-n", "argo", "-f", file] => Some(*file),
            _ => None,
        });
        let upgrade = lines
            .iter()
            .find(|words| words.starts_with(&["helm", "upgrade", "pipewarden"]));
        if let (Some(file), Some(upgrade)) = (file, upgrade) {
            let component = file
                .strip_prefix("deploy/components/")
                .and_then(|rest| rest.split('/').next())
                .context(file.to_owned())?;
            let sets = upgrade
                .windows(2)
                .filter(|pair| pair[0] == "--set")
                .map(|pair| pair[1].to_owned())
                .collect();
            recipes.push((component.to_owned(), file.to_owned(), sets));
        }
    }
    Ok(recipes)
}

#[test]
fn each_receiver_recipe_with_helm_gives_what_its_component_gives() -> Result<()> {
    let chart = chart()?;
    let policy = built_policy("kfp-default");
    let recipes = helm_recipes()?;
    ensure!(recipes.len() == 2, "{recipes:?}");
    for (component, file, values) in recipes {
        let kustomize = documents(&render_with_components("argo", &component, &policy)?)?;
        let mut sets = vec!["swfLoop.enabled=false"];
        sets.extend(values.iter().map(String::as_str));
        let helm = template_in(&chart, "argo", &sets)?;
        let (left, right) = (env_map(&kustomize)?, env_map(&helm)?);
        ensure!(
            left == right,
            "{component}: kustomize env {left:#?}\nchart env {right:#?}"
        );
        // The file applied with -n argo holds the objects the component renders.
        let objects = documents(&std::fs::read_to_string(repo_path(&file))?)?;
        for mut object in objects.clone() {
            object.metadata.namespace = Some("argo".into());
            let rendered = kustomize
                .iter()
                .find(|o| kind_of(o) == kind_of(&object) && o.name_any() == object.name_any())
                .with_context(|| format!("{file}: {} not rendered", object.name_any()))?;
            ensure!(
                serde_json::to_value(rendered)? == serde_json::to_value(&object)?,
                "{file}: {} differs from the component's",
                object.name_any()
            );
        }
        println!(
            "{component} with Helm: the Deployment's env equals the component's ({} \
             variables), {file} holds its {} objects",
            right.len(),
            objects.len()
        );
    }
    Ok(())
}
