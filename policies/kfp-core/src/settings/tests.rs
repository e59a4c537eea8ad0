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
fn shipped_settings_cover_both_drivers() {
    let settings = fixtures::settings();
    assert_eq!(settings.driver_flags(DriverKind::Container).len(), 29);
    assert_eq!(settings.driver_flags(DriverKind::Dag).len(), 28);
    assert_eq!(settings.service_account, None);
}

#[test]
fn minimal_settings_parse() {
    let text = r#"{"driver":{"image":"d:1"},"launcher":{"image":"l:1"}}"#;
    let settings = Settings::parse(text).unwrap();
    assert!(settings.driver.flags.is_empty());
}

#[test]
fn from_value_validates_too() {
    let value = json!({"driver": {"image": ""}, "launcher": {"image": "l:1"}});
    assert!(
        Settings::from_value(value)
            .unwrap_err()
            .contains("driver.image")
    );
}

#[test]
fn not_json_is_rejected() {
    assert!(
        Settings::parse("driver: x")
            .unwrap_err()
            .starts_with("invalid settings:")
    );
}

#[test]
fn unknown_fields_are_rejected_by_name() {
    let error = error_of(|s| s["driver"]["imgae"] = json!("x"));
    assert!(error.contains("imgae"), "{error}");
    let error = error_of(|s| s["launcherImage"] = json!("x"));
    assert!(error.contains("launcherImage"), "{error}");
}

#[test]
fn images_are_required_and_checked() {
    assert!(error_of(|s| s["launcher"] = json!({})).contains("image"));
    assert!(error_of(|s| s["driver"]["image"] = json!("")).contains("driver.image"));
    assert!(error_of(|s| s["launcher"]["image"] = json!("a b")).contains("launcher.image"));
}

#[test]
fn service_account_is_checked() {
    assert!(with(|s| s["serviceAccount"] = json!("pipeline-runner")).is_ok());
    for bad in ["", "Runner", "-runner", "runner_1"] {
        let error = error_of(|s| s["serviceAccount"] = json!(bad));
        assert!(error.contains("serviceAccount"), "{bad:?}: {error}");
    }
}

#[test]
fn flag_names_are_written_without_dashes() {
    let error = error_of(|s| s["driver"]["flags"][0]["name"] = json!("--type"));
    assert!(
        error.contains("driver.flags[0]") && error.contains("without dashes"),
        "{error}"
    );
    let error = error_of(|s| s["driver"]["flags"][0]["name"] = json!("a b"));
    assert!(error.contains("flag name"), "{error}");
}

#[test]
fn value_and_default_are_exclusive() {
    let error = error_of(|s| s["driver"]["flags"][2]["default"] = json!("x"));
    assert!(error.contains("either value or default"), "{error}");
}

#[test]
fn drivers_must_not_be_empty_or_unknown() {
    assert!(error_of(|s| s["driver"]["flags"][0]["drivers"] = json!([])).contains("drivers"));
    let error = error_of(|s| s["driver"]["flags"][0]["drivers"] = json!(["launcher"]));
    assert!(error.contains("launcher"), "{error}");
}

#[test]
fn style_must_be_known() {
    let error = error_of(|s| s["driver"]["flags"][0]["style"] = json!("space"));
    assert!(error.contains("space"), "{error}");
}

#[test]
fn duplicate_flags_clash_only_for_the_same_driver() {
    let error = error_of(|s| {
        let flags = s["driver"]["flags"].as_array_mut().unwrap();
        flags.push(json!({"name": "log_level", "value": "2", "drivers": ["dag"]}));
    });
    assert!(error.contains("listed twice"), "{error}");
    let split = with(|s| {
        s["driver"]["flags"] = json!([
            {"name": "type", "value": "CONTAINER", "drivers": ["container"]},
            {"name": "type", "drivers": ["dag"]}
        ]);
    });
    assert!(split.is_ok(), "{split:?}");
}

#[test]
fn input_names_are_checked() {
    let error = error_of(|s| s["driver"]["flags"][9]["input"]["name"] = json!(""));
    assert!(error.contains("input name"), "{error}");
    let error = error_of(|s| {
        s["driver"]["flags"][9]["input"] = json!({"name": "task-name"});
    });
    assert!(error.contains("default"), "{error}");
}

#[test]
fn flag_spec_set_builds_a_plain_flag() {
    let flag = FlagSpec::set("ca_cert_path", "/ca.pem");
    assert_eq!(flag.value.as_deref(), Some("/ca.pem"));
    assert_eq!(flag.style, FlagStyle::Separate);
    assert!(flag.validate().is_ok());
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
        Notify::from_settings(r#"{"driver":{"notify":"all"}}"#),
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
    let other_image = with(|s| s["launcher"]["image"] = json!("l:2")).unwrap();
    assert_ne!(plain.source_digest, other_image.source_digest);
}
