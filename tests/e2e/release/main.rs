//! `make release` against a registry on loopback, then each artifact as a user meets it: the
//! image index holds linux/amd64 and linux/arm64, each image's binary is the released one; the
//! amd64 binaries run (`--version`), the arm64 ones are static AArch64 executables by their ELF
//! headers; every signature and each SBOM attestation verifies with the real cosign and the
//! release's key (and not with another key); each SBOM lists the crates cargo links into the
//! binary, at Cargo.lock's versions; SHA256SUMS matches the files and its signature verifies;
//! the chart installs from oci:// with the policy by digest, and the released binary loads that
//! policy as the Deployment names it; the release YAML passes a server-side dry run.
//!
//! Not part of `make test` (the two release builds alone take longer than its budget):
//! `make test-release` runs it.

mod elf;
mod sbom;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;
use pipewarden_tests::binaries::tool;
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::registry::Registry;
use pipewarden_tests::shared;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

const VERSION: &str = env!("CARGO_PKG_VERSION");
const PLATFORMS: [(&str, &str, u16); 2] = [
    ("amd64", "x86_64-unknown-linux-musl", elf::X86_64),
    ("arm64", "aarch64-unknown-linux-musl", elf::AARCH64),
];

fn run(command: &mut Command) -> Result<String> {
    let output = command
        .output()
        .with_context(|| format!("running {command:?}"))?;
    if !output.status.success() {
        bail!(
            "{command:?} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8(output.stdout)?)
}

/// cosign, offline: no update checks, a TUF root of its own, no password on the test keys.
fn cosign(work: &Path) -> Result<Command> {
    let mut command = Command::new(tool("cosign")?);
    command
        .current_dir(work)
        .env("COSIGN_PASSWORD", "")
        .env("COSIGN_YES", "true")
        .env("TUF_ROOT", work.join("tuf"));
    Ok(command)
}

/// The release's published references, by what they are (`image linux/amd64`, `policy`, ...).
fn references(dist: &Path) -> Result<Vec<(String, String)>> {
    let text = std::fs::read_to_string(dist.join("references.txt"))?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let (what, reference) = line.trim_end().rsplit_once(' ')?;
            Some((what.trim().to_owned(), reference.to_owned()))
        })
        .collect())
}

fn reference<'a>(refs: &'a [(String, String)], what: &str) -> Result<&'a str> {
    refs.iter()
        .find(|(w, _)| w == what)
        .map(|(_, r)| r.as_str())
        .with_context(|| format!("no {what} in references.txt: {refs:?}"))
}

/// `repository@sha256:...` from `repository:tag@sha256:...`.
fn by_digest(reference: &str) -> String {
    let (name, digest) = reference.split_once('@').unwrap_or((reference, ""));
    let slash = name.rfind('/').unwrap_or(0);
    let repository = match name[slash..].split_once(':') {
        Some((path, _)) => format!("{}{path}", &name[..slash]),
        None => name.to_owned(),
    };
    format!("{repository}@{digest}")
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[tokio::test]
#[ignore = "make test-release: two release builds"]
async fn make_release_publishes_signed_multi_arch_artifacts_that_install() -> Result<()> {
    let registry = Registry::start().await?;
    let work = TempDir::new("release")?;
    let (dist, keys, other) = (
        work.path().join("dist"),
        work.path().join("keys"),
        work.path().join("other"),
    );
    for dir in [&keys, &other] {
        std::fs::create_dir_all(dir)?;
        run(cosign(dir)?.arg("generate-key-pair"))?;
    }

    let started = Instant::now();
    let mut make = Command::new("make");
    // What cargo sets for this test (CARGO_PKG_*, CARGO_MANIFEST_DIR, ...) would reach the
    // release build's crates and make cargo build them again: `make release` gets the
    // environment a shell would give it.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if name.starts_with("CARGO_") && !matches!(name.as_str(), "CARGO_HOME" | "CARGO_TARGET_DIR")
        {
            make.env_remove(name);
        }
    }
    let status = make
        .args(["--no-print-directory", "release"])
        .arg(format!("REGISTRY={}/pipewarden", registry.host))
        .arg(format!("DIST={}", dist.display()))
        .arg(format!("COSIGN_KEY={}", keys.join("cosign.key").display()))
        .env("COSIGN_PASSWORD", "")
        .env("TUF_ROOT", work.path().join("tuf"))
        .current_dir(repo_path(""))
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()?;
    ensure!(
        status.success(),
        "make release failed: {}",
        registry.log_tail()
    );
    println!("make release: {:.0?}", started.elapsed());
    let refs = references(&dist)?;

    check_index(&refs, &dist)?;
    check_binaries(&dist)?;
    check_signatures(&refs, &dist, &keys, &other)?;
    check_sboms(&refs, &keys)?;
    check_checksums(&dist, &keys)?;
    install_chart(&refs, &dist, &registry).await?;
    apply_release_yaml(&refs, &dist).await?;
    Ok(())
}

