//! An SBOM attestation as cosign returns it, read back to the crates it names, and the crates
//! cargo itself resolves for a binary on a target (`cargo tree`) and pins (Cargo.lock).

use std::collections::BTreeSet;
use std::process::Command;

use anyhow::{Context as _, Result, ensure};
use base64::Engine as _;
use pipewarden_tests::deploy_support::repo_path;
use serde_json::Value;

/// `name version` pairs.
pub type Crates = BTreeSet<(String, String)>;

/// The CycloneDX document inside the first line of `cosign verify-attestation`'s output: a
/// DSSE envelope whose payload is an in-toto statement whose predicate is the SBOM.
pub fn predicate(verified: &str) -> Result<Value> {
    let envelope: Value = serde_json::from_str(verified.lines().next().context("no attestation")?)?;
    let payload = envelope["payload"].as_str().context("no payload")?;
    let statement: Value =
        serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(payload)?)?;
    ensure!(
        statement["predicateType"] == "https://cyclonedx.org/bom",
        "predicate type {}",
        statement["predicateType"]
    );
    Ok(statement["predicate"].clone())
}

/// The crates an SBOM lists as components.
pub fn components(sbom: &Value) -> Result<Crates> {
    ensure!(
        sbom["bomFormat"] == "CycloneDX",
        "not CycloneDX: {}",
        sbom["bomFormat"]
    );
    let list = sbom["components"].as_array().context("no components")?;
    Ok(list
        .iter()
        .map(|c| {
            let text = |key: &str| c[key].as_str().unwrap_or_default().to_owned();
            (text("name"), text("version"))
        })
        .collect())
}

/// Every `[[package]]` of Cargo.lock.
pub fn locked() -> Result<Crates> {
    let text = std::fs::read_to_string(repo_path("Cargo.lock"))?;
    let mut found = Crates::new();
    for block in text.split("[[package]]").skip(1) {
        let field = |key: &str| {
            block
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{key} = \"")))
                .map(|v| v.trim_end_matches('"').to_owned())
        };
        if let (Some(name), Some(version)) = (field("name"), field("version")) {
            found.insert((name, version));
        }
    }
    Ok(found)
}

/// The crates `package` links on `target`, as cargo resolves them: normal dependencies, not
/// what only a proc-macro (built for the build machine) uses, the package itself left out.
pub fn linked(package: &str, target: &str) -> Result<Crates> {
    let output = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--locked",
            "-q",
            "-e",
            "normal,no-proc-macro",
            "--prefix",
            "none",
        ])
        .args(["-p", package, "--target", target])
        .current_dir(repo_path(""))
        .output()?;
    ensure!(
        output.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut found = Crates::new();
    for line in String::from_utf8(output.stdout)?.lines() {
        let mut words = line.split_whitespace();
        if let (Some(name), Some(version)) = (words.next(), words.next()) {
            found.insert((name.to_owned(), version.trim_start_matches('v').to_owned()));
        }
    }
    found.retain(|(name, _)| name != package);
    ensure!(found.len() > 10, "cargo tree listed {} crates", found.len());
    Ok(found)
}
