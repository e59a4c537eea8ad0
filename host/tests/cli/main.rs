//! The `pipewarden` binary's command line as an operator meets it: what it says about itself,
//! the flags it refuses, empty inputs, a closed stdout, a run without settings or cluster, its
//! reference, `eval` on the fixtures and the settings keys it warns about.

mod common;
mod eval;
mod eval_fixtures;
mod floors;
mod reference;
mod run;
mod settings_keys;
mod test_cases;
mod version;

use std::path::PathBuf;
use std::process::Command;

/// Runs `pipewarden` with only the given environment, so the tester's own settings do not leak in.
pub fn pipewarden_with_env(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pipewarden"))
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .expect("run pipewarden")
}

/// The one line a refused start prints, checking it is one line and the status is 2.
pub fn refusal(out: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "not one line: {stderr}");
    stderr.trim_end().to_owned()
}

/// A scratch file under the system temp dir, removed when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(name: &str, text: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("pipewarden-cli-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        Scratch(path)
    }

    pub fn arg(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