/// The index names both platforms, each the image references.txt names, whose binary is the
/// released one.
fn check_index(refs: &[(String, String)], dist: &Path) -> Result<()> {
    let crane = tool("crane")?;
    let index: Value = serde_json::from_str(&run(
        Command::new(&crane).args(["manifest", reference(refs, "image")?])
    )?)?;
    ensure!(
        index["mediaType"] == "application/vnd.oci.image.index.v1+json",
        "{index}"
    );
    let manifests = index["manifests"].as_array().context("no manifests")?;
    ensure!(manifests.len() == PLATFORMS.len(), "{index}");
    for (arch, _, _) in PLATFORMS {
        let pinned = reference(refs, &format!("image linux/{arch}"))?;
        let digest = pinned.rsplit_once('@').context("a digest")?.1;
        let entry = manifests
            .iter()
            .find(|m| m["digest"] == digest)
            .with_context(|| format!("{pinned} is not in the index: {index}"))?;
        ensure!(
            entry["platform"]["os"] == "linux" && entry["platform"]["architecture"] == arch,
            "{entry}"
        );
        let layer = work_file(dist, &format!("layer-{arch}.tar"));
        run(Command::new(&crane).args(["export", pinned]).arg(&layer))?;
        let bytes = tar_member(&layer, "usr/bin/pipewarden")?;
        let released = std::fs::read(dist.join(format!("pipewarden-linux-{arch}")))?;
        ensure!(
            sha256_hex(&bytes) == sha256_hex(&released),
            "the linux/{arch} image's binary is not the released pipewarden-linux-{arch}"
        );
        std::fs::remove_file(&layer)?;
        println!("index: linux/{arch} {digest}, its /usr/bin/pipewarden is the released binary");
    }
    Ok(())
}

fn work_file(dist: &Path, name: &str) -> PathBuf {
    dist.with_file_name(name)
}

/// One member of a tar file, as bytes.
fn tar_member(tarball: &Path, member: &str) -> Result<Vec<u8>> {
    let output = Command::new("tar")
        .arg("-xOf")
        .arg(tarball)
        .arg(member)
        .output()?;
    ensure!(
        output.status.success(),
        "no {member} in {}",
        tarball.display()
    );
    Ok(output.stdout)
}

/// Static executables for the platform their name gives; the ones for this machine run.
fn check_binaries(dist: &Path) -> Result<()> {
    println!(
        "{:<28} {:>10} {:>8} {:>8}  RUNS",
        "BINARY", "BYTES", "MACHINE", "STATIC"
    );
    for (arch, _, machine) in PLATFORMS {
        for name in ["pipewarden", "kfp-compile"] {
            let path = dist.join(format!("{name}-linux-{arch}"));
            let bytes = std::fs::read(&path)?;
            let header = elf::read(&bytes).with_context(|| path.display().to_string())?;
            ensure!(header.machine == machine, "{}: {header:?}", path.display());
            ensure!(
                !header.interpreter,
                "{} is dynamically linked",
                path.display()
            );
            let runs = if cfg!(target_arch = "x86_64") == (arch == "amd64") {
                runs_here(name, &path)?
            } else {
                "(another architecture: ELF header only)".to_owned()
            };
            println!(
                "{:<28} {:>10} {:>8} {:>8}  {runs}",
                format!("{name}-linux-{arch}"),
                bytes.len(),
                header.machine,
                "yes"
            );
        }
    }
    Ok(())
}

