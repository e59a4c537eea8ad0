//! Flags of `pipewarden precompile` and `pipewarden policy push`.

use std::path::PathBuf;

use super::PolicyArgs;

#[derive(clap::Args, Debug)]
pub struct PrecompileArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// Flags of `pipewarden policy push`.
#[derive(clap::Args, Debug)]
pub struct PushArgs {
    /// The policy component (.wasm).
    pub file: PathBuf,
    /// Where to push it: oci://REGISTRY/REPOSITORY:TAG.
    pub reference: String,
    /// Registry credentials: a Docker config file (default: $DOCKER_CONFIG/config.json or
    /// ~/.docker/config.json).
    #[arg(long, env = "PIPEWARDEN_REGISTRY_AUTH_FILE")]
    pub registry_auth_file: Option<PathBuf>,
}
