use serde_json::json;

use super::*;
use crate::fixtures;

fn with(edit: impl FnOnce(&mut serde_json::Value)) -> Result<Settings, String> {
    let mut value: serde_json::Value = serde_json::from_str(&fixtures::settings_text()).unwrap();
    edit(&mut value);
    let settings = Settings::parse(&value.to_string())?;
    settings.validate()?;
    Ok(settings)
}

fn error_of(edit: impl FnOnce(&mut serde_json::Value)) -> String {
    with(edit).expect_err("settings should be rejected")
}

#[test]
fn shipped_settings_are_a_default_kfp_2_17_0_install() {
    assert_eq!(
        fixtures::compile_options(&fixtures::settings()),
        kfp_compiler::CompileOptions {
            // The manifests' COMPILED_PIPELINE_SPEC_PATCH: an empty patch.
            spec_patch: Some("{}".to_owned()),
            ..kfp_compiler::CompileOptions::kfp_2_17_0_install()
        }
    );
}

#[test]
fn empty_settings_are_the_targets_default_install() {
    let settings = Settings::parse("{}").unwrap();
    for target in crate::target::targets() {
        let options = settings.compile_options(&target).unwrap();
        let install = kfp_compiler::CompileOptions::from_settings_for(
            target.release,
            &target.install_settings(),
        )
        .unwrap();
        assert_eq!(options, install, "{}", target.version);
        assert!(
            options
                .driver_image
                .ends_with(&format!(":{}", target.version)),
            "{}",
            options.driver_image
        );
    }
}

#[test]
fn a_variable_set_to_null_is_unset_and_all_unset_is_kfps_test_environment() {
    assert_eq!(
        fixtures::compile_options(&fixtures::upstream_test_settings()),
        kfp_compiler::CompileOptions::upstream_test()
    );
    let settings = with(|s| s["PUBLISH_LOGS"] = json!(null)).unwrap();
    assert_eq!(fixtures::compile_options(&settings).publish_logs, None);
}

#[test]
fn variables_kfp_does_not_read_are_ignored() {
    let settings = with(|s| s["DBCONFIG_USER"] = json!("root")).unwrap();
    assert_eq!(
        fixtures::compile_options(&settings),
        fixtures::compile_options(&fixtures::settings())
    );
}

#[test]
fn a_variable_the_target_release_does_not_read_is_refused_naming_both() {
    // Settings for 2.17.0 name DEFAULT_SECURITY_CONTEXT_HOST_USERS, which 2.16.1 does not read.
    let settings = fixtures::settings();
    let release_2_16_1 = crate::Target::of(Some("2.16.1")).unwrap();
    let error = settings
        .compile_options(&release_2_16_1)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("DEFAULT_SECURITY_CONTEXT_HOST_USERS") && error.contains("2.16.1"),
        "{error}"
    );
    // Valid all the same: 2.17.0 compiles with them.
    settings.validate().unwrap();
    // Keys of two releases that never coexisted: valid (refusing them would stop the
    // controller), and no target compiles with them, which each render reports.
    let mixed = with(|s| s["EXECUTOR_CABUNDLE_CONFIGMAP_NAME"] = json!("ca")).unwrap();
    for target in crate::target::targets() {
        let problem = mixed.compile_options(&target).unwrap_err();
        assert!(
            matches!(problem, SettingsProblem::NotForTarget(_)),
            "{}: {problem}",
            target.version
        );
    }
}

#[test]
fn an_image_tagged_for_another_release_is_refused_for_the_target() {
    let settings = Settings::parse(
        r#"{"V2_DRIVER_IMAGE":"registry.corp/kfp-driver:2.17.0",
            "V2_LAUNCHER_IMAGE":"registry.corp/kfp-launcher@sha256:0123"}"#,
    )
    .unwrap();
    let error = settings
        .compile_options(&crate::Target::of(Some("2.16.1")).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("V2_DRIVER_IMAGE") && error.contains("2.17.0"),
        "{error}"
    );
    // Its own release, a digest and a distribution's tag are fine.
    fixtures::compile_options(&settings);
    let own_tags =
        Settings::parse(r#"{"V2_DRIVER_IMAGE":"registry.corp/kfp-driver:acme-7"}"#).unwrap();
    own_tags
        .compile_options(&crate::Target::of(Some("2.16.1")).unwrap())
        .unwrap();
}