/// Runs a released binary of this machine's architecture: pipewarden's `--version`, and
/// kfp-compile on one of KFP 2.17.0's own test pipelines, whose output must equal the
/// Workflow KFP 2.17.0's compiler wrote for it (as parsed values).
fn runs_here(name: &str, path: &Path) -> Result<String> {
    if name == "pipewarden" {
        let version = run(Command::new(path).arg("--version"))?;
        ensure!(
            version.starts_with(&format!("pipewarden {VERSION} ")),
            "pipewarden --version: {version}"
        );
        return Ok(version.trim().to_owned());
    }
    let case = "component_with_env_variable";
    let data = repo_path("tests/data/upstream/kfp-2.17.0");
    let compiled = run(Command::new(path).arg(data.join(format!("ir/{case}.yaml"))))?;
    let ours: Value = serde_json::from_str(&compiled)?;
    let upstream: Value = serde_yaml::from_str(&std::fs::read_to_string(
        data.join(format!("compiled/{case}.yaml")),
    )?)?;
    ensure!(
        ours == upstream,
        "kfp-compile's {case} differs from KFP 2.17.0's"
    );
    Ok(format!("{case}: equal to KFP 2.17.0's compile"))
}

/// `cosign verify` (and `verify-attestation`) with the release's key passes on every signed
/// reference, and fails with another key.
fn check_signatures(
    refs: &[(String, String)],
    dist: &Path,
    keys: &Path,
    other: &Path,
) -> Result<()> {
    let public = dist.join("cosign.pub");
    ensure!(
        std::fs::read(&public)? == std::fs::read(keys.join("cosign.pub"))?,
        "dist/cosign.pub is not the signing key's"
    );
    let mut signed: Vec<String> = [
        "image",
        "image linux/amd64",
        "image linux/arm64",
        "policy",
        "chart",
    ]
    .iter()
    .map(|what| reference(refs, what).map(|r| by_digest(r.trim_start_matches("oci://"))))
    .collect::<Result<_>>()?;
    signed.dedup();
    let verify = |key: &Path, reference: &str| -> Result<String> {
        run(cosign(keys)?
            .args([
                "verify",
                "--insecure-ignore-tlog=true",
                "--allow-http-registry",
                "--key",
            ])
            .arg(key)
            .arg(reference))
    };
    for reference in &signed {
        verify(&public, reference)?;
        ensure!(
            verify(&other.join("cosign.pub"), reference).is_err(),
            "{reference} verified with another key"
        );
        println!("signature verified: {reference}");
    }
    Ok(())
}

/// Each platform image carries its SBOM as a verified attestation; it lists every crate cargo
/// links into pipewarden for that target, each at the version Cargo.lock pins.
fn check_sboms(refs: &[(String, String)], keys: &Path) -> Result<()> {
    let locked = sbom::locked()?;
    for (arch, target, _) in PLATFORMS {
        let image = by_digest(reference(refs, &format!("image linux/{arch}"))?);
        let verified = run(cosign(keys)?
            .args([
                "verify-attestation",
                "--type",
                "cyclonedx",
                "--insecure-ignore-tlog=true",
                "--allow-http-registry",
                "--key",
            ])
            .arg(keys.join("cosign.pub"))
            .arg(&image))?;
        let listed = sbom::components(&sbom::predicate(&verified)?)?;
        let unlocked: Vec<_> = listed.difference(&locked).collect();
        ensure!(
            unlocked.is_empty(),
            "SBOM crates not in Cargo.lock: {unlocked:?}"
        );
        let linked = sbom::linked("pipewarden", target)?;
        let missing: Vec<_> = linked.difference(&listed).collect();
        ensure!(
            missing.is_empty(),
            "linux/{arch} SBOM lacks crates cargo links: {missing:?}"
        );
        println!(
            "SBOM linux/{arch}: attestation verified, {} crates listed, all in Cargo.lock; the {} cargo links for {target} all listed",
            listed.len(),
            linked.len()
        );
    }
    Ok(())
}

/// Every line of SHA256SUMS matches its file; its signature verifies.
fn check_checksums(dist: &Path, keys: &Path) -> Result<()> {
    let sums = std::fs::read_to_string(dist.join("SHA256SUMS"))?;
    let mut count = 0;
    for line in sums.lines() {
        let (sum, file) = line.split_once("  ").context("a sha256sum line")?;
        ensure!(
            sha256_hex(&std::fs::read(dist.join(file))?) == sum,
            "{file}: checksum differs"
        );
        count += 1;
    }
    ensure!(count >= 7, "SHA256SUMS lists {count} files");
    run(cosign(keys)?
        .args(["verify-blob", "--insecure-ignore-tlog=true", "--key"])
        .arg(dist.join("cosign.pub"))
        .arg("--signature")
        .arg(dist.join("SHA256SUMS.sig"))
        .arg(dist.join("SHA256SUMS")))?;
    println!("SHA256SUMS: {count} files match, signature verified");
    Ok(())
}

