//! The README's shipping blocks (install from the image, push and pin, verify, monitoring)
//! stay runnable: every `make` target dry-runs, every overlay and component `render.sh` is
//! given exists, and every flag given to `pipewarden` and `cosign` is one their `--help` lists.
//! What the commands do is tested by image_registry, policy_oci, policy_signatures and
//! deploy_variants.

use std::process::Command;

use anyhow::{Context as _, Result, bail, ensure};
use pipewarden_tests::binaries::tool;
use pipewarden_tests::deploy_support::{pipewarden_binary, repo_path};

/// The `sh` blocks between the "Install from the image" heading and the RBAC paragraph.
fn shipping_blocks() -> Result<Vec<String>> {
    let readme = std::fs::read_to_string(repo_path("README.md"))?;
    let start = readme
        .find("### Install from the image")
        .context("no install section")?;
    let end = start
        + readme[start..]
            .find("**RBAC.**")
            .context("no RBAC paragraph")?;
    let blocks: Vec<String> = readme[start..end]
        .split("```sh\n")
        .skip(1)
        .filter_map(|rest| rest.split_once("```").map(|(block, _)| block.to_owned()))
        .collect();
    ensure!(
        blocks.len() == 4,
        "expected 4 blocks, found {}",
        blocks.len()
    );
    Ok(blocks)
}

/// Fails unless `program <subcommands> --help` lists every `--flag` in `words`.
fn flags_known(program: &std::path::Path, words: &[&str]) -> Result<()> {
    let subcommands: Vec<&str> = words
        .iter()
        .take_while(|w| !w.starts_with('-') && !w.contains('/') && !w.contains('$'))
        .copied()
        .collect();
    let output = Command::new(program)
        .args(&subcommands)
        .arg("--help")
        .output()?;
    let help = String::from_utf8_lossy(&output.stdout);
    ensure!(
        output.status.success(),
        "{} {subcommands:?} --help failed",
        program.display()
    );
    for flag in words.iter().filter(|w| w.starts_with("--")) {
        let name = flag.split('=').next().unwrap_or(flag);
        ensure!(
            help.contains(name),
            "{} {subcommands:?} has no {name}",
            program.display()
        );
    }
    Ok(())
}

fn check_command(command: &str) -> Result<()> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let (env, words): (Vec<&str>, Vec<&str>) = {
        let split = words
            .iter()
            .take_while(|w| w.contains('=') && !w.starts_with('-'))
            .count();
        (words[..split].to_vec(), words[split..].to_vec())
    };
    match words.first().copied() {
        Some("make") => {
            let output = Command::new("make")
                .arg("-n")
                .args(&words[1..])
                .current_dir(repo_path(""))
                .output()?;
            ensure!(
                output.status.success(),
                "make -n {:?}: {}",
                &words[1..],
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Some("deploy/render.sh") => {
            let overlay = words.get(1).copied().unwrap_or("kubeflow");
            ensure!(
                repo_path(&format!("deploy/overlays/{overlay}/kustomization.yaml")).is_file(),
                "no overlay {overlay}"
            );
            for component in env.iter().filter_map(|e| e.strip_prefix("COMPONENTS=")) {
                let path = repo_path(&format!("deploy/components/{component}/kustomization.yaml"));
                ensure!(path.is_file(), "no component {component}");
            }
        }
        Some("pipewarden") => flags_known(&pipewarden_binary()?, &words[1..])?,
        Some("cosign") => flags_known(&tool("cosign")?, &words[1..])?,
        other => bail!("a README command this test does not know: {other:?}"),
    }
    Ok(())
}

#[test]
fn every_shipping_block_names_targets_files_and_flags_that_exist() -> Result<()> {
    for block in shipping_blocks()? {
        for line in block.lines().filter(|l| !l.trim().is_empty()) {
            // What a pipe hands on to is the user's cluster tool, not ours.
            let command = line.split(" | ").next().unwrap_or(line);
            check_command(command).with_context(|| format!("README: {line}"))?;
        }
    }
    Ok(())
}