#[test]
fn the_api_server_environment_replaces_the_default_install_and_unread_variables_are_ignored() {
    let text = json!({
        API_SERVER_ENV_KEY: {
            "V2_DRIVER_IMAGE": "ghcr.io/kubeflow/kfp-driver:2.16.1",
            "V2_LAUNCHER_IMAGE": "ghcr.io/kubeflow/kfp-launcher:2.16.1",
            "POD_NAMESPACE": "kubeflow",
            // Set in the Deployment, read only from 2.17.0 on: KFP 2.16.1 ignores it too.
            "DEFAULT_SECURITY_CONTEXT_HOST_USERS": "false",
            "DBCONFIG_HOST": "mysql",
        },
        "HTTP_PROXY": "http://proxy.corp:3128",
    });
    let settings = Settings::parse(&text.to_string()).unwrap();
    settings.validate().unwrap();
    let options = settings
        .compile_options(&crate::Target::of(Some("2.16.1")).unwrap())
        .unwrap();
    assert_eq!(options.driver_image, "ghcr.io/kubeflow/kfp-driver:2.16.1");
    // No PIPELINE_LOG_LEVEL in this Deployment: none, not the default install's 1.
    assert_eq!(options.log_level, None);
    assert_eq!(options.proxy.http_proxy, "http://proxy.corp:3128");
    assert_eq!(options.default_host_users, None);
    let error = Settings::parse(&json!({API_SERVER_ENV_KEY: "x"}).to_string()).unwrap_err();
    assert!(error.contains(API_SERVER_ENV_KEY), "{error}");
}

/// What the host cannot know (a Secret's values) never becomes a compile: a variable the
/// release reads that may come from a Secret makes the target unservable with those settings,
/// unless the settings themselves say what it is.
#[test]
fn a_variable_the_host_could_not_read_is_never_guessed() {
    let env = json!({"V2_DRIVER_IMAGE": "ghcr.io/kubeflow/kfp-driver:2.17.0", "POD_NAMESPACE": "kubeflow"});
    let target = crate::Target::of(Some("2.17.0")).unwrap();
    let compile = |unknown: serde_json::Value, extra: serde_json::Value| {
        let mut text = json!({API_SERVER_ENV_KEY: env, API_SERVER_ENV_UNKNOWN_KEY: unknown});
        text.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let settings = Settings::parse(&text.to_string()).unwrap();
        settings.validate().unwrap();
        settings.compile_options(&target).map_err(|e| e.to_string())
    };
    // The standard install: database credentials from Secrets, nothing a compile reads.
    compile(
        json!({"DBCONFIG_PASSWORD": "set from Secret mysql-secret key password"}),
        json!({}),
    )
    .unwrap();
    let error = compile(
        json!({"PUBLISH_LOGS": "set from Secret s key k"}),
        json!({}),
    )
    .unwrap_err();
    assert!(
        error.contains("PUBLISH_LOGS cannot be known: set from Secret s"),
        "{error}"
    );
    // An envFrom Secret without a prefix: every variable the environment lacks may come from it.
    let error = compile(json!({"*": "envFrom Secret extra may set it"}), json!({})).unwrap_err();
    assert!(
        error.contains("cannot be known: envFrom Secret extra"),
        "{error}"
    );
    // ... and the settings may say what it is.
    let error = compile(
        json!({"KFP_*": "envFrom Secret extra may set it"}),
        json!({}),
    );
    assert!(
        error.is_ok(),
        "no variable a compile reads starts with KFP_: {error:?}"
    );
    let named = compile(
        json!({"PUBLISH_LOGS": "set from Secret s key k"}),
        json!({"PUBLISH_LOGS": "false"}),
    )
    .unwrap();
    assert_eq!(named.publish_logs.as_deref(), Some("false"));
}

#[test]
fn validation_names_the_bad_value() {
    let value = json!({"V2_DRIVER_IMAGE": "has space"});
    let error = Settings::from_value(value).unwrap().validate().unwrap_err();
    assert!(error.contains("V2_DRIVER_IMAGE"), "{error}");
}

#[test]
fn not_json_or_not_an_object_is_rejected() {
    assert!(
        Settings::parse("driver: x")
            .unwrap_err()
            .starts_with("invalid settings:")
    );
    let error = Settings::parse("[]").unwrap_err();
    assert!(error.contains("JSON object"), "{error}");
}

