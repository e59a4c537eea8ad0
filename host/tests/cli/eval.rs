//! `pipewarden eval`: inputs with nothing in them, and a reader of stdout that went away.

use std::process::Command;

use super::Scratch;
use super::common::{self, repo_path};

/// `pipewarden eval` of the default policy with its settings over `inputs`.
fn eval_command(inputs: &[&str]) -> Command {
    let mut command = common::default_policy_command("eval");
    command
        .arg("--settings")
        .arg(repo_path("policies/kfp-default/settings/kfp-2.17.0.json"))
        .args(["--target-version", "2.17.0", "--render-timeout-ms", "2000"])
        .args(inputs)
        .env_remove("PIPEWARDEN_LOG");
    command
}

#[test]
fn an_input_file_with_nothing_to_evaluate_is_an_error_naming_it() {
    let swf = repo_path("tests/data/swf/kfp-2.3.yaml");
    for (name, text) in [
        ("empty.yaml", ""),
        ("separators.yaml", "---\n# nothing here\n---\n"),
        (
            "empty-list.json",
            r#"{"apiVersion": "v1", "kind": "List", "items": []}"#,
        ),
    ] {
        let empty = Scratch::new(name, text);
        // Beside a good file, so the error is not lost among results.
        let out = eval_command(&[swf.to_str().unwrap(), empty.arg()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains(&format!("{} is empty", empty.arg())),
            "{name}: {stderr}"
        );
        assert!(
            out.stdout.is_empty(),
            "{name}: results printed before the refusal"
        );
    }
}

#[test]
fn a_closed_stdout_ends_eval_quietly_with_the_sigpipe_status() {
    let (reader, writer) = std::io::pipe().unwrap();
    // The reader is gone before the first write, as when `head` has read its lines and left.
    drop(reader);
    let sequence = repo_path("tests/data/events/stale-copy-sequence.yaml");
    let swf = repo_path("tests/data/swf/kfp-2.3.yaml");
    for output in ["table", "json"] {
        let out = eval_command(&[swf.to_str().unwrap(), sequence.to_str().unwrap()])
            .args(["--output", output])
            .stdout(writer.try_clone().unwrap())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "{output}: {stderr}");
        assert!(stderr.is_empty(), "{output}: not quiet: {stderr}");
    }
}
