//! The modes that return; the others are the host's tests to run, inside a sandbox.

use pipewarden_guest::{EventKind, RebuildPolicy, Stamps};

use super::*;

fn context(settings: &str) -> RenderContext {
    RenderContext {
        target_version: None,
        settings: settings.to_owned(),
    }
}

fn annotated_swf(mode: &str, bytes: &str) -> String {
    format!(r#"{{"metadata":{{"annotations":{{"{MODE_KEY}":"{mode}","{BYTES_KEY}":"{bytes}"}}}}}}"#)
}

fn rebuild_input(swf: String) -> RebuildInput {
    RebuildInput {
        policy: RebuildPolicy::Always,
        swf,
        target_version: None,
        stamps: Stamps {
            version: None,
            render_hash: None,
        },
        settings: "{}".to_owned(),
    }
}

fn event(workflow: String, labels: Vec<(String, String)>) -> WorkflowEvent {
    WorkflowEvent {
        kind: EventKind::Modified,
        namespace: "ns".into(),
        name: "wf".into(),
        uid: "u".into(),
        resource_version: "1".into(),
        phase: "Running".into(),
        labels,
        workflow,
    }
}

#[test]
fn ok_mode_behaves() {
    assert_eq!(
        HostilePolicy::validate_settings(r#"{"mode":"spin"}"#.into()),
        Ok(())
    );
    assert_eq!(
        HostilePolicy::render_swf("{}".into(), context("{}")),
        Ok("{}".into())
    );
    let decision = HostilePolicy::should_rebuild(rebuild_input("{}".into()));
    assert!(matches!(decision, RebuildDecision::Rebuild(_)));
    let answer = HostilePolicy::exit_eligibility(event("{}".into(), vec![]), None);
    assert_eq!(answer, Eligibility::Process);
}

#[test]
fn bad_settings_are_rejected() {
    assert!(HostilePolicy::validate_settings(r#"{"mode":"nonsense"}"#.into()).is_err());
    assert!(HostilePolicy::render_swf("{}".into(), context("[")).is_err());
}

#[test]
fn error_and_bad_json_modes() {
    assert!(HostilePolicy::validate_settings(r#"{"validate":"error"}"#.into()).is_err());
    assert!(HostilePolicy::render_swf("{}".into(), context(r#"{"mode":"error"}"#)).is_err());
    let out = HostilePolicy::render_swf("{}".into(), context(r#"{"mode":"bad-json"}"#)).unwrap();
    assert!(serde_json::from_str::<serde_json::Value>(&out).is_err());
}

#[test]
fn huge_output_in_every_export() {
    let settings = r#"{"mode":"huge-output","validate":"huge-output","bytes":4096}"#;
    assert_eq!(
        HostilePolicy::validate_settings(settings.into())
            .unwrap_err()
            .len(),
        4096
    );
    let rendered = HostilePolicy::render_swf("{}".into(), context(settings)).unwrap();
    assert_eq!(rendered.len(), 4096);
    assert!(serde_json::from_str::<String>(&rendered).is_ok());
    let input = rebuild_input(annotated_swf("huge-output", "5000"));
    let RebuildDecision::Rebuild(reason) = HostilePolicy::should_rebuild(input) else {
        panic!("expected a rebuild");
    };
    assert_eq!(reason.len(), 5000);
    let labels = vec![
        (MODE_KEY.into(), "huge-output".into()),
        (BYTES_KEY.into(), "6000".into()),
    ];
    let Eligibility::Skip(reason) =
        HostilePolicy::exit_eligibility(event("{}".into(), labels), None)
    else {
        panic!("expected a skip");
    };
    assert_eq!(reason.len(), 6000);
}

#[test]
fn panic_message_is_recognisable() {
    let input = rebuild_input(annotated_swf("panic", "0"));
    let panic = std::panic::catch_unwind(|| HostilePolicy::should_rebuild(input)).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert_eq!(message, &format!("{PANIC_MESSAGE} in should-rebuild"));
}

#[test]
fn floods_then_behaves() {
    let out =
        HostilePolicy::render_swf("{}".into(), context(r#"{"mode":"log-flood","bytes":2048}"#));
    assert_eq!(out, Ok("{}".into()));
}

#[test]
fn workflow_annotation_wins_over_labels() {
    let workflow = format!(r#"{{"metadata":{{"annotations":{{"{MODE_KEY}":"ok"}}}}}}"#);
    let labels = vec![(MODE_KEY.into(), "huge-output".into())];
    assert_eq!(
        HostilePolicy::exit_eligibility(event(workflow, labels), None),
        Eligibility::Process
    );
}

#[test]
fn unknown_annotation_mode_is_ok() {
    assert_eq!(behaviour_from(Some("dance"), Some("x")).mode, Mode::Ok);
    assert_eq!(behaviour_from(Some("spin"), None).bytes, 100_000_000);
}
