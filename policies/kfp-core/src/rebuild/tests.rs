use pipewarden_guest::{Stamps, Swf};
use serde_json::{Value, json};

use super::*;
use crate::fixtures::{settings, settings_text, swf_json};
use crate::render_swf;

fn input(policy: RebuildPolicy, swf: &str, target: Option<&str>) -> RebuildInput {
    let stamps = Swf::from_json(swf).map(|s| s.stamps()).unwrap_or(Stamps {
        version: None,
        render_hash: None,
    });
    RebuildInput {
        policy,
        swf: swf.to_owned(),
        target_version: target.map(str::to_owned),
        stamps,
        settings: settings_text(),
    }
}

fn decide(policy: RebuildPolicy, swf: &str, target: Option<&str>) -> RebuildDecision {
    should_rebuild(&input(policy, swf, target))
}

fn rendered() -> String {
    render_swf(&swf_json("kfp-2.3.yaml"), Some("2.17.0"), &settings()).unwrap()
}

fn edited(swf: &str, edit: impl FnOnce(&mut Value)) -> String {
    let mut value: Value = serde_json::from_str(swf).unwrap();
    edit(&mut value);
    value.to_string()
}

fn rebuilds(decision: &RebuildDecision, why: &str) -> bool {
    matches!(decision, RebuildDecision::Rebuild(reason) if reason.contains(why))
}

fn skips(decision: &RebuildDecision, why: &str) -> bool {
    matches!(decision, RebuildDecision::Skip(reason) if reason.contains(why))
}

const ALL: [RebuildPolicy; 3] = [
    RebuildPolicy::Disable,
    RebuildPolicy::Always,
    RebuildPolicy::OnVersionChange,
];

#[test]
fn reference_only_is_skipped_under_every_policy() {
    let swf = swf_json("kfp-reference-only.yaml");
    for policy in ALL {
        assert!(skips(
            &decide(policy, &swf, Some("2.17.0")),
            "Reference-only"
        ));
    }
}

#[test]
fn always_rebuilds_even_when_up_to_date() {
    let decision = decide(RebuildPolicy::Always, &rendered(), Some("2.17.0"));
    assert!(rebuilds(&decision, "always"), "{decision:?}");
}

#[test]
fn disable_skips_and_says_what_it_would_do() {
    let old = decide(
        RebuildPolicy::Disable,
        &swf_json("kfp-2.3.yaml"),
        Some("2.17.0"),
    );
    assert!(skips(&old, "would rebuild: No version stamp"), "{old:?}");
    let current = decide(RebuildPolicy::Disable, &rendered(), Some("2.17.0"));
    assert!(skips(&current, "disable; Up to date"), "{current:?}");
}

#[test]
fn missing_version_stamp_rebuilds() {
    let decision = decide(
        RebuildPolicy::OnVersionChange,
        &swf_json("kfp-2.3.yaml"),
        Some("2.17.0"),
    );
    assert!(
        rebuilds(&decision, "No version stamp; target is 2.17.0"),
        "{decision:?}"
    );
}

#[test]
fn different_version_stamp_rebuilds() {
    let decision = decide(RebuildPolicy::OnVersionChange, &rendered(), Some("2.16.1"));
    assert!(
        rebuilds(&decision, "Stamped for 2.17.0; target is 2.16.1"),
        "{decision:?}"
    );
}

