//! Registry credentials against a registry that requires them (CNCF distribution with an
//! htpasswd file): a push and a pull with a Docker config file, a pull with a Kubernetes pull
//! secret mounted as a file; without credentials or with wrong ones, an error naming the
//! reference, and nothing cached.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context as _, Result, ensure};
use base64::Engine as _;
use pipewarden_tests::deploy_support::{built_policy, pipewarden_binary};
use pipewarden_tests::registry::Registry;
use serde_json::json;

const USER: &str = "policy-reader";
const PASSWORD: &str = "s3cret-for-tests";

fn pipewarden(args: &[&str]) -> Result<Output> {
    Command::new(pipewarden_binary()?)
        .args(args)
        .env_remove("PIPEWARDEN_POLICY")
        .env_remove("PIPEWARDEN_REGISTRY_AUTH_FILE")
        // No developer's own Docker credentials take part.
        .env(
            "DOCKER_CONFIG",
            std::env::temp_dir().join("pipewarden-no-docker-config"),
        )
        .output()
        .context("running pipewarden")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).trim().to_owned()
}

fn write_json(dir: &Path, name: &str, value: &serde_json::Value) -> Result<PathBuf> {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(value)?)?;
    Ok(path)
}

fn precompile(reference: &str, cache: &Path, auth: Option<&Path>) -> Result<Output> {
    let mut args = vec!["precompile", "--policy", reference, "--cache-dir"];
    args.push(cache.to_str().context("cache path")?);
    if let Some(file) = auth {
        args.extend(["--registry-auth-file", file.to_str().context("auth path")?]);
    }
    pipewarden(&args)
}

#[tokio::test]
async fn a_registry_that_requires_login_is_read_with_a_docker_config_or_a_pull_secret() -> Result<()>
{
    let registry = Registry::start_with_login(USER, PASSWORD).await?;
    let dir = std::env::temp_dir().join(format!("pipewarden-auth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let basic = |password: &str| {
        base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{password}"))
    };
    // `docker login` writes `auth`; a pull secret often carries username and password.
    let docker_config = write_json(
        &dir,
        "config.json",
        &json!({"auths": {registry.host.clone(): {"auth": basic(PASSWORD)}}}),
    )?;
    let pull_secret = write_json(
        &dir,
        ".dockerconfigjson",
        &json!({"auths": {format!("http://{}", registry.host): {"username": USER, "password": PASSWORD}}}),
    )?;
    let wrong = write_json(
        &dir,
        "wrong.json",
        &json!({"auths": {registry.host.clone(): {"auth": basic("not-the-password")}}}),
    )?;

    let wasm = built_policy("kfp-default");
    let wasm = wasm.to_str().context("policy path")?;
    let target = format!("{}:0.1.0", registry.oci("policies/private"));
    let anonymous = pipewarden(&["policy", "push", wasm, &target])?;
    ensure!(
        !anonymous.status.success(),
        "an anonymous push was accepted"
    );
    ensure!(
        stderr(&anonymous).contains("policies/private"),
        "the refusal does not name the reference: {}",
        stderr(&anonymous)
    );
    let pushed = pipewarden(&[
        "policy",
        "push",
        wasm,
        &target,
        "--registry-auth-file",
        docker_config.to_str().context("auth path")?,
    ])?;
    ensure!(pushed.status.success(), "push failed: {}", stderr(&pushed));
    let pinned = String::from_utf8_lossy(&pushed.stdout).trim().to_owned();

    for (label, auth) in [("no credentials", None), ("a wrong password", Some(&wrong))] {
        let cache = dir.join(format!("cache-{}", label.replace(' ', "-")));
        let refused = precompile(&pinned, &cache, auth.map(PathBuf::as_path))?;
        ensure!(!refused.status.success(), "pulled with {label}");
        let said = stderr(&refused);
        ensure!(
            said.contains(&pinned) && said.contains("refused the credentials"),
            "with {label}: {said}"
        );
        ensure!(
            !cache.join("oci/blobs").exists()
                || std::fs::read_dir(cache.join("oci/blobs/sha256"))?
                    .next()
                    .is_none(),
            "with {label}, something was cached"
        );
    }
    for (label, auth) in [
        ("docker config", &docker_config),
        ("pull secret", &pull_secret),
    ] {
        let cache = dir.join(format!("cache-{}", label.replace(' ', "-")));
        let pulled = precompile(&pinned, &cache, Some(auth))?;
        ensure!(
            pulled.status.success(),
            "pull with the {label} failed: {}\nregistry log:\n{}",
            stderr(&pulled),
            registry.log_tail()
        );
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
