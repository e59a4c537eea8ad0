//! Registry credentials against a registry that requires them (CNCF distribution with an
//! htpasswd file): a push and a pull with a Docker config file, a pull with a Kubernetes pull
//! secret mounted as a file, or from the credential helper a Docker config names
//! (`credsStore`, as `docker login` leaves it on a desktop); without credentials or with wrong
//! ones, an error naming the reference, and nothing cached.

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
    pipewarden_with_helpers(args, None)
}

/// [`pipewarden`] with `helpers` (a directory of `docker-credential-*` programs) first on PATH.
fn pipewarden_with_helpers(args: &[&str], helpers: Option<&Path>) -> Result<Output> {
    let mut command = Command::new(pipewarden_binary()?);
    if let Some(dir) = helpers {
        let path = std::env::var("PATH").unwrap_or_default();
        command.env("PATH", format!("{}:{path}", dir.display()));
    }
    command
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

/// A credential helper speaking Docker's protocol (`get`, the registry on stdin, JSON out),
/// answering for `host` only.
fn write_helper(dir: &Path, name: &str, host: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(format!("docker-credential-{name}"));
    let script = format!(
        "#!/bin/sh\n[ \"$1\" = get ] || exit 3\nread registry\nif [ \"$registry\" = \"{host}\" ]; then\n  \
         echo '{{\"ServerURL\":\"{host}\",\"Username\":\"{USER}\",\"Secret\":\"{PASSWORD}\"}}'\nelse\n  \
         echo 'credentials not found in native keychain'; exit 1\nfi\n"
    );
    std::fs::write(&path, script)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

#[tokio::test]
async fn a_docker_config_with_a_credential_store_is_read_through_its_helper() -> Result<()> {
    let registry = Registry::start_with_login(USER, PASSWORD).await?;
    let dir = std::env::temp_dir().join(format!("pipewarden-cred-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    write_helper(&dir, "pipewarden-test", &registry.host)?;
    write_helper(&dir, "elsewhere", "other.example")?;
    // What `docker login` leaves with a credential store: an empty entry, no password.
    let stored = write_json(
        &dir,
        "config.json",
        &json!({"auths": {registry.host.clone(): {}}, "credsStore": "pipewarden-test"}),
    )?;
    let elsewhere = write_json(
        &dir,
        "elsewhere.json",
        &json!({"auths": {registry.host.clone(): {}}, "credsStore": "elsewhere"}),
    )?;
    let wasm = built_policy("kfp-default");
    let wasm = wasm.to_str().context("policy path")?;
    let target = format!("{}:0.1.0", registry.oci("policies/stored"));
    let push = |auth: &Path| -> Result<Output> {
        pipewarden_with_helpers(
            &[
                "policy",
                "push",
                wasm,
                &target,
                "--registry-auth-file",
                auth.to_str().unwrap(),
            ],
            Some(&dir),
        )
    };
    let refused = push(&elsewhere)?;
    ensure!(
        !refused.status.success() && stderr(&refused).contains("policies/stored"),
        "pushed without the store's credentials: {}",
        stderr(&refused)
    );
    let pushed = push(&stored)?;
    ensure!(pushed.status.success(), "push failed: {}", stderr(&pushed));
    let pinned = String::from_utf8_lossy(&pushed.stdout).trim().to_owned();
    let cache = dir.join("cache");
    let cache = cache.to_str().context("cache path")?;
    let pulled = pipewarden_with_helpers(
        &[
            "precompile",
            "--policy",
            &pinned,
            "--cache-dir",
            cache,
            "--registry-auth-file",
            stored.to_str().context("auth path")?,
        ],
        Some(&dir),
    )?;
    ensure!(pulled.status.success(), "pull failed: {}", stderr(&pulled));
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
