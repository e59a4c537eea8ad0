//! `cases/cases.yaml`, run natively against the policy's exports (the component run is in the
//! host's tests and checks the same file).

#[path = "../cases/runner.rs"]
mod runner;

use std::path::Path;

use kfp_default::KfpDefault;
use pipewarden_guest::{
    Eligibility, EventKind, Policy, RebuildDecision, RebuildInput, RebuildPolicy, RenderContext,
    Stamps, Tombstone, WorkflowEvent,
};
use runner::{EventCase, PolicyUnderTest, RebuildCase, TombstoneCase};

struct Native;

impl PolicyUnderTest for Native {
    fn should_rebuild(&mut self, case: &RebuildCase) -> (String, String) {
        let policy = match case.policy.as_str() {
            "disable" => RebuildPolicy::Disable,
            "always" => RebuildPolicy::Always,
            _ => RebuildPolicy::OnVersionChange,
        };
        let decision = KfpDefault::should_rebuild(RebuildInput {
            policy,
            swf: case.swf.clone(),
            target_version: case.target.clone(),
            stamps: Stamps {
                version: case.version_stamp.clone(),
                render_hash: case.hash_stamp.clone(),
            },
            settings: case.settings.clone(),
        });
        match decision {
            RebuildDecision::Rebuild(reason) => ("rebuild".into(), reason),
            RebuildDecision::Skip(reason) => ("skip".into(), reason),
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
        KfpDefault::render_swf(swf.to_string(), context)
    }

    fn exit_eligibility(
        &mut self,
        event: &EventCase,
        tombstone: Option<&TombstoneCase>,
        settings: &str,
    ) -> (String, String) {
        // What the host's `settings` import answers inside a component.
        pipewarden_guest::settings::set_native(settings);
        let kind = match event.kind.as_str() {
            "added" => EventKind::Added,
            "deleted" => EventKind::Deleted,
            "relisted" => EventKind::Relisted,
            _ => EventKind::Modified,
        };
        let event = WorkflowEvent {
            kind,
            namespace: event.namespace.clone(),
            name: event.name.clone(),
            uid: event.uid.clone(),
            resource_version: event.resource_version.clone(),
            phase: event.phase.clone(),
            labels: event.labels.clone(),
            workflow: event.workflow.clone(),
        };
        let tombstone = tombstone.map(|t| Tombstone {
            resource_version: t.resource_version.clone(),
            phase: t.phase.clone(),
            completed: t.completed,
            age_seconds: 1,
        });
        match KfpDefault::exit_eligibility(event, tombstone) {
            Eligibility::Process => ("process".into(), String::new()),
            Eligibility::Skip(reason) => ("skip".into(), reason),
            Eligibility::RejectStale(reason) => ("reject-stale".into(), reason),
            Eligibility::Requeue(reason) => ("requeue".into(), reason),
        }
    }
}

#[test]
fn every_case_holds_natively() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    runner::check_all(&root, &mut Native);
}
