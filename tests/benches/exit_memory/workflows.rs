//! Completed workflows as Argo leaves them: the sample with an exit handler, a `status.nodes`
//! of one node per pod (each node as Argo v4 writes a finished pod node), and optionally a
//! long `status.message`.

use anyhow::Result;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};
use pipewarden_tests::resources::{WORKFLOW_NOTIFY_RUNNING, parse_object, workflow_resource};
use serde_json::{Value, json};

pub fn api(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &workflow_resource())
}

/// A workflow named `name` that failed just now, with `nodes` pod nodes and a message of
/// `message_bytes` bytes (Argo's own short one when 0).
pub fn completed(name: &str, nodes: usize, message_bytes: usize) -> Value {
    let mut workflow =
        serde_json::to_value(parse_object(WORKFLOW_NOTIFY_RUNNING).expect("sample")).expect("json");
    let now = Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    workflow["metadata"] = json!({
        "name": name,
        "labels": {
            "workflows.argoproj.io/completed": "true",
            "workflows.argoproj.io/phase": "Failed",
        },
    });
    let message = if message_bytes == 0 {
        "child 'etl' failed".to_owned()
    } else {
        "m".repeat(message_bytes)
    };
    let node_map: serde_json::Map<String, Value> = (0..nodes)
        .map(|i| {
            let id = format!("{name}-{:010}", 1_000_003u64.wrapping_mul(i as u64 + 1) % 10_000_000_000);
            let node = json!({
                "id": id,
                "name": format!("{name}.etl(step-{i})"),
                "displayName": format!("etl(step-{i})"),
                "type": "Pod",
                "templateName": "etl",
                "templateScope": "local/",
                "phase": "Succeeded",
                "boundaryID": name,
                "startedAt": now,
                "finishedAt": now,
                "progress": "1/1",
                "resourcesDuration": {"cpu": 12, "memory": 431},
                "outputs": {"exitCode": "0", "artifacts": [{"name": "main-logs", "s3": {"key": format!("{name}/{id}/main.log")}}]},
                "hostNodeName": "kwok-node-0",
                "children": [format!("{name}-{:010}", i + 7)],
            });
            (id, node)
        })
        .collect();
    workflow["status"] = json!({
        "phase": "Failed",
        "startedAt": now,
        "finishedAt": now,
        "progress": format!("{nodes}/{}", nodes + 1),
        "message": message,
        "nodes": node_map,
    });
    workflow
}

/// Creates `workflow`, trying again (up to five times, a second apart) when the API server,
/// busy storing gigabytes, drops a request; one that exists already counts as created.
pub async fn create(api: &Api<DynamicObject>, workflow: Value) -> Result<()> {
    let object: DynamicObject = serde_json::from_value(workflow)?;
    let mut tries = 0;
    loop {
        match api.create(&PostParams::default(), &object).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => return Ok(()),
            Err(error) if tries < 5 => {
                tries += 1;
                eprintln!("create failed ({error}); trying again");
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
            Err(error) => return Err(error.into()),
        }
    }
}
