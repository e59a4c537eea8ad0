//! Keyed cosign signatures on policy artifacts, signed by the real `cosign` on a real registry:
//! `--policy-verify-key` loads a policy signed with its key, and refuses one that is unsigned,
//! signed with another key, changed after signing (the signature names another digest), or
//! copied to another repository (the signature names the one it was made for); one signed only
//! in cosign's bundle format (an OCI referrer) is refused naming the format.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context as _, Result, ensure};
use pipewarden_tests::binaries::tool;
use pipewarden_tests::deploy_support::{TempDir, built_policy, pipewarden_binary};
use pipewarden_tests::registry::Registry;

fn run(command: &mut Command) -> Result<Output> {
    let output = command
        .output()
        .with_context(|| format!("running {command:?}"))?;
    ensure!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(output)
}

fn cosign(dir: &Path) -> Result<Command> {
    let mut command = Command::new(tool("cosign")?);
    // An empty key password, no transparency log, no update checks: all offline.
    command
        .current_dir(dir)
        .env("COSIGN_PASSWORD", "")
        .env("COSIGN_YES", "true")
        .env("TUF_ROOT", dir.join("tuf"));
    Ok(command)
}

/// A cosign key pair in `dir/name.key` and `dir/name.pub`.
fn key_pair(dir: &Path, name: &str) -> Result<PathBuf> {
    let keys = dir.join(name);
    std::fs::create_dir_all(&keys)?;
    run(cosign(&keys)?.args(["generate-key-pair"]))?;
    Ok(keys)
}

fn sign(dir: &Path, keys: &Path, pinned: &str) -> Result<()> {
    sign_as(dir, keys, pinned, false)
}

/// Signs with cosign; `bundle`: in the Sigstore bundle format, attached as an OCI referrer
/// (what cosign v3 does by default) instead of the classic `.sig` tag.
fn sign_as(dir: &Path, keys: &Path, pinned: &str, bundle: bool) -> Result<()> {
    let key = keys.join("cosign.key");
    run(cosign(dir)?.args([
        "sign",
        "--key",
        key.to_str().unwrap(),
        "--tlog-upload=false",
        "--allow-http-registry",
        &format!("--new-bundle-format={bundle}"),
        pinned.trim_start_matches("oci://"),
    ]))?;
    Ok(())
}

fn push(registry: &Registry, policy: &str, target: &str) -> Result<String> {
    let wasm = built_policy(policy);
    let output = run(Command::new(pipewarden_binary()?).args([
        "policy",
        "push",
        wasm.to_str().unwrap(),
        &format!("{}:{target}", registry.oci("signed")),
    ]))?;
    Ok(String::from_utf8(output.stdout)?.trim().to_owned())
}

/// `pipewarden precompile` of `pinned` with `key`, in a fresh cache; its stderr when refused.
fn load(dir: &Path, pinned: &str, keys: &Path) -> Result<Result<(), String>> {
    let cache = tempfile_dir(dir, "cache")?;
    let output = Command::new(pipewarden_binary()?)
        .args(["precompile", "--policy", pinned, "--cache-dir"])
        .arg(&cache)
        .arg("--policy-verify-key")
        .arg(keys.join("cosign.pub"))
        .output()?;
    // A refused load may not have created the cache.
    let _ = std::fs::remove_dir_all(&cache);
    Ok(if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    })
}

fn tempfile_dir(dir: &Path, name: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    let _ = std::fs::remove_dir_all(&path);
    Ok(path)
}

#[tokio::test]
async fn only_a_policy_signed_with_the_key_loads() -> Result<()> {
    let registry = Registry::start().await?;
    let work = TempDir::new("cosign")?;
    let dir = work.path();
    let ours = key_pair(dir, "ours")?;
    let theirs = key_pair(dir, "theirs")?;
    let pinned = push(&registry, "kfp-default", "signed")?;

    let unsigned = load(dir, &pinned, &ours)?.expect_err("an unsigned policy loaded");
    ensure!(
        unsigned.contains("is not signed") && unsigned.contains(&pinned),
        "{unsigned}"
    );

    sign(dir, &ours, &pinned)?;
    let signed = load(dir, &pinned, &ours)?;
    ensure!(signed.is_ok(), "the signed policy was refused: {signed:?}");

    let wrong_key = load(dir, &pinned, &theirs)?.expect_err("loaded with another key");
    ensure!(
        wrong_key.contains("no signature verifies") && wrong_key.contains(&pinned),
        "{wrong_key}"
    );

    // Another artifact carrying the first one's signature: signed, but not this digest.
    let other = push(&registry, "kfp-downstream-example", "tampered")?;
    let digest = |pinned: &str| pinned.rsplit_once("@sha256:").unwrap().1.to_owned();
    let signatures =
        |pinned: &str| format!("{}/signed:sha256-{}.sig", registry.host, digest(pinned));
    run(Command::new(tool("crane")?).args(["copy", &signatures(&pinned), &signatures(&other)]))?;
    let tampered = load(dir, &other, &ours)?.expect_err("a re-signed artifact loaded");
    ensure!(
        tampered.contains("the signature is for") && tampered.contains(&other),
        "{tampered}"
    );

    // The signed artifact and its signature copied to another repository: the signature names
    // the repository it was made for (identity.docker-reference), so the copy does not load.
    let mirror = format!("{}/mirror", registry.host);
    let crane =
        |from: String, to: String| run(Command::new(tool("crane")?).args(["copy", &from, &to]));
    crane(
        pinned.trim_start_matches("oci://").to_owned(),
        format!("{mirror}:copied"),
    )?;
    crane(
        signatures(&pinned),
        format!("{mirror}:sha256-{}.sig", digest(&pinned)),
    )?;
    let mirrored = format!("oci://{mirror}@sha256:{}", digest(&pinned));
    let copied = load(dir, &mirrored, &ours)?.expect_err("a copy in another repository loaded");
    ensure!(
        copied.contains("was made for") && copied.contains("/signed"),
        "{copied}"
    );

    // Signed only in the bundle format: refused, saying which format and how to sign instead.
    // An artifact of its own: the copied signature above already sits beside the downstream one.
    let bundled = push(&registry, "hostile-policy", "bundled")?;
    sign_as(dir, &ours, &bundled, true)?;
    let refused = load(dir, &bundled, &ours)?.expect_err("a bundle-only policy loaded");
    ensure!(
        refused.contains("bundle format") && refused.contains("--new-bundle-format=false"),
        "{refused}"
    );
    Ok(())
}
