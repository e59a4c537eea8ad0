//! Policy components for the tests that need a component (the engine's limits, hostile
//! guests, the CLI): the one `make policies` built, else built here, once per target dir.

use std::fs::File;
use std::path::PathBuf;
use std::process::Command;

use crate::target_dir;

/// The component of the policy crate `crate_name`, building it when missing. Test binaries
/// run in parallel: a file lock makes one of them build while the others wait.
pub fn built_policy(crate_name: &str) -> PathBuf {
    let target = target_dir();
    let path = target
        .join("wasm32-wasip2/policy")
        .join(format!("{}.wasm", crate_name.replace('-', "_")));
    if path.exists() {
        return path;
    }
    std::fs::create_dir_all(&target).expect("the target dir");
    let lock = File::create(target.join("policy-build.lock")).expect("the policy build lock");
    lock.lock().expect("take the policy build lock");
    if !path.exists() {
        build(crate_name, &path);
    }
    path
}

fn build(crate_name: &str, path: &std::path::Path) {
    let args = [
        "build",
        "--profile",
        "policy",
        "--target",
        "wasm32-wasip2",
        "-p",
        crate_name,
    ];
    let shown = format!("cargo {}", args.join(" "));
    eprintln!("{} is missing: running `{shown}`", path.display());
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(args)
        .current_dir(crate::repo_path(""))
        .status()
        .unwrap_or_else(|e| panic!("cannot run `{shown}`: {e}"));
    assert!(
        status.success() && path.exists(),
        "`{shown}` failed ({status}); build the policies with `make policies`"
    );
}
