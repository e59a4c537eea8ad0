//! `pipewarden test`: case files against the default policy; the status says pass (0), fail
//! (1) or a malformed file (2); the outputs a person and a program read, `--run` and
//! `-o junit`. And `eval -o yaml|jsonl`.

use std::process::Output;

use serde_json::Value;

use super::Scratch;
use super::common::{self, repo_path};

fn test_command(policy_flags: &[&str], files: &[&str]) -> Output {
    common::default_policy_command("test")
        // Generous deadlines: these tests check decisions, not speed, on a busy machine.
        .args([
            "--render-timeout-ms",
            "5000",
            "--decision-timeout-ms",
            "5000",
        ])
        .args(policy_flags)
        .args(files)
        .env_remove("PIPEWARDEN_LOG")
        .env_remove("PIPEWARDEN_SETTINGS")
        .output()
        .expect("run pipewarden test")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn shared_cases() -> String {
    repo_path("tests/cases/shared.yaml").display().to_string()
}

/// A case file in the temp dir whose relative paths point into the repository.
fn case_file(name: &str, body: &str) -> Scratch {
    let settings = repo_path("policies/kfp-default/settings/kfp-2.17.0.json");
    let swf = repo_path("tests/data/swf");
    let text = format!(
        "settings: {}\ntarget: \"2.17.0\"\n{}",
        settings.display(),
        body.replace("SWF/", &format!("{}/", swf.display()))
    );
    Scratch::new(name, &text)
}

#[test]
fn the_default_policy_passes_the_shared_cases() {
    let out = test_command(&[], &[&shared_cases()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let total = stdout.lines().filter(|l| l.ends_with("  pass")).count();
    assert!(total >= 35, "{total} passing rows:\n{stdout}");
    assert!(
        stdout.contains(&format!("{total} passed, 0 failed")),
        "{stdout}"
    );
    for export in ["exit-eligibility", "should-rebuild"] {
        assert!(stdout.contains(export), "no {export} case ran");
    }
}

/// The default policy's own cases (`policies/kfp-default/cases/cases.yaml`) through the
/// compiled component; `cargo test -p kfp-default --test cases` runs the same file natively.
#[test]
fn the_default_policy_passes_its_own_cases() {
    let cases = repo_path("policies/kfp-default/cases/cases.yaml");
    let out = test_command(&["-o", "json"], &[&cases.display().to_string()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let report: Value = serde_json::from_str(&stdout).expect("a JSON report");
    assert_eq!(report["failed"], 0, "{stdout}");
    let passed = report["passed"].as_u64().unwrap_or(0);
    assert!(passed >= 50, "the case file shrank: {passed} cases");
    for export in ["should-rebuild", "render-swf", "exit-eligibility"] {
        let ran = report["cases"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|case| case["export"] == export);
        assert!(ran, "no {export} case ran");
    }
}

#[test]
fn a_failing_case_is_status_1_and_named_with_why() {
    let cases = case_file(
        "failing.yaml",
        r#"cases:
  - name: a stale copy is wrongly expected to pass
    export: exit-eligibility
    tombstone: {rv: "110", phase: Succeeded, completed: true}
    event: {type: MODIFIED, rv: "105", phase: Running}
    expect: process
  - name: this one holds
    export: exit-eligibility
    event: {type: ADDED, rv: "100", phase: ""}
    expect: process
"#,
    );
    let out = test_command(&[], &[cases.arg()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("FAIL ")
            && stdout.contains("wrongly expected to pass: got reject-stale, expected process"),
        "{stdout}"
    );
    assert!(stdout.contains("1 passed, 1 failed, 2 case(s)"), "{stdout}");
}

#[test]
fn a_malformed_case_file_is_status_2_naming_file_case_and_problem() {
    let problems = [
        (
            "bad-expect.yaml",
            "cases:\n  - name: typo\n    export: exit-eligibility\n    event: {type: ADDED, rv: \"1\"}\n    expect: stale\n",
            "case 1 (\"typo\"): expect \"stale\" is not one of process, skip, reject-stale, requeue",
        ),
        (
            "unknown-key.yaml",
            "cases:\n  - name: misspelt\n    export: should-rebuild\n    swf: {file: SWF/kfp-2.3.yaml}\n    expect: rebuild\n    resaon: x\n",
            "case 1 (\"misspelt\"): unknown field `resaon`",
        ),
        (
            "wrong-export.yaml",
            "cases:\n  - name: ok one\n    export: exit-eligibility\n    event: {type: ADDED, rv: \"1\"}\n    expect: process\n  - name: mixed up\n    export: should-rebuild\n    swf: {file: SWF/kfp-2.3.yaml}\n    event: {type: ADDED, rv: \"1\"}\n    expect: rebuild\n",
            "case 2 (\"mixed up\"): event does not apply to export should-rebuild",
        ),
        (
            "bad-type.yaml",
            "cases:\n  - name: odd event\n    export: exit-eligibility\n    event: {type: UPDATED, rv: \"1\"}\n    expect: process\n",
            "event: type \"UPDATED\" is not ADDED, MODIFIED, DELETED or RELISTED",
        ),
        (
            "no-check.yaml",
            "cases:\n  - name: checks nothing\n    export: render-swf\n    swf: {file: SWF/kfp-2.3.yaml}\n",
            "a render-swf case needs a check",
        ),
        (
            "bad-json-type.yaml",
            "cases:\n  - name: typed\n    export: render-swf\n    swf: {file: SWF/kfp-2.3.yaml}\n    types: {/spec/workflow/spec: text}\n",
            "types /spec/workflow/spec \"text\" is not one of string, object, array, number, boolean, null",
        ),
        ("no-cases.yaml", "cases: []\n", "no cases"),
    ];
    for (name, body, problem) in problems {
        let cases = case_file(name, body);
        // Beside a good file: nothing runs, nothing is printed but the one error.
        let out = test_command(&[], &[&shared_cases(), cases.arg()]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains(cases.arg()),
            "{name}: file not named: {stderr}"
        );
        assert!(stderr.contains(problem), "{name}: {stderr}");
        assert!(
            out.stdout.is_empty(),
            "{name}: cases ran before the refusal"
        );
    }
}

#[test]
fn render_swf_checks_changes_values_errors_and_idempotence() {
    let cases = case_file(
        "render.yaml",
        r#"cases:
  - name: a KFP 2.3 SWF moves to the 2.17 driver and launcher, stamped
    export: render-swf
    swf: {file: SWF/kfp-2.3.yaml}
    equal:
      /spec/workflow/spec/spec/templates/0/container/image: ghcr.io/kubeflow/kfp-driver:2.17.0
      /metadata/annotations/pipelines.kubeflow.org~1version: "2.17.0"
    present: [/metadata/annotations/pipewarden.io~1render-hash]
  - name: a render of a render is byte-identical and changes nothing
    export: render-swf
    swf: {file: SWF/kfp-2.3.yaml, rendered: true}
    idempotent: true
    changes: []
  - name: a render equals the render of the same SWF in the legacy object form
    export: render-swf
    swf: {file: SWF/kfp-2.3.yaml}
    output: {file: SWF/kfp-2.3.yaml, rendered: true}
  - name: a reference-only SWF has no pipeline to recompile
    export: render-swf
    swf: {file: SWF/kfp-reference-only.yaml}
    expect: error
    error: "not-rebuildable: reference-only SWF"
  - name: the KFP 11296 corruption is a clear error
    export: render-swf
    swf: {file: SWF/kfp-2.3-corrupted.yaml}
    expect: error
    error: not a workflow compiled by KFP v2
  - name: a wrong expected value fails
    export: render-swf
    swf: {file: SWF/kfp-2.3.yaml}
    equal: {/spec/workflow/spec/spec/templates/0/container/image: "driver:old"}
  - name: changes are compared as a set of paths
    export: render-swf
    swf: {file: SWF/kfp-2.3.yaml}
    changes: [metadata.annotations.nothing]
"#,
    );
    let out = test_command(&["-o", "json"], &[cases.arg()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(report["passed"], 5, "{report:#}");
    assert_eq!(report["failed"], 2, "{report:#}");
    let rows = report["cases"].as_array().unwrap();
    let by_name = |needle: &str| {
        rows.iter()
            .find(|row| row["name"].as_str().unwrap().contains(needle))
            .unwrap()
    };
    assert_eq!(by_name("wrong expected")["pass"], false);
    assert!(
        by_name("wrong expected")["detail"]
            .as_str()
            .unwrap()
            .contains("expected \"driver:old\""),
        "{report:#}"
    );
    let changes = by_name("as a set of paths")["detail"].as_str().unwrap();
    assert!(
        changes.contains("spec.workflow.spec")
            && changes.contains("expected [metadata.annotations.nothing]"),
        "{changes}"
    );
    let error = by_name("clear error");
    assert_eq!(error["pass"], true, "{report:#}");
    assert!(
        error["got"].as_str().unwrap().starts_with("error: "),
        "{report:#}"
    );
}

#[test]
fn yaml_output_lists_every_case_and_settings_override_the_file() {
    // notify: all from --settings turns the default skip into process.
    let settings = Scratch::new(
        "notify-all.yaml",
        &format!(
            "{}\nnotify: all\n",
            serde_yaml::to_string(
                &serde_json::from_str::<Value>(
                    &std::fs::read_to_string(repo_path(
                        "policies/kfp-default/settings/kfp-2.17.0.json"
                    ))
                    .unwrap()
                )
                .unwrap()
            )
            .unwrap()
        ),
    );
    let cases = case_file(
        "notify.yaml",
        r#"cases:
  - name: a completion without an exit handler
    export: exit-eligibility
    event: {type: MODIFIED, rv: "110", phase: Failed, completed: true, spec: {entrypoint: main}}
    expect: process
    action: notify
"#,
    );
    let without = test_command(&["-o", "yaml"], &[cases.arg()]);
    assert_eq!(without.status.code(), Some(1), "{}", text(&without.stderr));
    let with = test_command(
        &["-o", "yaml", "--settings", settings.arg()],
        &[cases.arg()],
    );
    assert_eq!(with.status.code(), Some(0), "{}", text(&with.stdout));
    let report: Value = serde_yaml::from_slice(&with.stdout).expect("one YAML document");
    assert_eq!(report["cases"][0]["export"], "exit-eligibility");
    assert_eq!(report["cases"][0]["got"], "process [notify]");
}

#[test]
fn eval_writes_one_yaml_document_and_json_lines_on_request() {
    let eval = |output: &str| {
        common::default_policy_command("eval")
            .args([
                "--render-timeout-ms",
                "5000",
                "--decision-timeout-ms",
                "5000",
                "-o",
                output,
            ])
            .arg(repo_path("tests/data/events/stale-copy-sequence.yaml"))
            .env_remove("PIPEWARDEN_LOG")
            .output()
            .unwrap()
    };
    let out = eval("yaml");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let document: Value = serde_yaml::from_slice(&out.stdout).expect("one YAML document");
    let rows = document["event_sequences"][0]["events"]
        .as_array()
        .expect("the sequence's rows");
    assert!(rows.len() >= 5, "{document}");
    assert!(
        rows.iter().any(|row| row["decision"] == "reject-stale"),
        "{document}"
    );
    let out = eval("jsonl");
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    assert_eq!(&lines, rows, "the same rows, one per line");
}

#[test]
fn run_selects_cases_by_name_and_junit_reports_each_failure() {
    let cases = case_file(
        "mixed.yaml",
        r#"cases:
  - name: old swf rebuilds
    export: should-rebuild
    swf: {file: SWF/kfp-2.3.yaml}
    expect: rebuild
  - name: old swf wrongly expected to skip
    export: should-rebuild
    swf: {file: SWF/kfp-2.3.yaml}
    expect: skip
"#,
    );
    let only_passing = test_command(&["--run", "rebuilds$"], &[cases.arg()]);
    assert_eq!(
        only_passing.status.code(),
        Some(0),
        "{}",
        text(&only_passing.stdout)
    );
    assert!(text(&only_passing.stdout).contains("1 passed, 0 failed, 1 case(s)"));
    let junit = test_command(&["-o", "junit"], &[cases.arg()]);
    assert_eq!(junit.status.code(), Some(1));
    let xml = text(&junit.stdout);
    assert!(
        xml.starts_with("<?xml") && xml.contains("tests=\"2\" failures=\"1\""),
        "{xml}"
    );
    assert!(
        xml.contains("<testcase name=\"old swf rebuilds\" classname=\"should-rebuild\"/>"),
        "{xml}"
    );
    assert_eq!(xml.matches("<failure ").count(), 1, "{xml}");
    let none = test_command(&["--run", "no such case"], &[cases.arg()]);
    assert_eq!(
        none.status.code(),
        Some(2),
        "a --run that matches nothing is an error"
    );
    assert!(text(&none.stderr).contains("no case name matches"));
}

#[test]
fn run_refuses_a_policy_pool_smaller_than_both_loops_concurrency() {
    let out = super::pipewarden_with_env(
        &[
            "run",
            "--policy",
            "unused.wasm",
            "--budget",
            "interpreter",
            "--concurrency",
            "12",
        ],
        &[],
    );
    let line = super::refusal(&out);
    assert!(
        line.contains("--policy-pool-size (PIPEWARDEN_POLICY_POOL_SIZE) is 16; --concurrency 12"),
        "{line}"
    );
}
