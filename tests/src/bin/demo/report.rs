//! What the controller did, as tables: its Events, and its decision counters.

use anyhow::Result;
use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, ListParams};
use pipewarden::controller::ControllerHandle;

use crate::run::metric_lines;
use crate::table::print_rows;

/// Every Event pipewarden recorded, oldest first.
pub async fn events(client: &Client) -> Result<usize> {
    let api: Api<Event> = Api::all(client.clone());
    let mut events: Vec<Event> = api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.reporting_controller.as_deref() == Some("pipewarden"))
        .collect();
    events.sort_by_key(|e| e.event_time.as_ref().map(|t| t.0));
    let rows: Vec<Vec<String>> = events
        .iter()
        .map(|e| {
            let regarding = e.regarding.clone().unwrap_or_default();
            vec![
                regarding.namespace.unwrap_or_default(),
                format!(
                    "{}/{}",
                    regarding.kind.unwrap_or_default(),
                    regarding.name.unwrap_or_default()
                ),
                e.reason.clone().unwrap_or_default(),
                shorten(e.note.as_deref().unwrap_or(""), 100),
            ]
        })
        .collect();
    print_rows(&["NAMESPACE", "OBJECT", "REASON", "NOTE"], &rows);
    Ok(rows.len())
}

/// The controller's counters, one row per outcome.
pub fn counters(handle: &ControllerHandle) {
    let mut rows = Vec::new();
    for family in [
        "swf_decisions",
        "swf_writes",
        "exit_decisions",
        "exit_notifications",
        "policy_errors",
    ] {
        // Series the controller keeps at 0 from the start are not news.
        for (labels, value) in metric_lines(handle, family)
            .into_iter()
            .filter(|(_, value)| *value > 0)
        {
            rows.push(vec![
                family.to_string(),
                labels.replace('"', ""),
                value.to_string(),
            ]);
        }
    }
    print_rows(&["COUNTER", "LABELS", "VALUE"], &rows);
}

fn shorten(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() <= max {
        return line.to_string();
    }
    format!("{}…", line.chars().take(max).collect::<String>())
}
