//! The `kfp-compile` binary: output, settings, exit codes, and a reader that goes away.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use kfp_compiler::{CompileOptions, Release};
use serde_json::{Value, json};

use crate::support;
use crate::support::*;

fn kfp_compile(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kfp-compile"))
        .args(args)
        .output()
        .expect("kfp-compile runs")
}

/// A scratch file under the target directory, unique per test.
fn scratch(name: &str, contents: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kfp-compile-cli");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("scratch file");
    path
}

fn stderr_line(output: &Output) -> String {
    let text = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(text.lines().count(), 1, "one line expected: {text}");
    text
}

#[test]
fn compiles_an_ir_file_like_the_library() {
    let dir = upstream_dir("kfp-2.17.0");
    let path = ir_path(&dir, "pipeline_with_workspace");
    let output = kfp_compile(&[path.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).expect("stdout is JSON");
    let expected = load_ir(&path)
        .compile(&CompileOptions::upstream_test())
        .unwrap();
    assert_eq!(printed, expected);
}

#[test]
fn settings_file_uses_api_server_variable_names() {
    let dir = upstream_dir("kfp-2.17.0");
    let settings = scratch(
        "install.json",
        r#"{"V2_DRIVER_IMAGE": "ghcr.io/kubeflow/kfp-driver:2.17.0",
            "V2_LAUNCHER_IMAGE": "ghcr.io/kubeflow/kfp-launcher:2.17.0",
            "PIPELINE_LOG_LEVEL": "1", "PUBLISH_LOGS": "true"}"#,
    );
    let ir = ir_path(&dir, "add_numbers");
    let output = kfp_compile(&[
        "--settings",
        settings.to_str().unwrap(),
        ir.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let expected = load_ir(&ir)
        .compile(&CompileOptions::kfp_2_17_0_install())
        .unwrap();
    assert_eq!(printed, expected);
    let driver = printed["spec"]["templates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "system-dag-driver")
        .unwrap();
    assert_eq!(
        driver["container"]["image"],
        "ghcr.io/kubeflow/kfp-driver:2.17.0"
    );
    let args = driver["container"]["args"].as_array().unwrap();
    assert!(
        args.windows(2)
            .any(|w| w == [json!("--publish_logs"), json!("true")])
    );
}

#[test]
fn accepts_a_pipeline_job_wrapping_the_spec() {
    let job = scratch(
        "job.json",
        r#"{"displayName": "nightly", "runtimeConfig": {"parameterValues": {"msg": "hi"}},
            "pipelineSpec": {
              "pipelineInfo": {"name": "echo"},
              "root": {"dag": {"tasks": {"echo": {"componentRef": {"name": "comp-echo"}, "taskInfo": {"name": "echo"}}}},
                       "inputDefinitions": {"parameters": {"msg": {"parameterType": "STRING"}}}},
              "components": {"comp-echo": {"executorLabel": "exec-echo"}},
              "deploymentSpec": {"executors": {"exec-echo": {"container": {"image": "alpine"}}}}}}"#,
    );
    let output = kfp_compile(&[job.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains(r#""value": "{\"parameterValues\":{\"msg\":\"hi\"}}""#),
        "{text}"
    );
    assert!(text.contains(r#""nightly""#), "{text}");
}

#[test]
fn json_with_tab_indentation_is_read_as_json() {
    let spec = scratch(
        "tabs.json",
        "{\n\t\"pipelineInfo\": {\"name\": \"t\"},\n\t\"root\": {\"dag\": {\"tasks\": {\"a\": \
         {\"componentRef\": {\"name\": \"comp-a\"}}}}},\n\t\"components\": {\"comp-a\": \
         {\"executorLabel\": \"exec-a\"}},\n\t\"deploymentSpec\": {\"executors\": {\"exec-a\": \
         {\"container\": {\"image\": \"alpine\"}}}}\n}\n",
    );
    let output = kfp_compile(&[spec.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn bad_input_is_one_line_naming_the_problem_and_exit_code_2() {
    let cases = [
        ("missing.yaml", None, "cannot read"),
        ("not-yaml.yaml", Some("a: [\n"), "not YAML or JSON"),
        (
            "not-a-spec.json",
            Some(r#"{"kind": "Workflow"}"#),
            "neither a pipeline spec",
        ),
        (
            "no-root.json",
            Some(r#"{"pipelineInfo": {"name": "x"}}"#),
            "root component is empty",
        ),
        (
            "no-name.json",
            Some(r#"{"root": {"dag": {}}}"#),
            "pipelineInfo.name is empty",
        ),
        (
            "unknown-ref.json",
            Some(
                r#"{"pipelineInfo": {"name": "x"}, "root": {"dag": {"tasks": {"a": {"componentRef": {"name": "comp-nope"}}}}}}"#,
            ),
            "cannot find component ref name=\"comp-nope\"",
        ),
        (
            "unknown-field.yaml",
            Some("pipelineInfo:\n  name: x\nroot:\n  dag: {}\n  executor: nope\n"),
            "unknown field \"executor\"",
        ),
    ];
    for (name, contents, expected) in cases {
        let path = match contents {
            Some(text) => scratch(name, text),
            None => Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join("does-not-exist")
                .join(name),
        };
        let output = kfp_compile(&[path.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(2), "{name}");
        let line = stderr_line(&output);
        assert!(line.contains(expected), "{name}: {line}");
        assert!(line.contains(name), "{name}: the file is named: {line}");
        assert!(output.stdout.is_empty(), "{name}");
    }
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let dir = upstream_dir("kfp-2.17.0");
    let ir = ir_path(&dir, "pipeline_in_pipeline_complex");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kfp-compile"))
        .arg(&ir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kfp-compile runs");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("kfp-compile ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(output.status.success(), "{stderr}");
}

#[test]
fn recover_prints_the_ir_of_a_workflow() {
    let dir = upstream_dir("kfp-2.3.0");
    let workflow = dir.join("compiled").join("create_pod_metadata.yaml");
    let output = kfp_compile(&["--recover", workflow.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        printed["pipelineJob"]["pipelineSpec"]["pipelineInfo"]["name"],
        "namespace/n1/pipeline/hello-world"
    );
    let foreign = scratch(
        "foreign.json",
        r#"{"kind": "Workflow", "spec": {"templates": []}}"#,
    );
    let output = kfp_compile(&["--recover", foreign.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr_line(&output).contains("not compiled by KFP v2"));
}

#[test]
fn usage_errors_exit_2() {
    let output = kfp_compile(&[]);
    assert_eq!(output.status.code(), Some(2));
    let output = kfp_compile(&["--frobnicate", "x.yaml"]);
    assert_eq!(output.status.code(), Some(2));
    let mut child = Command::new(env!("CARGO_BIN_EXE_kfp-compile"))
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"pipelineInfo: {name: x}\n")
        .unwrap();
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(2));
}

#[test]
fn release_selects_the_compiler_and_defaults_to_2_17_0() {
    let set = support::releases::ReleaseSet::load(Release::V2_16_1);
    let case = &set.cases[0];
    let settings = set.dir.join("settings").join("install.json");
    let run = |release: Option<&str>| {
        let mut args = Vec::new();
        if let Some(release) = release {
            args.extend(["--release", release]);
        }
        args.extend(["--settings", settings.to_str().unwrap()]);
        args.push(case.ir.to_str().unwrap());
        let output = kfp_compile(&args);
        assert!(
            output.status.success(),
            "{release:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice::<Value>(&output.stdout).expect("stdout is JSON")
    };
    let expected = support::releases::normalise(support::releases::load_json(&case.compiled));
    assert_eq!(support::releases::normalise(run(Some("2.16.1"))), expected);
    // `--release=X` works too, and without --release it is 2.17.0 (these settings are
    // 2.16.1's, which 2.17.0 reads as well).
    let default = run(None);
    assert_eq!(default, run(Some("2.17.0")));
    assert_ne!(support::releases::normalise(default), expected);
    let output = kfp_compile(&[
        "--release=2.16.1",
        "--settings",
        settings.to_str().unwrap(),
        case.ir.to_str().unwrap(),
    ]);
    assert!(output.status.success());

    // Without settings: the release's compiler with nothing set.
    let output = kfp_compile(&["--release", "2.14.4", case.ir.to_str().unwrap()]);
    assert!(output.status.success());
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let library = load_ir(&case.ir)
        .compile(&CompileOptions::from_settings_for(Release::V2_14_4, &json!({})).unwrap())
        .unwrap();
    assert_eq!(printed, library);
}

#[test]
fn an_unknown_release_lists_the_supported_ones_and_exits_2() {
    for version in ["2.16", "v2.16.1", "2.18.0", ""] {
        let output = kfp_compile(&["--release", version, "x.yaml"]);
        assert_eq!(output.status.code(), Some(2), "{version:?}");
        let text = String::from_utf8_lossy(&output.stderr);
        assert!(
            text.contains(&format!("unknown KFP release {version:?}")),
            "{text}"
        );
        assert!(
            text.contains("supported releases: 2.14.4, 2.15.0, 2.16.0, 2.16.1, 2.17.0"),
            "{text}"
        );
        assert!(output.stdout.is_empty());
    }
    let output = kfp_compile(&["--release"]);
    assert_eq!(output.status.code(), Some(2));
    let output = kfp_compile(&["--recover", "--release", "2.16.1", "x.json"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn a_settings_key_the_release_does_not_read_is_refused() {
    let settings = scratch(
        "host-users.json",
        r#"{"DEFAULT_SECURITY_CONTEXT_HOST_USERS": "false"}"#,
    );
    let ir = ir_path(&upstream_dir("kfp-2.17.0"), "add_numbers");
    let output = kfp_compile(&[
        "--release",
        "2.16.1",
        "--settings",
        settings.to_str().unwrap(),
        ir.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    let line = stderr_line(&output);
    assert!(line.contains("host-users.json"), "{line}");
    assert!(
        line.contains("DEFAULT_SECURITY_CONTEXT_HOST_USERS"),
        "{line}"
    );
    assert!(line.contains("KFP 2.16.1 does not read"), "{line}");
    let output = kfp_compile(&[
        "--settings",
        settings.to_str().unwrap(),
        ir.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "2.17.0 reads it");
}
