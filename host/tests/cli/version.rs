//! `pipewarden --version`.

use std::process::Command;

fn pipewarden(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pipewarden"))
        .args(args)
        .output()
        .expect("run pipewarden")
}

/// The commit the build should have embedded: the override if one is set, else git's answer.
fn expected_commit() -> String {
    if let Some(given) = std::env::var("PIPEWARDEN_GIT_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
    {
        return given.trim().to_owned();
    }
    let git = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    match git {
        Ok(out) if out.status.success() => String::from_utf8(out.stdout).unwrap().trim().into(),
        _ => "unknown".into(),
    }
}

#[test]
fn version_names_the_release_the_commit_and_the_policy_world_served() {
    let out = pipewarden(&["--version"]);
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout,
        format!(
            "pipewarden {} (commit {}, policy world {})\n",
            env!("CARGO_PKG_VERSION"),
            expected_commit(),
            pipewarden::engine::WORLD
        )
    );
    assert!(
        stdout.contains(pipewarden::engine::WORLD),
        "the world the engine checks policies against: {stdout}"
    );
}
