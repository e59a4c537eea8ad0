use super::*;

fn facts(reported: &str, multi_user: Option<bool>) -> LoopFacts {
    LoopFacts {
        reported: Some(reported.to_owned()),
        target: Some(reported.to_owned()),
        mode: multi_user.map(|multi_user| {
            Ok(Mode {
                multi_user,
                source: "MULTIUSER from ConfigMap pipeline-api-server-config".into(),
            })
        }),
        ..LoopFacts::default()
    }
}

#[test]
fn multi_user_2_18_and_later_belong_to_the_kfp_api() {
    for version in [
        "2.18.0",
        "2.18.1",
        "2.18.2",
        "3.0.0",
        "v2.18.1",
        "2.18.1-acme.3",
    ] {
        let serving = serving(&facts(version, Some(true)));
        assert_eq!(serving.owner(), "kfp-api", "{version}: {serving:?}");
        assert!(serving.to_string().contains("adoption step"), "{serving}");
    }
    for (version, multi_user) in [
        ("2.17.1", Some(true)),
        ("2.18.1", Some(false)),
        ("2.18.1", None),
        ("unknown", Some(true)),
    ] {
        let serving = serving(&facts(version, multi_user));
        assert_eq!(serving.owner(), "pipewarden", "{version} {multi_user:?}");
    }
}

#[test]
fn the_writer_annotation_corroborates_whatever_the_version_says() {
    let mut facts = facts("2.17.0-acme.1", Some(true));
    assert_eq!(serving(&facts).owner(), "pipewarden");
    facts.writer_protocol = Some((
        "kubeflow/ml-pipeline-7d9f".into(),
        "api-owned-v1:ab12".into(),
    ));
    let owned = serving(&facts);
    assert!(
        matches!(&owned, Serving::KfpApiOwns { evidence } if evidence.contains("ml-pipeline-7d9f")),
        "{owned:?}"
    );
    // Single-user pods never carry it; if one did, single-user mode still owns nothing.
    facts.mode = Some(Ok(Mode {
        multi_user: false,
        source: "--kfp-multi-user".into(),
    }));
    assert_eq!(serving(&facts).owner(), "pipewarden");
}

#[test]
fn a_distribution_mapped_to_an_older_compiler_keeps_its_reported_release() {
    // `--compile-as 2.18.1-acme=2.17.0`: the API still owns the schedules.
    let facts = LoopFacts {
        target: Some("2.17.0".into()),
        ..facts("2.18.1-acme", Some(true))
    };
    assert_eq!(serving(&facts).owner(), "kfp-api");
}

#[test]
fn ownership_first_then_settings_then_the_target() {
    let mut facts = facts("2.18.1", Some(true));
    facts.settings = SettingsHealth::Unreadable("forbidden".into());
    facts.probe = Probe::NotServed("no 2.18 compiler".into());
    assert_eq!(serving(&facts).owner(), "kfp-api");

    facts.mode = None;
    let held = serving(&facts);
    assert!(
        matches!(&held, Serving::Held { hold: Hold::SettingsUnreadable, why } if why.contains("forbidden")),
        "{held:?}"
    );
    facts.settings = SettingsHealth::Ok;
    let held = serving(&facts);
    assert!(
        matches!(
            &held,
            Serving::Held {
                hold: Hold::TargetNotServed,
                ..
            }
        ),
        "{held:?}"
    );
    facts.probe = Probe::Served {
        proof: "same-compiler".into(),
        note: "KFP 2.17.1 compiles with KFP 2.17.0's compiler".into(),
    };
    assert!(serving(&facts).writes());
    facts.probe = Probe::Unknown;
    assert_eq!(serving(&facts), Serving::Writes { proof: None });
}

#[test]
fn versions_and_booleans_read_as_kfp_reads_them() {
    assert_eq!(release_of("2.18.1"), Some((2, 18, 1)));
    assert_eq!(release_of("v3.0.0-rc.1"), Some((3, 0, 0)));
    for bad in ["2.18", "unknown", "", "2.18.1.4", "two.18.1"] {
        assert_eq!(release_of(bad), None, "{bad}");
    }
    for yes in ["1", "t", "T", "TRUE", "true", "True"] {
        assert_eq!(go_bool(yes), Some(true));
    }
    for no in ["0", "f", "F", "FALSE", "false", "False"] {
        assert_eq!(go_bool(no), Some(false));
    }
    for neither in ["yes", "on", " true", "tRUE", ""] {
        assert_eq!(go_bool(neither), None, "{neither:?}");
    }
}

