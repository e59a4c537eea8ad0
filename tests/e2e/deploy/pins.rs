//! Trust roots apart from what they pin: in every kustomize overlay and chart variant the
//! policy's and the settings' pins are literal values of the Deployment's container
//! (`PIPEWARDEN_POLICY_SHA256`, `PIPEWARDEN_SETTINGS_SHA256`), each the sha256 of the bytes the
//! same render ships, and no ConfigMap carries a pin: whoever may edit the policy ConfigMap
//! cannot bring a policy or settings the Deployment did not name (they are refused on reload).

use anyhow::{Context as _, Result, ensure};
use base64::Engine as _;
use kube::api::DynamicObject;
use pipewarden_tests::deploy_support::*;

const OCI_REFERENCE: &str = "oci://registry.example.com/policies/kfp-default@sha256:\
     2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae";

fn container_env(deployment: &DynamicObject) -> Result<&Vec<serde_json::Value>> {
    deployment.data["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .context("no container env")
}

/// The literal value of `name` in the Deployment's container; an error if it comes from
/// anywhere else (a ConfigMap, a Secret).
fn literal(deployment: &DynamicObject, name: &str) -> Result<Option<String>> {
    let Some(var) = container_env(deployment)?
        .iter()
        .find(|v| v["name"] == name)
    else {
        return Ok(None);
    };
    ensure!(
        var.get("valueFrom").is_none(),
        "{name} is not a literal: {var}"
    );
    Ok(Some(var["value"].as_str().context("value")?.to_owned()))
}

/// What one render ships and pins, checked; returns a line for the table.
fn check(render: &str, objects: &[DynamicObject], policy_pinned: bool) -> Result<String> {
    let maps: Vec<&DynamicObject> = objects
        .iter()
        .filter(|o| kind_of(o) == "ConfigMap")
        .collect();
    for map in &maps {
        for section in ["data", "binaryData"] {
            for (key, value) in map.data[section].as_object().into_iter().flatten() {
                let text = value.as_str().unwrap_or_default().trim();
                let bare_pin = text.len() == 71 && text.starts_with("sha256:");
                ensure!(
                    !key.ends_with(".sha256") && !bare_pin,
                    "{render}: ConfigMap {:?} carries a pin ({key})",
                    map.metadata.name
                );
            }
        }
    }
    let deployment = one_of(objects, "Deployment")?;
    for var in container_env(deployment)? {
        let name = var["name"].as_str().unwrap_or_default();
        ensure!(
            !name.ends_with("_SHA256_FILE"),
            "{render}: {name} reads a pin from a file"
        );
    }
    let policy_map = maps
        .iter()
        .find(|m| {
            m.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.ends_with("-policy"))
        })
        .context("no policy ConfigMap")?;
    let settings = policy_map.data["data"]["settings.json"]
        .as_str()
        .context("no settings.json")?;
    let settings_pin = literal(deployment, "PIPEWARDEN_SETTINGS_SHA256")?
        .with_context(|| format!("{render}: no settings pin"))?;
    ensure!(
        settings_pin == sha256_pin(settings.as_bytes())?,
        "{render}: the settings pin {settings_pin} is not the sha256 of the settings shipped"
    );
    let policy_pin = literal(deployment, "PIPEWARDEN_POLICY_SHA256")?;
    let built = sha256_pin(&std::fs::read(built_policy("kfp-default"))?)?;
    match (policy_pinned, &policy_pin) {
        (false, None) => {}
        (false, Some(pin)) => anyhow::bail!("{render}: pinned {pin} beside an oci:// digest"),
        (true, None) => anyhow::bail!("{render}: no policy pin"),
        (true, Some(pin)) => {
            ensure!(
                *pin == built,
                "{render}: the policy pin {pin} is not the built policy's"
            );
            if let Some(wasm) = policy_map.data["binaryData"]["policy.wasm"].as_str() {
                let text: String = wasm.split_whitespace().collect();
                let bytes = base64::engine::general_purpose::STANDARD.decode(text)?;
                ensure!(
                    sha256_pin(&bytes)? == *pin,
                    "{render}: the pin is not the shipped bytes'"
                );
            }
        }
    }
    Ok(format!(
        "{render:<28} policy {:<14} settings {}  ConfigMaps without a pin: {}",
        policy_pin.as_deref().map_or("(oci digest)", |p| &p[..14]),
        &settings_pin[..14],
        maps.len()
    ))
}

#[test]
fn the_pins_are_in_the_deployment_never_in_the_configmap_they_pin() -> Result<()> {
    let policy = built_policy("kfp-default");
    let mut lines = Vec::new();
    for (overlay, policy_pinned) in [
        ("kubeflow", true),
        ("argo", true),
        ("image-volume", true),
        ("oci", false),
    ] {
        let objects = documents(&render_overlay(overlay, &policy)?)?;
        lines.push(check(
            &format!("kustomize {overlay}"),
            &objects,
            policy_pinned,
        )?);
    }
    let objects = documents(&render_with_components(
        "kubeflow",
        "enforce mark-key",
        &policy,
    )?)?;
    lines.push(check("kustomize kubeflow+enforce", &objects, true)?);
    let chart = Chart::with_policy(Some(&policy))?;
    let oci = format!("policy.oci.reference={OCI_REFERENCE}");
    for (variant, sets, policy_pinned) in [
        ("helm defaults", vec![], true),
        ("helm image", vec!["policy.source=image"], true),
        ("helm oci", vec!["policy.source=oci", oci.as_str()], false),
        ("helm settings", vec!["settings.file.notify=all"], true),
    ] {
        let objects = chart.template(&sets)?;
        lines.push(check(variant, &objects, policy_pinned)?);
    }
    for line in &lines {
        println!("{line}");
    }
    Ok(())
}
