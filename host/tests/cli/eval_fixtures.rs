//! `pipewarden eval` as an author runs it: the binary, the default policy, the fixtures.

use serde_json::Value;

use super::common::{self, repo_path};

const SETTINGS: &str = "policies/kfp-default/settings/kfp-2.17.0.json";

fn eval(rebuild_policy: &str, output: &str, inputs: &[&std::path::Path]) -> (bool, String) {
    let out = common::default_policy_command("eval")
        .arg("--settings")
        .arg(repo_path(SETTINGS))
        .args([
            "--target-version",
            "2.17.0",
            "--rebuild-policy",
            rebuild_policy,
            "--output",
            output,
        ])
        .args([
            "--render-timeout-ms",
            "2000",
            "--decision-timeout-ms",
            "2000",
        ])
        .args(inputs)
        .env_remove(pipewarden::swf::REBUILD_POLICY_ENV)
        .output()
        .expect("run pipewarden");
    let stdout = String::from_utf8(out.stdout).unwrap();
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    (out.status.success(), stdout)
}

fn one_row(stdout: &str) -> Value {
    let rows: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{stdout}");
    rows.into_iter().next().unwrap()
}

#[test]
fn a_kfp_2_3_swf_is_rebuilt_to_the_target_and_its_render_then_left_alone() {
    let old = repo_path("tests/data/swf/kfp-2.3.yaml");
    let (ok, stdout) = eval("on-version-change", "jsonl", &[&old]);
    assert!(ok);
    let row = one_row(&stdout);
    assert_eq!(row["decision"], "rebuild", "{row}");
    let diff = row["diff"].to_string();
    for moved in [
        "kfp-driver:2.17.0",
        "kfp-launcher:2.17.0",
        "--ml_pipeline_server_address",
        "--log_level",
    ] {
        assert!(
            diff.contains(moved),
            "the diff does not move {moved}: {diff}"
        );
    }
    let paths: Vec<&str> = row["paths"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        paths
            .iter()
            .any(|p| p.ends_with("[system-container-driver].container.image")),
        "{paths:?}"
    );
    assert!(
        paths
            .iter()
            .any(|p| p.ends_with("[system-dag-driver].container.args")),
        "{paths:?}"
    );

    let rendered = std::env::temp_dir().join(format!(
        "pipewarden-eval-rendered-{}.json",
        std::process::id()
    ));
    std::fs::write(&rendered, row["rendered"].to_string()).unwrap();
    for (policy, decision) in [
        ("on-version-change", "skip"),
        ("always", "up-to-date"),
        ("disable", "skip"),
    ] {
        let (ok, stdout) = eval(policy, "jsonl", &[&rendered]);
        assert!(ok);
        let row = one_row(&stdout);
        assert_eq!(row["decision"], decision, "{policy}: {row}");
        assert_eq!(row["paths"].as_array().unwrap().len(), 0, "{policy}: {row}");
    }
    let _ = std::fs::remove_file(rendered);
}

#[test]
fn disable_skips_the_old_swf_and_reports_what_would_change() {
    let old = repo_path("tests/data/swf/kfp-2.3.yaml");
    let (ok, stdout) = eval("disable", "jsonl", &[&old]);
    assert!(ok);
    let row = one_row(&stdout);
    assert_eq!(row["decision"], "would-rebuild", "{row}");
    assert!(row["reason"].as_str().unwrap().contains("disable"), "{row}");
    assert!(
        row["rendered"].is_null(),
        "nothing to write under disable: {row}"
    );
}

#[test]
fn the_table_lists_every_swf_and_a_readable_diff() {
    let files = [
        "kfp-2.3.yaml",
        "kfp-2.17.yaml",
        "kfp-reference-only.yaml",
        "kfp-2.3-corrupted.yaml",
    ]
    .map(|f| repo_path(&format!("tests/data/swf/{f}")));
    let refs: Vec<&std::path::Path> = files.iter().map(|p| p.as_path()).collect();
    let (ok, stdout) = eval("always", "table", &refs);
    print!("{stdout}");
    assert!(
        ok,
        "an SWF the policy cannot rebuild is reported, not a policy error"
    );
    let header = stdout.lines().next().unwrap();
    assert!(header.starts_with("SWF") && header.contains("DECISION") && header.contains("REASON"));
    let row = |name: &str| {
        stdout
            .lines()
            .find(|line| line.contains(name))
            .unwrap_or_else(|| panic!("no row {name}: {stdout}"))
    };
    assert!(
        row("dailyechocorrupt").contains("not-rebuildable")
            && row("dailyechocorrupt").contains("not a workflow compiled by KFP v2"),
        "{stdout}"
    );
    assert!(
        !row("dailyechocorrupt").contains("not-rebuildable: "),
        "{stdout}"
    );
    assert!(
        stdout.contains("+ --ml_pipeline_server_address ml-pipeline.kubeflow.svc.cluster.local")
    );
}

#[test]
fn an_event_sequence_rejects_the_stale_copy_and_notifies_once_per_completion() {
    let sequence = repo_path("tests/data/events/stale-copy-sequence.yaml");
    let (ok, stdout) = eval("always", "jsonl", &[&sequence]);
    assert!(ok);
    let rows: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let column = |key: &str| -> Vec<String> {
        rows.iter()
            .map(|r| r[key].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(
        column("decision"),
        [
            "process",
            "process",
            "process",
            "process",
            "reject-stale",
            "process",
            // Deleted after completing: eligible, and already notified.
            "process",
            "process",
            "process",
            "process",
            "process"
        ]
    );
    assert_eq!(
        column("action"),
        [
            "-",
            "-",
            "-",
            "notify",
            "-",
            "already notified",
            "already notified",
            "-",
            "-",
            "notify",
            "-"
        ]
    );
}

#[test]
fn json_is_one_document_and_exit_code_tells_whether_a_decision_would_write() {
    let run = |args: &[&str], input: &str| {
        common::default_policy_command("eval")
            .arg("--settings")
            .arg(repo_path(SETTINGS))
            .args(["--target-version", "2.17.0", "--rebuild-policy", "always"])
            .args([
                "--render-timeout-ms",
                "5000",
                "--decision-timeout-ms",
                "5000",
            ])
            .args(args)
            .arg(repo_path(input))
            .env_remove(pipewarden::swf::REBUILD_POLICY_ENV)
            .output()
            .expect("run pipewarden")
    };
    let old = "tests/data/swf/kfp-2.3.yaml";
    let out = run(&["-o", "json"], old);
    assert_eq!(out.status.code(), Some(0));
    let document: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(document["swfs"][0]["decision"], "rebuild", "{document}");
    assert!(
        document["target"]
            .as_str()
            .is_some_and(|t| t.starts_with("target 2.17.0")),
        "{document}"
    );
    assert_eq!(run(&["--exit-code"], old).status.code(), Some(1));
    // A reference-only SWF: nothing to write.
    let reference = "tests/data/swf/kfp-reference-only.yaml";
    assert_eq!(run(&["--exit-code"], reference).status.code(), Some(0));
}
