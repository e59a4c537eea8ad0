use serde_json::json;

use super::*;
use crate::fixtures;

fn with(edit: impl FnOnce(&mut serde_json::Value)) -> Result<Settings, String> {
    let mut value: serde_json::Value = serde_json::from_str(&fixtures::settings_text()).unwrap();
    edit(&mut value);
    Settings::parse(&value.to_string())
}

fn error_of(edit: impl FnOnce(&mut serde_json::Value)) -> String {
    with(edit).expect_err("settings should be rejected")
}

#[test]
fn shipped_settings_are_a_default_kfp_2_17_0_install() {
    let settings = fixtures::settings();
    assert_eq!(
        settings.compile,
        kfp_compiler::CompileOptions {
            // The manifests' COMPILED_PIPELINE_SPEC_PATCH: an empty patch.
            spec_patch: Some("{}".to_owned()),
            ..kfp_compiler::CompileOptions::kfp_2_17_0_install()
        }
    );
}

#[test]
fn empty_settings_are_kfp_with_nothing_set() {
    let settings = Settings::parse("{}").unwrap();
    assert_eq!(
        settings.compile,
        kfp_compiler::CompileOptions::upstream_test()
    );
}

#[test]
fn variables_kfp_does_not_read_are_ignored() {
    let settings = with(|s| s["DBCONFIG_USER"] = json!("root")).unwrap();
    assert_eq!(settings.compile, fixtures::settings().compile);
}

#[test]
fn from_value_validates_too() {
    let value = json!({"V2_DRIVER_IMAGE": "has space"});
    let error = Settings::from_value(value).unwrap_err();
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
    assert_eq!(settings.compile.service_account, "kfp-runner");
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