#[test]
fn the_pre_compiler_format_is_refused_with_a_pointer() {
    let text = r#"{"driver":{"image":"d:1"},"launcher":{"image":"l:1"}}"#;
    let error = Settings::parse(text).unwrap_err();
    assert!(error.contains("\"driver\""), "{error}");
    assert!(error.contains("V2_DRIVER_IMAGE"), "{error}");
}

#[test]
fn values_kfp_would_refuse_are_named() {
    let error = error_of(|s| s["METADATA_TLS_ENABLED"] = json!("yes"));
    assert!(error.contains("METADATA_TLS_ENABLED"), "{error}");
    let error = error_of(|s| s["V2_LAUNCHER_IMAGE"] = json!(["l:1"]));
    assert!(error.contains("V2_LAUNCHER_IMAGE"), "{error}");
}

#[test]
fn service_account_is_checked() {
    let error = error_of(|s| s["DEFAULTPIPELINERUNNERSERVICEACCOUNT"] = json!("Not_Valid"));
    assert!(error.contains("Not_Valid"), "{error}");
    let settings =
        with(|s| s["DEFAULTPIPELINERUNNERSERVICEACCOUNT"] = json!("kfp-runner")).unwrap();
    assert_eq!(
        fixtures::compile_options(&settings).service_account,
        "kfp-runner"
    );
}

#[test]
fn notify_defaults_to_exit_handler_and_takes_all() {
    assert_eq!(fixtures::settings().notify, Notify::ExitHandler);
    assert_eq!(
        with(|s| s["notify"] = json!("all")).unwrap().notify,
        Notify::All
    );
    assert_eq!(
        with(|s| s["notify"] = json!("exit-handler"))
            .unwrap()
            .notify,
        Notify::ExitHandler
    );
    let error = error_of(|s| s["notify"] = json!("everyone"));
    assert!(error.contains("everyone"), "{error}");
}

#[test]
fn notify_is_read_alone_on_the_exit_path() {
    assert_eq!(
        Notify::from_settings(&fixtures::settings_text()),
        Notify::ExitHandler
    );
    assert_eq!(Notify::from_settings(r#"{"notify":"all"}"#), Notify::All);
    assert_eq!(Notify::from_settings("{}"), Notify::ExitHandler);
    // A key named notify deeper down is not the setting.
    assert_eq!(
        Notify::from_settings(r#"{"other":{"notify":"all"}}"#),
        Notify::ExitHandler
    );
}

#[test]
fn notify_does_not_change_the_render_digest() {
    let plain = fixtures::settings();
    let all = with(|s| s["notify"] = json!("all")).unwrap();
    assert_eq!(plain.source_digest, all.source_digest);
    // Settings without notify digest as before the setting existed.
    assert_eq!(
        plain.source_digest,
        pipewarden_guest::canonical::settings_digest(&fixtures::settings_text())
    );
    let other_image = with(|s| s["V2_LAUNCHER_IMAGE"] = json!("l:2")).unwrap();
    assert_ne!(plain.source_digest, other_image.source_digest);
}

/// A key nothing reads is ignored; one or two edits from a known key, it is named with the key
/// it likely meant (`validate-settings` warns), and still accepted.
#[test]
fn a_key_one_or_two_edits_from_a_known_one_is_named_with_it() {
    let settings = with(|v| {
        v["V2_DRIVER_IMAG"] = json!("ghcr.io/kubeflow/kfp-driver:2.17.0");
        v["v2_launcher_image"] = json!("ghcr.io/kubeflow/kfp-launcher:2.17.0");
        v["notfy"] = json!("all");
        v["pipewarden.io/budgt"] = json!({"poolSize": 4});
        v["HOME"] = json!("/root");
    })
    .expect("accepted: unread keys are ignored");
    let mut misspelt = settings.misspelt_keys();
    misspelt.sort();
    assert_eq!(
        misspelt,
        [
            ("V2_DRIVER_IMAG".to_owned(), "V2_DRIVER_IMAGE"),
            ("notfy".to_owned(), "notify"),
            ("pipewarden.io/budgt".to_owned(), HOST_BUDGET_KEY),
            ("v2_launcher_image".to_owned(), "V2_LAUNCHER_IMAGE"),
        ]
    );
    let shipped = with(|_| {}).unwrap();
    assert_eq!(shipped.misspelt_keys(), [], "the shipped settings");
}
