//! Policies as OCI artifacts on a real registry (CNCF distribution on loopback), through the
//! `pipewarden` binary: push, pull by digest into the cache, load offline from the cache, tags
//! refused unless allowed, and a clear error naming the reference for each way it goes wrong.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context as _, Result, ensure};
use pipewarden::oci::{FetchOptions, OciError, PolicyRef};
use pipewarden_tests::binaries::tool;
use pipewarden_tests::deploy_support::{built_policy, pipewarden_binary};
use pipewarden_tests::registry::Registry;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

fn pipewarden(args: &[&str]) -> Result<Output> {
    Command::new(pipewarden_binary()?)
        .args(args)
        .env_remove("PIPEWARDEN_POLICY")
        .output()
        .context("running pipewarden")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).trim().to_owned()
}

fn sha256_file(path: &Path) -> Result<String> {
    Ok(format!(
        "sha256:{}",
        hex::encode(Sha256::digest(std::fs::read(path)?))
    ))
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pipewarden-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Pushes the default policy; returns the pinned reference `policy push` printed.
fn push_default(registry: &Registry, repository: &str) -> Result<String> {
    let wasm = built_policy("kfp-default");
    let target = format!("{}:0.1.0", registry.oci(repository));
    let pushed = pipewarden(&["policy", "push", wasm.to_str().unwrap(), &target])?;
    ensure!(pushed.status.success(), "push failed: {}", stderr(&pushed));
    Ok(stdout(&pushed))
}

fn precompile(reference: &str, cache: &Path, extra: &[&str]) -> Result<Output> {
    let mut args = vec!["precompile", "--policy", reference, "--cache-dir"];
    args.push(cache.to_str().unwrap());
    args.extend_from_slice(extra);
    pipewarden(&args)
}

#[tokio::test]
async fn a_pushed_policy_is_pulled_by_digest_and_then_served_from_the_cache_offline() -> Result<()>
{
    let registry = Registry::start().await?;
    let pinned = push_default(&registry, "policies/kfp-default")?;
    let prefix = format!("{}:0.1.0@sha256:", registry.oci("policies/kfp-default"));
    ensure!(pinned.starts_with(&prefix), "push printed {pinned:?}");

    // The CNCF Wasm layout, as another client sees it.
    let plain = pinned.trim_start_matches("oci://");
    let crane = tool("crane")?;
    let manifest = Command::new(&crane).args(["manifest", plain]).output()?;
    let manifest: Value = serde_json::from_slice(&manifest.stdout)
        .with_context(|| String::from_utf8_lossy(&manifest.stderr).into_owned())?;
    ensure!(
        manifest["config"]["mediaType"] == "application/vnd.wasm.config.v0+json",
        "{manifest}"
    );
    ensure!(
        manifest["layers"][0]["mediaType"] == "application/wasm",
        "{manifest}"
    );
    let wasm_digest = sha256_file(&built_policy("kfp-default"))?;
    ensure!(
        manifest["layers"][0]["digest"] == wasm_digest.as_str(),
        "{manifest}"
    );

    let cache = fresh_dir("oci-cache");
    let pulled = precompile(&pinned, &cache, &[])?;
    ensure!(pulled.status.success(), "pull failed: {}", stderr(&pulled));
    ensure!(
        stdout(&pulled).contains(&wasm_digest),
        "{}",
        stdout(&pulled)
    );

    // A policy author tests the artifact itself: `pipewarden test` takes the same reference.
    let shared_cases = pipewarden_tests::deploy_support::repo_path("tests/cases/shared.yaml");
    let tested = pipewarden(&[
        "test",
        "--policy",
        &pinned,
        "--cache-dir",
        cache.to_str().unwrap(),
        shared_cases.to_str().unwrap(),
    ])?;
    ensure!(
        tested.status.success() && stdout(&tested).contains(" passed, 0 failed"),
        "pipewarden test on {pinned}: {}{}",
        stdout(&tested),
        stderr(&tested)
    );

    // The registry goes away: the pinned policy still loads, from the cache.
    drop(registry);
    let offline = precompile(&pinned, &cache, &[])?;
    ensure!(
        offline.status.success(),
        "offline load failed: {}",
        stderr(&offline)
    );
    ensure!(
        stdout(&offline).contains(&wasm_digest),
        "{}",
        stdout(&offline)
    );

    // A damaged cache entry is never loaded: the bytes are held to the layer digest.
    let cached = cache
        .join("oci/blobs/sha256")
        .join(wasm_digest.trim_start_matches("sha256:"));
    let mut bytes = std::fs::read(&cached)?;
    bytes[100] ^= 0xff;
    std::fs::write(&cached, &bytes)?;
    let damaged = precompile(&pinned, &cache, &[])?;
    ensure!(!damaged.status.success(), "a damaged cached policy loaded");
    ensure!(
        stderr(&damaged).contains(&pinned) && stderr(&damaged).contains(&wasm_digest),
        "{}",
        stderr(&damaged)
    );

    // Without the cache there is nothing to fall back on: the error names the reference.
    let uncached = precompile(&pinned, &fresh_dir("oci-empty-cache"), &[])?;
    ensure!(!uncached.status.success());
    ensure!(
        stderr(&uncached).contains(&pinned) && stderr(&uncached).contains("cannot be reached"),
        "{}",
        stderr(&uncached)
    );
    std::fs::remove_dir_all(cache)?;
    Ok(())
}

#[tokio::test]
async fn a_tag_without_a_digest_is_refused_unless_allowed() -> Result<()> {
    let registry = Registry::start().await?;
    push_default(&registry, "tagged")?;
    let tagged = format!("{}:0.1.0", registry.oci("tagged"));
    let cache = fresh_dir("oci-tag-cache");
    let refused = precompile(&tagged, &cache, &[])?;
    ensure!(!refused.status.success());
    ensure!(
        stderr(&refused).contains(&tagged) && stderr(&refused).contains("--policy-allow-tag"),
        "{}",
        stderr(&refused)
    );
    let allowed = precompile(&tagged, &cache, &["--policy-allow-tag"])?;
    ensure!(allowed.status.success(), "{}", stderr(&allowed));
    std::fs::remove_dir_all(cache)?;
    Ok(())
}

fn options(cache: &Path, max_layer_bytes: u64) -> FetchOptions {
    FetchOptions {
        cache_dir: Some(cache.to_path_buf()),
        auth_file: None,
        allow_tag: false,
        max_layer_bytes,
        verify_key: None,
    }
}

async fn fetch_error(reference: &str, max_layer_bytes: u64) -> Result<OciError> {
    let parsed = PolicyRef::parse(reference)?;
    let cache = fresh_dir("oci-error-cache");
    let result = pipewarden::oci::fetch(&parsed, &options(&cache, max_layer_bytes)).await;
    let _ = std::fs::remove_dir_all(cache);
    match result {
        Ok(_) => anyhow::bail!("{reference} was fetched"),
        Err(error) => {
            ensure!(
                error.to_string().contains(reference),
                "{error} does not name {reference}"
            );
            Ok(error)
        }
    }
}

#[tokio::test]
async fn each_bad_reference_gets_an_error_naming_it() -> Result<()> {
    let registry = Registry::start().await?;
    let pinned = push_default(&registry, "errors")?;
    let digest = pinned.rsplit_once('@').unwrap().1.to_owned();
    let limit = 64 << 20;

    // Nothing listens on a port just released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let unknown = format!("oci://127.0.0.1:{port}/errors@{digest}");
    let error = fetch_error(&unknown, limit).await?;
    ensure!(matches!(error, OciError::Unreachable { .. }), "{error}");

    let absent = format!("{}@sha256:{}", registry.oci("errors"), "0".repeat(64));
    let error = fetch_error(&absent, limit).await?;
    ensure!(
        matches!(error, OciError::ManifestNotFound { .. }),
        "{error}"
    );

    // A container image is not a policy.
    let layer = fresh_dir("oci-image-layer");
    std::fs::create_dir_all(&layer)?;
    let tarball = layer.join("layer.tar");
    let tarred = Command::new("tar")
        .arg("-cf")
        .arg(&tarball)
        .arg("-C")
        .arg(&layer)
        .arg(".")
        .status()?;
    ensure!(tarred.success());
    let image = format!("{}/image:latest", registry.host);
    let appended = Command::new(tool("crane")?)
        .args([
            "append",
            "--oci-empty-base",
            "-f",
            tarball.to_str().unwrap(),
            "-t",
            &image,
        ])
        .output()?;
    ensure!(
        appended.status.success(),
        "{}",
        String::from_utf8_lossy(&appended.stderr)
    );
    let image_digest = Command::new(tool("crane")?)
        .args(["digest", &image])
        .output()?;
    let image_ref = format!("{}@{}", registry.oci("image"), stdout(&image_digest));
    let error = fetch_error(&image_ref, limit).await?;
    ensure!(matches!(error, OciError::WrongMediaType { .. }), "{error}");
    std::fs::remove_dir_all(layer)?;

    let wasm_len = std::fs::metadata(built_policy("kfp-default"))?.len();
    let error = fetch_error(&pinned, wasm_len - 1).await?;
    ensure!(matches!(error, OciError::TooLarge { .. }), "{error}");

    // The registry serves damaged bytes under the layer's digest.
    let layer_digest = sha256_file(&built_policy("kfp-default"))?;
    let blob = registry.blob_file(&layer_digest);
    let mut bytes = std::fs::read(&blob).with_context(|| registry.log_tail())?;
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&blob, &bytes)?;
    let error = fetch_error(&pinned, limit).await?;
    ensure!(matches!(error, OciError::DigestMismatch { .. }), "{error}");
    Ok(())
}
