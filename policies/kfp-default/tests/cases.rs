//! `cases/cases.yaml`, run natively against the policy's Rust exports by the same case runner
//! as `pipewarden test` (which runs the file through the compiled component in the host's
//! tests), so both check the same cases with the same expectations.

use std::path::Path;

use kfp_default::KfpDefault;
use pipewarden::cli::test::{self, Decisions, TestOutput};
use pipewarden::engine::{self as host, Export, PolicyError};
use pipewarden_guest::{self as guest, Policy as _};

/// The policy's logic, called directly; its `settings` import answered natively.
struct Native {
    settings: String,
}

impl Native {
    fn settings_in_force(&self) {
        pipewarden_guest::settings::set_native(&self.settings);
    }
}

fn guest_error(export: Export, message: String) -> PolicyError {
    PolicyError::Guest { export, message }
}

impl Decisions for Native {
    fn with_settings(&self, settings: &str) -> Self {
        Native {
            settings: settings.to_string(),
        }
    }

    fn validate_settings(&self, settings: &str) -> Result<(), PolicyError> {
        self.settings_in_force();
        KfpDefault::validate_settings(settings.to_string())
            .map_err(|message| guest_error(Export::ValidateSettings, message))
    }

    fn should_rebuild(
        &self,
        input: &host::RebuildInput,
    ) -> Result<host::RebuildDecision, PolicyError> {
        self.settings_in_force();
        let policy = match input.policy {
            host::RebuildPolicy::Disable => guest::RebuildPolicy::Disable,
            host::RebuildPolicy::Always => guest::RebuildPolicy::Always,
            host::RebuildPolicy::OnVersionChange => guest::RebuildPolicy::OnVersionChange,
        };
        let decision = KfpDefault::should_rebuild(guest::RebuildInput {
            policy,
            swf: input.swf.clone(),
            target_version: input.target_version.clone(),
            stamps: guest::Stamps {
                version: input.stamps.version.clone(),
                render_hash: input.stamps.render_hash.clone(),
            },
            settings: input.settings.clone(),
        });
        Ok(match decision {
            guest::RebuildDecision::Rebuild(reason) => host::RebuildDecision::Rebuild(reason),
            guest::RebuildDecision::Skip(reason) => host::RebuildDecision::Skip(reason),
        })
    }

    fn render_swf(&self, swf: &str, context: &host::RenderContext) -> Result<String, PolicyError> {
        self.settings_in_force();
        let context = guest::RenderContext {
            target_version: context.target_version.clone(),
            settings: context.settings.clone(),
        };
        KfpDefault::render_swf(swf.to_string(), context)
            .map_err(|message| guest_error(Export::RenderSwf, message))
    }

    fn exit_eligibility(
        &self,
        event: &host::WorkflowEvent,
        tombstone: Option<&host::Tombstone>,
    ) -> Result<host::Eligibility, PolicyError> {
        self.settings_in_force();
        let kind = match event.kind {
            host::EventKind::Added => guest::EventKind::Added,
            host::EventKind::Modified => guest::EventKind::Modified,
            host::EventKind::Deleted => guest::EventKind::Deleted,
            host::EventKind::Relisted => guest::EventKind::Relisted,
        };
        let event = guest::WorkflowEvent {
            kind,
            namespace: event.namespace.clone(),
            name: event.name.clone(),
            uid: event.uid.clone(),
            resource_version: event.resource_version.clone(),
            phase: event.phase.clone(),
            labels: event.labels.clone(),
            workflow: event.workflow.clone(),
        };
        let tombstone = tombstone.map(|t| guest::Tombstone {
            resource_version: t.resource_version.clone(),
            phase: t.phase.clone(),
            completed: t.completed,
            age_seconds: t.age_seconds,
        });
        Ok(match KfpDefault::exit_eligibility(event, tombstone) {
            guest::Eligibility::Process => host::Eligibility::Process,
            guest::Eligibility::Skip(reason) => host::Eligibility::Skip(reason),
            guest::Eligibility::RejectStale(reason) => host::Eligibility::RejectStale(reason),
            guest::Eligibility::Requeue(reason) => host::Eligibility::Requeue(reason),
        })
    }
}

#[test]
fn every_case_holds_natively() {
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/cases.yaml");
    let files = test::load_files(&[cases]).expect("a well-formed case file");
    let native = Native {
        settings: "{}".into(),
    };
    let report = test::run_files(&native, &files, None).expect("settings readable");
    test::print(&report, TestOutput::Table).expect("print the table");
    assert!(
        report.rows.len() >= 50,
        "the case file shrank: {} cases",
        report.rows.len()
    );
    let failures: Vec<String> = report
        .rows
        .iter()
        .filter(|row| !row.outcome.pass)
        .map(|row| format!("{}: {}", row.name, row.outcome.detail))
        .collect();
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