fn env_of(deployment: &Deployment, name: &str) -> Option<String> {
    let container = &deployment.spec.as_ref()?.template.spec.as_ref()?.containers[0];
    container
        .env
        .as_ref()?
        .iter()
        .find(|var| var.name == name)?
        .value
        .clone()
}

/// The chart from oci:// (the release's defaults: image and policy by digest) installs on the
/// local control plane; the released binary loads the policy the Deployment names, checked
/// with the key the chart ships.
async fn install_chart(refs: &[(String, String)], dist: &Path, registry: &Registry) -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let release = format!("pipewarden-{namespace}");
    let kubeconfig = control_plane.kubeconfig().display().to_string();
    let chart = format!("oci://{}/pipewarden/charts/pipewarden", registry.host);
    let settings = format!("settings.from=deployment/{namespace}/ml-pipeline");
    run_helm(&[
        "install",
        &release,
        &chart,
        "--version",
        VERSION,
        "--plain-http",
        "-n",
        &namespace,
        "--kubeconfig",
        &kubeconfig,
        "--set",
        &settings,
    ])?;
    let deployment = Api::<Deployment>::namespaced(client.clone(), &namespace)
        .get(&release)
        .await?;
    let image = deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .map(|s| s.containers[0].image.clone());
    let want_image = by_digest(reference(refs, "image")?);
    ensure!(
        image.flatten().as_deref() == Some(want_image.as_str()),
        "the chart runs {:?}, not {want_image}",
        deployment.spec.as_ref().map(|s| &s.template)
    );
    let policy = env_of(&deployment, "PIPEWARDEN_POLICY").context("no PIPEWARDEN_POLICY")?;
    ensure!(
        policy == reference(refs, "policy")?,
        "the chart's policy is {policy}"
    );
    let key_map =
        Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), &namespace)
            .get(&format!("{release}-policy-verify-key"))
            .await?;
    let key = key_map
        .data
        .and_then(|d| d.get("cosign.pub").cloned())
        .context("no cosign.pub")?;
    let key_file = work_file(dist, "chart-cosign.pub");
    std::fs::write(&key_file, key)?;
    let cache = work_file(dist, "cache");
    run(
        Command::new(dist.join(format!("pipewarden-linux-{}", host_arch())))
            .args(["precompile", "--policy", &policy, "--policy-verify-key"])
            .arg(&key_file)
            .arg("--cache-dir")
            .arg(&cache),
    )?;
    println!(
        "chart {chart} {VERSION}: installed in {namespace}, image and policy by digest; the released binary loaded {policy}, signature checked"
    );
    run_helm(&[
        "uninstall",
        &release,
        "-n",
        &namespace,
        "--kubeconfig",
        &kubeconfig,
    ])?;
    Ok(())
}

fn host_arch() -> &'static str {
    if cfg!(target_arch = "x86_64") {
        "amd64"
    } else {
        "arm64"
    }
}

/// The release YAML names the released image and policy by digest, and passes a server-side
/// dry run.
async fn apply_release_yaml(refs: &[(String, String)], dist: &Path) -> Result<()> {
    let text = std::fs::read_to_string(dist.join("pipewarden.yaml"))?;
    for what in ["image", "policy"] {
        let wanted = match what {
            "image" => by_digest(reference(refs, what)?),
            _ => reference(refs, what)?.to_owned(),
        };
        ensure!(
            text.contains(&wanted),
            "pipewarden.yaml does not name {wanted}"
        );
    }
    let client = shared().await?.client()?;
    ensure_namespace(&client, "kubeflow").await?;
    let objects = documents(&text)?;
    let answers = apply(&client, &objects, true).await?;
    ensure!(answers.len() == objects.len());
    println!(
        "pipewarden.yaml: {} objects, image and policy by digest, dry-run applied",
        objects.len()
    );
    Ok(())
}
