//! Embeds the git commit the binary is built from, for `pipewarden --version`: the
//! `PIPEWARDEN_GIT_COMMIT` environment variable if set (a container or tarball build, where
//! there is no `.git`), else what `git` says, else `unknown`.

use std::path::Path;
use std::process::Command;

const VARIABLE: &str = "PIPEWARDEN_GIT_COMMIT";

fn main() {
    println!("cargo:rerun-if-env-changed={VARIABLE}");
    let given = std::env::var(VARIABLE)
        .ok()
        .map(|commit| commit.trim().to_owned())
        .filter(|commit| !commit.is_empty());
    let commit = given
        .or_else(commit_from_git)
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env={VARIABLE}={commit}");
}

/// The abbreviated HEAD commit; asks cargo to build again when HEAD moves.
fn commit_from_git() -> Option<String> {
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    let refs = ["HEAD", "packed-refs"]
        .into_iter()
        .map(str::to_owned)
        .chain(branch);
    for name in refs {
        // A missing file would make cargo run this script on every build.
        if let Some(file) =
            git(&["rev-parse", "--git-path", &name]).filter(|f| Path::new(f).exists())
        {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    Some(commit)
}

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (output.status.success() && !text.is_empty()).then_some(text)
}
