//! The shared test support, and the built `pipewarden` binary with the default policy (only a
//! test of this package knows the binary's path).

pub use pipewarden_test_support::*;

/// `pipewarden SUBCOMMAND` with the default policy, loaded through the test run's shared
/// compiled-policy cache.
pub fn default_policy_command(subcommand: &str) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_pipewarden"));
    command
        .arg(subcommand)
        .arg("--policy")
        .arg(built_policy("kfp-default"))
        .arg("--cache-dir")
        .arg(cached_options().cache_dir.unwrap());
    command
}