/// The host's threshold is the release ledger's first API-owned row.
#[test]
fn the_api_owned_threshold_is_the_ledgers() {
    let ledger = kfp_core::kfp_compiler::release::ledger::api_owned_since();
    assert_eq!(release_of(ledger), Some(API_OWNED_SINCE), "{ledger}");
}

#[test]
fn an_unknown_mode_holds_the_loop_only_where_it_would_decide_ownership() {
    let unknown = |version: &str| LoopFacts {
        mode: Some(Err("MULTIUSER is set from Secret s".into())),
        ..facts(version, None)
    };
    let held = serving(&unknown("2.18.1"));
    assert!(
        matches!(&held, Serving::Held { hold: Hold::SettingsUncertain, why } if why.contains("Secret s")),
        "{held:?}"
    );
    assert!(serving(&unknown("2.17.1")).writes());
}

#[test]
fn the_flag_then_healthz_then_the_environment_say_the_mode() {
    let install = InstallFacts {
        env_mode: Some(Ok(Mode {
            multi_user: true,
            source: "MULTIUSER=true".into(),
        })),
        healthz_multi_user: Some(false),
        ..InstallFacts::default()
    };
    let source = |flag| install.mode(flag).unwrap().unwrap().source;
    assert_eq!(source(Some(true)), "--kfp-multi-user");
    assert_eq!(source(None), "multi_user of the KFP API's healthz");
    let env_only = InstallFacts {
        healthz_multi_user: None,
        ..install.clone()
    };
    assert_eq!(
        env_only.mode(None).unwrap().unwrap().source,
        "MULTIUSER=true"
    );
    assert_eq!(InstallFacts::default().mode(None), None);
}

#[test]
fn probe_answers_are_read_and_anything_else_says_nothing() {
    let skip = |text: &str| Ok(RebuildDecision::Skip(text.to_owned()));
    assert_eq!(
        read_probe(&skip(
            "target-served: same-compiler; KFP 2.17.1 runs 2.17.0's compiler"
        )),
        Probe::Served {
            proof: "same-compiler".into(),
            note: "KFP 2.17.1 runs 2.17.0's compiler".into()
        }
    );
    assert_eq!(
        read_probe(&skip("unsupported-target: KFP 3.0.0 is not served")),
        Probe::NotServed("KFP 3.0.0 is not served".into())
    );
    for other in [
        skip("Reference-only SWF."),
        Ok(RebuildDecision::Rebuild("Rebuild policy is always.".into())),
        Err(PolicyError::BadOutput {
            export: crate::engine::Export::ShouldRebuild,
            reason: "x".into(),
        }),
    ] {
        assert_eq!(read_probe(&other), Probe::Unknown);
    }
    assert!(
        probe_input(RebuildPolicy::Always, None, "{}")
            .swf
            .contains("pipewarden.io/target-probe")
    );
}

#[test]
fn on_an_api_owned_install_generic_swfs_are_upstream_owned_and_inline_ones_not_adopted() {
    let owned = Serving::KfpApiOwns {
        evidence: "KFP 2.18.1 in multi-user mode".into(),
    };
    let label = |json: &str| outcome_without_policy(&owned, json).unwrap().label();
    assert_eq!(
        label(r#"{"spec":{"workflow":{"parameters":[]}}}"#),
        "upstream-owned"
    );
    assert_eq!(label(r#"{"spec":{}}"#), "upstream-owned");
    assert_eq!(
        label(r#"{"spec":{"workflow":{"spec":"{\"kind\":\"Workflow\"}"}}}"#),
        "not-adopted"
    );
    assert_eq!(
        label(r#"{"spec":{"workflow":{"spec":"not json at all"}}}"#),
        "not-adopted"
    );
    assert_eq!(label(r#"{"spec":"corrupted"}"#), "upstream-owned");
    let held = Serving::Held {
        hold: Hold::TargetNotServed,
        why: "KFP 3.0.0 is not served".into(),
    };
    assert_eq!(
        outcome_without_policy(&held, "{}").unwrap().label(),
        "unsupported-target"
    );
    assert!(outcome_without_policy(&Serving::Writes { proof: None }, "{}").is_none());
}
