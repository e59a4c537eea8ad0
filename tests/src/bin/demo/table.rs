//! The table the demo prints: every SWF and Workflow with its driver image and state.

use anyhow::Result;
use kube::api::{Api, DynamicObject, ListParams};
use kube::{Client, ResourceExt as _};
use pipewarden_tests::resources::{swf_resource, workflow_resource};
use serde_json::Value;

pub struct Row {
    namespace: String,
    kind: &'static str,
    name: String,
    driver_image: String,
    state: String,
}

/// Lists all ScheduledWorkflows and Workflows in every namespace.
pub async fn inventory(client: &Client) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let swfs: Api<DynamicObject> = Api::all_with(client.clone(), &swf_resource());
    for swf in swfs.list(&ListParams::default()).await? {
        let embedded = embedded_workflow(&swf.data["spec"]["workflow"]["spec"]);
        let driver = embedded
            .as_ref()
            .map_or("(compiled at run time)".to_owned(), driver_image);
        let stamp = swf
            .annotations()
            .get("pipelines.kubeflow.org/version")
            .map(|version| format!("stamped {version}, "));
        let state = match embedded.as_ref() {
            Some(workflow) => {
                let versus = crate::compile_check::versus_target(&swf, workflow);
                Some(format!("{}{versus}", stamp.unwrap_or_default()))
            }
            None if crate::api_owned() => Some("KFP's API owns it".to_owned()),
            None => None,
        };
        rows.push(row(&swf, "ScheduledWorkflow", driver, state));
    }
    let workflows: Api<DynamicObject> = Api::all_with(client.clone(), &workflow_resource());
    for workflow in workflows.list(&ListParams::default()).await? {
        let driver = driver_image(&workflow.data);
        let phase = workflow.data["status"]["phase"].as_str().unwrap_or("-");
        let state = match workflow
            .annotations()
            .get("pipewarden.io/exit-notification")
        {
            Some(mark) => format!(
                "{phase}, notification {}",
                mark.split('/').next().unwrap_or("")
            ),
            None => phase.to_owned(),
        };
        rows.push(row(&workflow, "Workflow", driver, Some(state)));
    }
    rows.sort_by(|a, b| (&a.namespace, a.kind, &a.name).cmp(&(&b.namespace, b.kind, &b.name)));
    Ok(rows)
}

fn row(
    object: &DynamicObject,
    kind: &'static str,
    driver_image: String,
    state: Option<String>,
) -> Row {
    Row {
        namespace: object.namespace().unwrap_or_default(),
        kind,
        name: object.name_any(),
        driver_image,
        state: state.unwrap_or_else(|| "-".to_owned()),
    }
}

/// `spec.workflow.spec` of an SWF: a JSON string, or an object in legacy SWFs.
fn embedded_workflow(spec: &Value) -> Option<Value> {
    match spec {
        Value::String(text) => serde_json::from_str(text).ok(),
        Value::Object(_) => Some(spec.clone()),
        _ => None,
    }
}

/// The KFP driver image of a Workflow, or `-` for a workflow KFP did not compile.
fn driver_image(workflow: &Value) -> String {
    let templates = workflow["spec"]["templates"]
        .as_array()
        .into_iter()
        .flatten();
    templates
        .filter_map(|t| t["container"]["image"].as_str())
        .find(|image| image.contains("kfp-driver"))
        .map_or("-".to_owned(), short_digest)
}

/// `name@sha256:<64 hex>` shortened to 12 hex digits, so the table stays readable.
fn short_digest(image: &str) -> String {
    match image.split_once("@sha256:") {
        Some((name, digest)) if digest.len() > 12 => format!("{name}@sha256:{}…", &digest[..12]),
        _ => image.to_owned(),
    }
}

pub fn print(rows: &[Row]) {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.namespace.clone(),
                r.kind.to_string(),
                r.name.clone(),
                r.driver_image.clone(),
                r.state.clone(),
            ]
        })
        .collect();
    print_rows(
        &["NAMESPACE", "KIND", "NAME", "DRIVER IMAGE", "STATE"],
        &cells,
    );
}

/// Prints an aligned table.
pub fn print_rows(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        println!("{}", padded.join("  ").trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}
