//! The downstream policy adds its launcher flag where the default policy does not, and
//! otherwise behaves like it.

use kfp_downstream_example::{DownstreamSettings, KfpDownstream, render_swf};
use pipewarden_guest::{Policy, RebuildDecision, RebuildInput, RebuildPolicy, RenderContext, Swf};
use serde_json::{Value, json};

const TARGET: Option<&str> = Some("2.17.0");
const CA_FLAG: &str = "--ca_cert_path";

fn read(relative: &str) -> String {
    let path = format!("{}/../../{relative}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn swf(name: &str) -> String {
    let yaml: Value = serde_yaml::from_str(&read(&format!("tests/data/swf/{name}"))).unwrap();
    serde_json::to_string(&yaml).unwrap()
}

fn settings_text() -> String {
    read("policies/kfp-downstream-example/settings/example.json")
}

fn settings() -> DownstreamSettings {
    DownstreamSettings::parse(&settings_text()).unwrap()
}

/// The args of the `kfp-launcher` init container in a rendered SWF.
fn launcher_args(swf: &str) -> Vec<String> {
    let swf: Value = serde_json::from_str(swf).unwrap();
    let workflow: Value =
        serde_json::from_str(swf["spec"]["workflow"]["spec"].as_str().unwrap()).unwrap();
    let templates = workflow["spec"]["templates"].as_array().unwrap();
    let launcher = templates
        .iter()
        .filter_map(|t| t["initContainers"].as_array())
        .flatten()
        .find(|c| c["name"] == "kfp-launcher")
        .unwrap();
    serde_json::from_value(launcher["args"].clone()).unwrap()
}

#[test]
fn adds_the_launcher_flag_the_default_policy_does_not() {
    let old = swf("kfp-2.3.yaml");
    let default_settings =
        kfp_core::Settings::parse(&read("policies/kfp-default/settings/kfp-2.17.0.json")).unwrap();
    let by_default = kfp_core::render_swf(&old, TARGET, &default_settings).unwrap();
    assert!(!launcher_args(&by_default).contains(&CA_FLAG.to_owned()));
    let downstream = render_swf(&old, TARGET, &settings()).unwrap();
    assert_eq!(
        launcher_args(&downstream),
        [
            CA_FLAG,
            "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
            "--copy",
            "/kfp-launcher/launch",
            "--log_level",
            "1",
            "--publish_logs",
            "true"
        ]
    );
}

#[test]
fn an_swf_rendered_by_the_default_policy_gains_the_flag() {
    let default_settings = settings().base;
    let by_default =
        kfp_core::render_swf(&swf("kfp-2.17.yaml"), TARGET, &default_settings).unwrap();
    let downstream = render_swf(&by_default, TARGET, &settings()).unwrap();
    assert!(launcher_args(&downstream).contains(&CA_FLAG.to_owned()));
    assert_ne!(
        Swf::from_json(&downstream).unwrap().stamps().render_hash,
        Swf::from_json(&by_default).unwrap().stamps().render_hash
    );
}

#[test]
fn renders_are_idempotent_and_up_to_date_afterwards() {
    let once = render_swf(&swf("kfp-2.3.yaml"), TARGET, &settings()).unwrap();
    assert_eq!(render_swf(&once, TARGET, &settings()).unwrap(), once);
    let decision = KfpDownstream::should_rebuild(RebuildInput {
        policy: RebuildPolicy::OnVersionChange,
        swf: once.clone(),
        target_version: TARGET.map(str::to_owned),
        stamps: Swf::from_json(&once).unwrap().stamps(),
        settings: settings_text(),
    });
    assert!(matches!(decision, RebuildDecision::Skip(_)), "{decision:?}");
}

#[test]
fn exported_render_reads_settings_from_the_context() {
    let context = RenderContext {
        target_version: TARGET.map(str::to_owned),
        settings: settings_text(),
    };
    let out = KfpDownstream::render_swf(swf("kfp-2.3.yaml"), context).unwrap();
    assert!(launcher_args(&out).contains(&CA_FLAG.to_owned()));
    let bad = RenderContext {
        target_version: None,
        settings: r#"{"PUBLISH_LOGS": ["true"]}"#.to_owned(),
    };
    assert!(KfpDownstream::render_swf(swf("kfp-2.3.yaml"), bad).is_err());
}

/// Each render compiles the pipeline afresh, so a `default` fills in the flag every time: a
/// value edited into the live workflow is not kept (the compile is the source of truth).
#[test]
fn default_value_fills_the_flag_into_every_compile() {
    let mut settings = settings();
    settings.launcher_flags[0].value = None;
    settings.launcher_flags[0].default = Some("/default.pem".to_owned());
    let once = render_swf(&swf("kfp-2.3.yaml"), TARGET, &settings).unwrap();
    assert!(launcher_args(&once).contains(&"/default.pem".to_owned()));
    let mut custom: Value = serde_json::from_str(&once).unwrap();
    let text = custom["spec"]["workflow"]["spec"]
        .as_str()
        .unwrap()
        .replace("/default.pem", "/custom.pem");
    custom["spec"]["workflow"]["spec"] = json!(text);
    let again = render_swf(&custom.to_string(), TARGET, &settings).unwrap();
    assert!(launcher_args(&again).contains(&"/default.pem".to_owned()));
    assert_eq!(again, once);
}

#[test]
fn settings_are_validated() {
    assert_eq!(KfpDownstream::validate_settings(settings_text()), Ok(()));
    let mut value: Value = serde_json::from_str(&settings_text()).unwrap();
    value["launcherFlags"][0]["drivers"] = json!(["dag"]);
    let error = KfpDownstream::validate_settings(value.to_string()).unwrap_err();
    assert!(
        error.contains("launcherFlags") && error.contains("drivers"),
        "{error}"
    );
    value["launcherFlags"] = json!([{"name": "--ca_cert_path", "value": "x"}]);
    let error = KfpDownstream::validate_settings(value.to_string()).unwrap_err();
    assert!(
        error.contains("launcherFlags[0]") && error.contains("without dashes"),
        "{error}"
    );
    value["launcherFlags"] = json!([]);
    value["V2_LAUNCHER_IMAGE"] = json!("not an image");
    let error = KfpDownstream::validate_settings(value.to_string()).unwrap_err();
    assert!(error.contains("V2_LAUNCHER_IMAGE"), "{error}");
    assert!(KfpDownstream::validate_settings("[".to_owned()).is_err());
}

#[test]
fn without_launcher_flags_it_renders_like_the_default() {
    let mut value: Value = serde_json::from_str(&settings_text()).unwrap();
    value.as_object_mut().unwrap().remove("launcherFlags");
    let plain = DownstreamSettings::parse(&value.to_string()).unwrap();
    let old = swf("kfp-2.3.yaml");
    assert_eq!(
        render_swf(&old, TARGET, &plain).unwrap(),
        kfp_core::render_swf(&old, TARGET, &plain.base).unwrap()
    );
}