#[test]
fn missing_render_hash_rebuilds() {
    let swf = edited(&rendered(), |swf| {
        swf["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove(pipewarden_guest::RENDER_HASH_ANNOTATION);
    });
    let decision = decide(RebuildPolicy::OnVersionChange, &swf, Some("2.17.0"));
    assert!(rebuilds(&decision, "No render-hash stamp"), "{decision:?}");
}

#[test]
fn out_of_band_edit_rebuilds() {
    let swf = edited(&rendered(), |swf| {
        swf["spec"]["workflow"]["spec"] =
            json!({"dynamicKey1": "dynamicValue1", "dynamicKey2": "dynamicValue2"});
    });
    let decision = decide(RebuildPolicy::OnVersionChange, &swf, Some("2.17.0"));
    assert!(rebuilds(&decision, "out of band"), "{decision:?}");
}

#[test]
fn up_to_date_render_is_skipped() {
    let decision = decide(RebuildPolicy::OnVersionChange, &rendered(), Some("2.17.0"));
    assert!(
        skips(&decision, "Up to date: rendered for 2.17.0"),
        "{decision:?}"
    );
}

#[test]
fn reordered_parameters_are_not_drift() {
    let swf = render_swf(
        &swf_json("kfp-2.3-parameters.yaml"),
        Some("2.17.0"),
        &settings(),
    )
    .unwrap();
    let swf = edited(&swf, |swf| {
        swf["spec"]["workflow"]["parameters"]
            .as_array_mut()
            .unwrap()
            .reverse();
    });
    let decision = decide(RebuildPolicy::OnVersionChange, &swf, Some("2.17.0"));
    assert!(skips(&decision, "Up to date"), "{decision:?}");
}

#[test]
fn an_unknown_or_unsupported_target_is_never_rebuilt_under_any_policy() {
    let drifted = edited(&rendered(), |swf| swf["spec"]["enabled"] = json!(false));
    for target in [
        None,
        Some(""),
        Some("unknown"),
        Some("2.18.0"),
        Some("2.13.1"),
    ] {
        for policy in [
            RebuildPolicy::Always,
            RebuildPolicy::OnVersionChange,
            RebuildPolicy::Disable,
        ] {
            for swf in [swf_json("kfp-2.3.yaml"), drifted.clone()] {
                let decision = decide(policy, &swf, target);
                assert!(
                    skips(&decision, pipewarden_guest::UNSUPPORTED_TARGET_PREFIX),
                    "{target:?} {policy:?}: {decision:?}"
                );
            }
        }
    }
}

#[test]
fn unreadable_swf_defers_to_render_unless_disabled() {
    let decision = decide(RebuildPolicy::OnVersionChange, "{", Some("2.17.0"));
    assert!(rebuilds(&decision, "not valid JSON"), "{decision:?}");
    let decision = decide(RebuildPolicy::Disable, "[]", Some("2.17.0"));
    assert!(skips(&decision, "not a JSON object"), "{decision:?}");
}

#[test]
fn changed_settings_rebuild_under_on_version_change() {
    let mut changed = input(RebuildPolicy::OnVersionChange, &rendered(), Some("2.17.0"));
    changed.settings = changed
        .settings
        .replace("kfp-launcher:2.17.0", "kfp-launcher:2.17.0-patched");
    let decision = should_rebuild(&changed);
    assert!(rebuilds(&decision, "settings changed"), "{decision:?}");

    let reformatted = input(RebuildPolicy::OnVersionChange, &rendered(), Some("2.17.0"));
    let pretty: Value = serde_json::from_str(&reformatted.settings).unwrap();
    let same = RebuildInput {
        settings: serde_json::to_string_pretty(&pretty).unwrap(),
        ..reformatted
    };
    assert!(
        skips(&should_rebuild(&same), "Up to date"),
        "reformatting is not a change"
    );
}

#[test]
fn a_missing_settings_stamp_rebuilds() {
    let unstamped = edited(&rendered(), |swf| {
        swf["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove("pipewarden.io/settings-hash");
    });
    let decision = decide(RebuildPolicy::OnVersionChange, &unstamped, Some("2.17.0"));
    assert!(rebuilds(&decision, "No settings stamp"), "{decision:?}");
}

/// The host's target probe, as `controller::swf::probe` sends it.
const PROBE: &str = r#"{"apiVersion":"kubeflow.org/v1beta1","kind":"ScheduledWorkflow","metadata":{"name":"pipewarden-target-probe","annotations":{"pipewarden.io/target-probe":"true"}},"spec":{}}"#;

fn probe(target: Option<&str>, settings: &str) -> RebuildDecision {
    should_rebuild(&RebuildInput {
        settings: settings.to_owned(),
        ..input(RebuildPolicy::Always, PROBE, target)
    })
}

#[test]
fn the_probe_says_how_a_served_target_is_proven() {
    let own = probe(Some("2.17.0"), "{}");
    assert!(
        skips(&own, "target-served: own-compiler-output; "),
        "{own:?}"
    );
    let inherited = probe(Some("2.17.1"), "{}");
    assert!(
        skips(&inherited, "target-served: same-compiler; ")
            && skips(&inherited, "KFP 2.17.0's compiler")
            && skips(&inherited, "#14178"),
        "{inherited:?}"
    );
}

#[test]
fn the_probe_says_why_a_target_is_not_served() {
    for (target, why) in [
        (Some("2.18.1"), "no output of KFP 2.18's own compiler"),
        (Some("2.17.2"), "#14268"),
        (Some("3.0.0"), "not a release this policy compiles for"),
        (None, "target KFP version is unknown"),
    ] {
        let answer = probe(target, "{}");
        assert!(
            skips(&answer, "unsupported-target: ") && skips(&answer, why),
            "{answer:?}"
        );
    }
    // The install the issue reproduced: 2.17.1's images under a 2.17.0 target.
    let settings = r#"{"V2_DRIVER_IMAGE":"ghcr.io/kubeflow/kfp-driver:2.17.1"}"#;
    let answer = probe(Some("2.17.0"), settings);
    assert!(
        skips(
            &answer,
            "unsupported-target: cannot compile for KFP 2.17.0 with these settings"
        ) && skips(&answer, "tagged for KFP 2.17.1"),
        "{answer:?}"
    );
    assert!(skips(&probe(Some("2.17.1"), settings), "target-served: "));
}
