//! Each export of the default policy, called the way the host calls it, on the fixtures.

use kfp_default::KfpDefault;
use pipewarden_guest::{
    Eligibility, EventKind, Policy, RebuildDecision, RebuildInput, RebuildPolicy, RenderContext,
    Swf, Tombstone, WorkflowEvent,
};
use serde_json::Value;

const TARGET: &str = "2.17.0";

fn read(relative: &str) -> String {
    let path = format!("{}/../../{relative}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn swf(name: &str) -> String {
    let yaml: Value = serde_yaml::from_str(&read(&format!("tests/data/swf/{name}"))).unwrap();
    serde_json::to_string(&yaml).unwrap()
}

fn settings() -> String {
    read("policies/kfp-default/settings/kfp-2.17.0.json")
}

fn render(swf: &str) -> Result<String, String> {
    let context = RenderContext {
        target_version: Some(TARGET.to_owned()),
        settings: settings(),
    };
    KfpDefault::render_swf(swf.to_owned(), context)
}

fn should_rebuild(policy: RebuildPolicy, swf: &str) -> RebuildDecision {
    KfpDefault::should_rebuild(RebuildInput {
        policy,
        swf: swf.to_owned(),
        target_version: Some(TARGET.to_owned()),
        stamps: Swf::from_json(swf).unwrap().stamps(),
        settings: settings(),
    })
}

#[test]
fn validate_settings_accepts_the_shipped_file_and_explains_bad_ones() {
    assert_eq!(KfpDefault::validate_settings(settings()), Ok(()));
    let error =
        KfpDefault::validate_settings(r#"{"V2_DRIVER_IMAGE":"a b"}"#.to_owned()).unwrap_err();
    assert!(
        error.starts_with("invalid settings:") && error.contains("V2_DRIVER_IMAGE"),
        "{error}"
    );
}

#[test]
fn kfp_2_3_is_rebuilt_then_left_alone() {
    let old = swf("kfp-2.3.yaml");
    let decision = should_rebuild(RebuildPolicy::OnVersionChange, &old);
    assert!(
        matches!(decision, RebuildDecision::Rebuild(_)),
        "{decision:?}"
    );
    let rendered = render(&old).unwrap();
    assert!(rendered.contains("kfp-driver:2.17.0") && !rendered.contains("@sha256:"));
    let again = should_rebuild(RebuildPolicy::OnVersionChange, &rendered);
    assert!(matches!(again, RebuildDecision::Skip(_)), "{again:?}");
    let always = should_rebuild(RebuildPolicy::Always, &rendered);
    assert!(matches!(always, RebuildDecision::Rebuild(_)), "{always:?}");
    assert_eq!(
        render(&rendered).unwrap(),
        rendered,
        "no change under always"
    );
    let disabled = should_rebuild(RebuildPolicy::Disable, &old);
    assert!(matches!(disabled, RebuildDecision::Skip(_)), "{disabled:?}");
}

#[test]
fn render_with_bad_settings_is_an_error() {
    let context = RenderContext {
        target_version: Some("2.17.0".to_owned()),
        settings: r#"{"PUBLISH_LOGS": ["true"]}"#.to_owned(),
    };
    let error = KfpDefault::render_swf(swf("kfp-2.3.yaml"), context).unwrap_err();
    assert!(error.contains("invalid settings"), "{error}");
}

#[test]
fn corrupted_swf_is_flagged_and_not_rebuildable() {
    let corrupted = swf("kfp-2.3-corrupted.yaml");
    let decision = should_rebuild(RebuildPolicy::OnVersionChange, &corrupted);
    assert!(
        matches!(decision, RebuildDecision::Rebuild(_)),
        "{decision:?}"
    );
    let error = render(&corrupted).unwrap_err();
    assert!(
        error.starts_with(pipewarden_guest::NOT_REBUILDABLE_PREFIX),
        "{error}"
    );
}

#[test]
fn reference_only_is_skipped_as_not_rebuildable() {
    let reference = swf("kfp-reference-only.yaml");
    let decision = should_rebuild(RebuildPolicy::Always, &reference);
    let prefix = pipewarden_guest::NOT_REBUILDABLE_PREFIX;
    assert!(
        matches!(&decision, RebuildDecision::Skip(why) if why.starts_with(prefix)),
        "{decision:?}"
    );
    assert!(render(&reference).unwrap_err().starts_with(prefix));
}

#[test]
fn legacy_and_parameter_fixtures_render_idempotently() {
    for name in [
        "kfp-legacy-object.yaml",
        "kfp-2.3-parameters.yaml",
        "kfp-2.17.yaml",
    ] {
        let once = render(&swf(name)).unwrap();
        assert_eq!(render(&once).unwrap(), once, "{name}");
    }
}

#[test]
fn exit_eligibility_rejects_a_stale_copy_and_passes_a_new_uid() {
    let event = |uid: &str, rv: &str, phase: &str, kind| WorkflowEvent {
        kind,
        namespace: "ns".into(),
        name: "nightly".into(),
        uid: uid.into(),
        resource_version: rv.into(),
        phase: phase.into(),
        labels: vec![],
        workflow: "{}".into(),
    };
    let completed = Tombstone {
        resource_version: "110".into(),
        phase: "Succeeded".into(),
        completed: true,
        age_seconds: 30,
    };
    let stale = event("U1", "105", "Running", EventKind::Modified);
    assert!(matches!(
        KfpDefault::exit_eligibility(stale, Some(completed.clone())),
        Eligibility::RejectStale(_)
    ));
    let fresh = event("U2", "200", "", EventKind::Added);
    assert_eq!(
        KfpDefault::exit_eligibility(fresh, None),
        Eligibility::Process
    );
    // Deleted after completing: eligible when it has an exit handler (the default `notify`).
    let with_handler = WorkflowEvent {
        workflow: r#"{"spec":{"onExit":"notify"}}"#.into(),
        ..event("U1", "111", "Succeeded", EventKind::Deleted)
    };
    assert_eq!(
        KfpDefault::exit_eligibility(with_handler, Some(completed.clone())),
        Eligibility::Process
    );
    let without = event("U1", "111", "Succeeded", EventKind::Deleted);
    assert!(matches!(
        KfpDefault::exit_eligibility(without.clone(), Some(completed.clone())),
        Eligibility::Skip(_)
    ));
    pipewarden_guest::settings::set_native(r#"{"notify":"all"}"#);
    assert_eq!(
        KfpDefault::exit_eligibility(without, Some(completed)),
        Eligibility::Process
    );
}
