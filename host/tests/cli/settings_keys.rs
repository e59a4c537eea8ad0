//! Settings keys as the shipped binary and default policy read them: a key nothing reads is
//! ignored, so one a letter or two from a known key is named in a warning with the key it
//! likely meant; a known variable holding a non-string is refused, naming it.

use super::common::{self, repo_path};

fn eval_with_settings(settings: &str) -> (bool, String) {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let path = std::env::temp_dir().join(format!(
        "pipewarden-settings-keys-{}-{call}.json",
        std::process::id()
    ));
    std::fs::write(&path, settings).unwrap();
    let out = common::default_policy_command("eval")
        .arg("--settings")
        .arg(&path)
        .args(["--target-version", "2.17.0", "--output", "json"])
        .args([
            "--render-timeout-ms",
            "2000",
            "--decision-timeout-ms",
            "2000",
        ])
        .arg(repo_path("tests/data/swf/kfp-2.3.yaml"))
        .output()
        .expect("run pipewarden");
    let _ = std::fs::remove_file(&path);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_key_one_or_two_edits_from_a_known_one_is_warned_of_naming_the_likely_key() {
    let (ok, log) = eval_with_settings(
        r#"{"V2_DRIVER_IMAG": "ghcr.io/kubeflow/kfp-driver:2.17.0", "notfy": "all",
            "V2_LAUNCHR_IMAG": "l:1", "SOME_OTHER_VARIABLE": "x"}"#,
    );
    assert!(ok, "accepted: unread keys are ignored\n{log}");
    for (given, likely) in [
        ("V2_DRIVER_IMAG", "V2_DRIVER_IMAGE"),
        ("notfy", "notify"),
        ("V2_LAUNCHR_IMAG", "V2_LAUNCHER_IMAGE"),
    ] {
        let line = log
            .lines()
            .find(|line| line.contains(&format!("settings key \"{given}\"")))
            .unwrap_or_else(|| panic!("no warning for {given}\n{log}"));
        assert!(line.contains("WARN"), "{line}");
        assert!(
            line.contains(&format!("did you mean \"{likely}\"")),
            "{line}"
        );
    }
    assert!(!log.contains("SOME_OTHER_VARIABLE"), "{log}");

    let (_, log) = eval_with_settings(r#"{"V2_DRIVER_IMAGE": "d:2.17.0", "notify": "all"}"#);
    assert!(!log.contains("did you mean"), "{log}");
}

#[test]
fn a_known_variable_holding_a_number_is_refused_naming_it() {
    let (ok, log) = eval_with_settings(r#"{"V2_DRIVER_IMAGE": 42}"#);
    assert!(!ok, "{log}");
    assert!(log.contains("V2_DRIVER_IMAGE is 42, not a string"), "{log}");
}
