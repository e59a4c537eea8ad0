//! Kubernetes Events (`events.k8s.io/v1`) on a Workflow, one per completion and reason.
//!
//! kube's `Recorder` folds Events with the same reason on the same object into one series
//! (showing the first note), so a retried workflow's second completion would vanish into its
//! first. These are created directly, under a name derived from the completion key and the
//! reason: every attempt, replica and restart names the same Event, the first create wins and
//! a second one answers 409, which counts as recorded.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};

use crate::exit::event::WorkflowFacts;
use crate::exit::notification::{event_name, truncate_note};

pub struct EventWriter {
    client: kube::Client,
    instance: String,
}

/// `Normal` or `Warning`.
pub fn event_type(warning: bool) -> &'static str {
    if warning { "Warning" } else { "Normal" }
}

impl EventWriter {
    pub fn new(client: kube::Client) -> Self {
        EventWriter {
            client,
            instance: std::env::var("POD_NAME").unwrap_or_else(|_| "pipewarden".into()),
        }
    }

    /// Records `reason` for the completion of `workflow` (by its completion key) once.
    pub async fn record(
        &self,
        workflow: &WorkflowFacts,
        reason: &str,
        warning: bool,
        note: String,
    ) -> kube::Result<()> {
        let key = workflow.completion_key();
        let event = Event {
            metadata: ObjectMeta {
                name: Some(event_name(&workflow.name, reason, &key)),
                namespace: Some(workflow.namespace.clone()),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(Timestamp::now())),
            action: Some("Notify".into()),
            reason: Some(reason.into()),
            note: Some(truncate_note(note)),
            type_: Some(event_type(warning).into()),
            regarding: Some(ObjectReference {
                api_version: Some("argoproj.io/v1alpha1".into()),
                kind: Some("Workflow".into()),
                namespace: Some(workflow.namespace.clone()),
                name: Some(workflow.name.clone()),
                uid: Some(workflow.uid.clone()),
                ..ObjectReference::default()
            }),
            reporting_controller: Some("pipewarden".into()),
            reporting_instance: Some(self.instance.clone()),
            ..Event::default()
        };
        let events: Api<Event> = Api::namespaced(self.client.clone(), &workflow.namespace);
        match events.create(&PostParams::default(), &event).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
            Err(error) => Err(error),
        }
    }
}
