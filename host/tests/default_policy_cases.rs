//! `policies/kfp-default/cases/cases.yaml` through the compiled component, with the same
//! expectations as the native run (`cargo test -p kfp-default --test cases`).

mod common;
// The native run reads the event's fields; this one derives them from the object instead.
#[allow(dead_code)]
#[path = "../../policies/kfp-default/cases/runner.rs"]
mod runner;

use common::{built_policy, cached_options, repo_path};
use pipewarden::engine::{
    Eligibility, EventKind, Policy, PolicyOptions, RebuildDecision, RebuildInput, RebuildPolicy,
    RenderContext, Stamps, Tombstone,
};
use pipewarden::exit::event::WorkflowFacts;
use runner::{EventCase, PolicyUnderTest, RebuildCase, TombstoneCase};

struct Component(Policy);

impl PolicyUnderTest for Component {
    fn should_rebuild(&mut self, case: &RebuildCase) -> (String, String) {
        let policy =
            pipewarden::swf::parse_rebuild_policy(&case.policy).expect("a valid rebuild policy");
        let input = RebuildInput {
            policy,
            swf: case.swf.clone(),
            target_version: case.target.clone(),
            stamps: Stamps {
                version: case.version_stamp.clone(),
                render_hash: case.hash_stamp.clone(),
            },
            settings: case.settings.clone(),
        };
        match self.0.should_rebuild(&input) {
            Ok(RebuildDecision::Rebuild(reason)) => ("rebuild".into(), reason),
            Ok(RebuildDecision::Skip(reason)) => ("skip".into(), reason),
            Err(error) => ("engine error".into(), error.to_string()),
        }
    }

    fn render(
        &mut self,
        swf: &str,
        target: Option<&str>,
        settings: &str,
    ) -> Result<String, String> {
        let context = RenderContext {
            target_version: target.map(str::to_string),
            settings: settings.to_string(),
        };
        self.0
            .render_swf(swf, &context)
            .map_err(|error| match error {
                pipewarden::engine::PolicyError::Guest { message, .. } => message,
                other => format!("engine error: {other}"),
            })
    }

    fn exit_eligibility(
        &mut self,
        event: &EventCase,
        tombstone: Option<&TombstoneCase>,
        settings: &str,
    ) -> (String, String) {
        let kind =
            pipewarden::exit::event::parse_event_kind(&event.kind).expect("a valid event kind");
        // Built as the controller builds it, from the object.
        let workflow: serde_json::Value =
            serde_json::from_str(&event.workflow).expect("workflow JSON");
        let facts = WorkflowFacts::read(&workflow).expect("a named workflow with a uid");
        let event = facts.event(kind, &workflow);
        let tombstone = tombstone.map(|t| Tombstone {
            resource_version: t.resource_version.clone(),
            phase: t.phase.clone(),
            completed: t.completed,
            age_seconds: 1,
        });
        // The settings reach the guest through its `settings` import, as in the controller.
        let policy = self.0.with_settings(settings);
        match policy.exit_eligibility(&event, tombstone.as_ref()) {
            Ok(Eligibility::Process) => ("process".into(), String::new()),
            Ok(Eligibility::Skip(reason)) => ("skip".into(), reason),
            Ok(Eligibility::RejectStale(reason)) => ("reject-stale".into(), reason),
            Ok(Eligibility::Requeue(reason)) => ("requeue".into(), reason),
            Err(error) => ("engine error".into(), error.to_string()),
        }
    }
}

#[test]
fn every_case_holds_through_the_component() {
    // Generous deadlines: this checks decisions, not speed, and CI machines are busy.
    let options = PolicyOptions {
        render_timeout: std::time::Duration::from_secs(2),
        decision_timeout: std::time::Duration::from_secs(2),
        ..cached_options()
    };
    let policy = Policy::load(&built_policy("kfp-default"), options).expect("load kfp-default");
    runner::check_all(&repo_path(""), &mut Component(policy));
}

// Keeps the event-kind names of the case file and the host in step.
#[test]
fn case_file_event_kinds_parse() {
    for kind in ["added", "modified", "deleted", "relisted"] {
        assert!(
            pipewarden::exit::event::parse_event_kind(kind).is_some(),
            "{kind}"
        );
    }
    let _ = (EventKind::Added, RebuildPolicy::Always);
}
