//! The commands the README and `docs/` give stay runnable: in every `sh` block, each `make`
//! target dry-runs, each overlay and component given to `deploy/render.sh` exists, each flag
//! given to `pipewarden` (or `cargo run -p pipewarden --`) and `cosign` is one their `--help`
//! lists, and each value a `helm` command sets on the chart is one its values.yaml has. Other
//! programs (kubectl, curl) are the reader's and are not run.
//! What the commands do is tested where the feature is (image_registry, policy_oci, variants).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, ensure};
use pipewarden_tests::binaries::tool;
use pipewarden_tests::deploy_support::{pipewarden_binary, repo_path};

/// README.md and every Markdown file under docs/.
fn documents() -> Result<Vec<PathBuf>> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                walk(&path, found)?;
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
        Ok(())
    }
    let mut found = vec![repo_path("README.md")];
    walk(&repo_path("docs"), &mut found)?;
    found.sort();
    Ok(found)
}

/// The commands of every ```sh block: continuation lines joined, comments and what a pipe or
/// `&&` hands on to dropped.
fn commands(markdown: &str) -> Vec<String> {
    let mut commands = Vec::new();
    for block in markdown.split("```sh\n").skip(1) {
        let Some((block, _)) = block.split_once("```") else {
            continue;
        };
        let joined = block.replace("\\\n", " ");
        for line in joined.lines() {
            let line = line.split(" # ").next().unwrap_or(line).trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let first = line.split(" | ").next().unwrap_or(line);
            let first = first.split(" && ").next().unwrap_or(first);
            commands.push(first.trim().to_owned());
        }
    }
    commands
}

/// Fails unless `program <subcommands> --help` lists every `--flag` in `words`.
fn flags_known(program: &Path, words: &[&str]) -> Result<()> {
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

/// Fails unless each `--set`/`--set-file` key in `words` is a path in the chart's values.yaml
/// (`[N]` list indices skipped; under a map such as `monitoring.labels` any key goes).
fn chart_values_known(words: &[&str]) -> Result<()> {
    let path = repo_path("deploy/helm/pipewarden/values.yaml");
    let values: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(path)?)?;
    for pair in words.windows(2) {
        if !matches!(pair[0], "--set" | "--set-file") {
            continue;
        }
        let key = pair[1].split('=').next().unwrap_or_default();
        let mut at = &values;
        for part in key.split('.') {
            let name = part.split('[').next().unwrap_or(part);
            if at.as_mapping().is_some_and(|m| m.is_empty()) {
                break;
            }
            at = at
                .get(name)
                .with_context(|| format!("the chart has no value {key}"))?;
        }
    }
    Ok(())
}

/// Checks one command; false when it is not one of ours.
fn check(command: &str) -> Result<bool> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let split = words
        .iter()
        .take_while(|w| w.contains('=') && !w.starts_with('-'))
        .count();
    let (env, words) = (&words[..split], &words[split..]);
    match words {
        ["make", targets @ ..] => {
            let output = Command::new("make")
                .arg("-n")
                .args(targets)
                .current_dir(repo_path(""))
                .output()?;
            ensure!(
                output.status.success(),
                "make -n {targets:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        ["deploy/render.sh", rest @ ..] => {
            let overlay = rest.first().copied().unwrap_or("kubeflow");
            ensure!(
                repo_path(&format!("deploy/overlays/{overlay}/kustomization.yaml")).is_file(),
                "no overlay {overlay}"
            );
            for list in env.iter().filter_map(|e| e.strip_prefix("COMPONENTS=")) {
                for component in list.trim_matches('"').split_whitespace() {
                    let path =
                        repo_path(&format!("deploy/components/{component}/kustomization.yaml"));
                    ensure!(path.is_file(), "no component {component}");
                }
            }
        }
        ["pipewarden", rest @ ..] => flags_known(&pipewarden_binary()?, rest)?,
        ["cargo", "run", rest @ ..] if rest.contains(&"pipewarden") => {
            let after = rest.iter().position(|w| *w == "--").map_or(0, |i| i + 1);
            flags_known(&pipewarden_binary()?, &rest[after..])?
        }
        ["cosign", rest @ ..] => flags_known(&tool("cosign")?, rest)?,
        ["helm", rest @ ..] if rest.contains(&"deploy/helm/pipewarden") => {
            chart_values_known(rest)?
        }
        ["deploy/helm/add-policy.sh", ..] => {
            ensure!(
                repo_path("deploy/helm/add-policy.sh").is_file(),
                "no add-policy.sh"
            )
        }
        _ => return Ok(false),
    }
    Ok(true)
}

#[test]
fn every_command_the_docs_give_names_targets_files_and_flags_that_exist() -> Result<()> {
    let mut total = 0;
    println!("{:<40} {:>7} {:>12}", "DOCUMENT", "CHECKED", "NOT OURS");
    for path in documents()? {
        let text = std::fs::read_to_string(&path)?;
        let (mut checked, mut skipped) = (0, 0);
        for command in commands(&text) {
            let name = path.strip_prefix(repo_path("")).unwrap_or(&path).display();
            match check(&command).with_context(|| format!("{name}: {command}"))? {
                true => checked += 1,
                false => skipped += 1,
            }
        }
        let name = path.strip_prefix(repo_path(""))?.display().to_string();
        println!("{name:<40} {checked:>7} {skipped:>12}");
        total += checked;
    }
    // The install guide alone gives a dozen; fewer means the blocks moved out of sight.
    ensure!(total >= 12, "only {total} commands checked");
    Ok(())
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (outside code blocks).
fn anchors(markdown: &str) -> Vec<String> {
    let mut fenced = false;
    let mut found = Vec::new();
    for line in markdown.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            found.push(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

#[test]
fn every_relative_link_in_the_docs_leads_to_a_file_and_heading_that_exist() -> Result<()> {
    let mut broken = Vec::new();
    let mut checked = 0;
    for path in documents()? {
        let text = std::fs::read_to_string(&path)?;
        let name = path.strip_prefix(repo_path(""))?.display().to_string();
        for link in text
            .split("](")
            .skip(1)
            .filter_map(|rest| rest.split(')').next())
        {
            if link.contains("://") || link.starts_with('#') && link.len() < 2 {
                continue;
            }
            let (file, heading) = link.split_once('#').unwrap_or((link, ""));
            let target = match file {
                "" => path.clone(),
                file => path.parent().context("a parent")?.join(file),
            };
            checked += 1;
            // Read as bytes: a link may lead to a picture.
            let Ok(target_text) =
                std::fs::read(&target).map(|b| String::from_utf8_lossy(&b).into_owned())
            else {
                if !target.is_dir() {
                    broken.push(format!("{name}: {link} (no such file)"));
                }
                continue;
            };
            if !heading.is_empty() && !anchors(&target_text).contains(&heading.to_owned()) {
                broken.push(format!("{name}: {link} (no such heading)"));
            }
        }
    }
    println!("{checked} relative links checked");
    ensure!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    Ok(())
}
