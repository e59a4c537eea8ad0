//! The container image as `make image` assembles it (`image/assemble.sh`), pushed to a real
//! registry on loopback, pulled back layer by layer, unpacked, and run from the unpacked root.
//! Also: the image agrees with the Containerfile's last stage, and the Deployment runs the
//! reference `make image` pushes by default.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail, ensure};
use pipewarden_tests::binaries::tool;
use pipewarden_tests::deploy_support::{pipewarden_binary, repo_path};
use pipewarden_tests::registry::Registry;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

fn run(command: &mut Command) -> Result<Vec<u8>> {
    let output = command
        .output()
        .with_context(|| format!("running {command:?}"))?;
    if !output.status.success() {
        bail!(
            "{command:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(output.stdout)
}

fn crane(args: &[&str]) -> Result<Vec<u8>> {
    run(Command::new(tool("crane")?).args(args))
}

fn json(bytes: &[u8]) -> Result<Value> {
    serde_json::from_slice(bytes).context("parsing registry JSON")
}

/// Pulls every layer of `reference` by digest, checks each blob against its digest, and
/// unpacks them in order into `root`.
fn pull_and_unpack(reference: &str, repository: &str, root: &Path) -> Result<Value> {
    let manifest = json(&crane(&["manifest", reference])?)?;
    ensure!(
        manifest["mediaType"] == "application/vnd.oci.image.manifest.v1+json",
        "manifest: {manifest}"
    );
    let layers = manifest["layers"].as_array().context("no layers")?;
    ensure!(layers.len() == 1, "one layer expected: {manifest}");
    for layer in layers {
        let digest = layer["digest"].as_str().context("layer digest")?;
        let blob = crane(&["blob", &format!("{repository}@{digest}")])?;
        let actual = format!("sha256:{}", hex::encode(Sha256::digest(&blob)));
        ensure!(actual == digest, "layer {digest} pulled as {actual}");
        let tarball = root.with_extension(digest.replace(':', "-"));
        std::fs::write(&tarball, &blob)?;
        run(Command::new("tar")
            .arg("-xzf")
            .arg(&tarball)
            .arg("-C")
            .arg(root))?;
    }
    json(&crane(&["config", reference])?)
}

/// `COPY` destinations, `USER` and `ENTRYPOINT` of the Containerfile's last stage.
fn containerfile_last_stage() -> Result<(Vec<String>, String, String)> {
    let text = std::fs::read_to_string(repo_path("Containerfile"))?;
    let last = text
        .rsplit_once("\nFROM ")
        .map(|(_, stage)| stage)
        .context("Containerfile has no second stage")?;
    let (mut copies, mut user, mut entrypoint) = (Vec::new(), String::new(), String::new());
    for line in last.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.first().copied() {
            Some("COPY") => copies.push(words.last().copied().unwrap_or_default().to_owned()),
            Some("USER") => user = words[1..].join(" "),
            Some("ENTRYPOINT") => entrypoint = words[1..].join(" "),
            _ => {}
        }
    }
    Ok((copies, user, entrypoint))
}

#[tokio::test]
async fn the_image_round_trips_through_a_registry_and_its_binary_runs() -> Result<()> {
    let registry = Registry::start().await?;
    let binary: PathBuf = pipewarden_binary()?;
    let tagged = format!("{}/pipewarden:e2e", registry.host);
    let pushed = run(Command::new(repo_path("image/assemble.sh"))
        .arg(&binary)
        .arg(&tagged)
        .env("CRANE", tool("crane")?)
        // The test host's binary is the workspace's (dynamic) debug build.
        .env("ALLOW_DYNAMIC", "1"))
    .with_context(|| registry.log_tail())?;
    let pushed = String::from_utf8(pushed)?.trim().to_owned();
    let repository = format!("{}/pipewarden", registry.host);
    ensure!(
        pushed.starts_with(&format!("{repository}@sha256:")),
        "assemble.sh printed {pushed:?}"
    );
    let tag_digest = String::from_utf8(crane(&["digest", &tagged])?)?;
    ensure!(
        pushed.ends_with(tag_digest.trim()),
        "{tagged} is {tag_digest}, not {pushed}"
    );

    let work = std::env::temp_dir().join(format!("pipewarden-image-{}", std::process::id()));
    let root = work.join("root");
    std::fs::create_dir_all(&root)?;
    let config = pull_and_unpack(&pushed, &repository, &root)?;

    ensure!(
        config["os"] == "linux" && config["architecture"] == "amd64",
        "{config}"
    );
    ensure!(config["config"]["User"] == "65532:65532", "{config}");
    ensure!(
        config["config"]["Entrypoint"] == serde_json::json!(["/usr/bin/pipewarden"]),
        "{config}"
    );
    let passwd = std::fs::read_to_string(root.join("etc/passwd"))?;
    ensure!(passwd.contains(":65532:65532:"), "passwd: {passwd}");
    let certs = std::fs::read_to_string(root.join("etc/ssl/certs/ca-certificates.crt"))?;
    ensure!(
        certs.contains("BEGIN CERTIFICATE"),
        "no CA certificates in the image"
    );

    let (copies, user, entrypoint) = containerfile_last_stage()?;
    for destination in &copies {
        let path = root.join(destination.trim_start_matches('/'));
        ensure!(
            path.exists(),
            "Containerfile copies {destination}; the image lacks it"
        );
    }
    ensure!(user == "65532:65532", "Containerfile USER {user}");
    ensure!(
        entrypoint == r#"["/usr/bin/pipewarden"]"#,
        "Containerfile ENTRYPOINT {entrypoint}"
    );

    let unpacked = run(Command::new(root.join("usr/bin/pipewarden")).arg("--version"))?;
    let original = run(Command::new(&binary).arg("--version"))?;
    ensure!(
        unpacked == original && unpacked.starts_with(b"pipewarden "),
        "unpacked binary says {:?}",
        String::from_utf8_lossy(&unpacked)
    );
    std::fs::remove_dir_all(&work)?;
    Ok(())
}

#[test]
fn the_deployment_runs_the_image_make_image_pushes_by_default() -> Result<()> {
    let reference = run(Command::new("make")
        .args(["-s", "--no-print-directory", "image-ref"])
        .current_dir(repo_path("")))?;
    let reference = String::from_utf8(reference)?.trim().to_owned();
    let deployment = std::fs::read_to_string(repo_path("deploy/base/deployment.yaml"))?;
    let deployment: Value = serde_yaml::from_str(&deployment)?;
    let image = &deployment["spec"]["template"]["spec"]["containers"][0]["image"];
    ensure!(
        *image == reference,
        "Deployment runs {image}, `make image` pushes {reference}"
    );
    Ok(())
}
