//! The README's first-run figure for `make demo` stays true: it was measured no earlier than
//! the last commit that changed what `make demo` builds, and docs/benchmarks.md quotes the
//! same run. Dates are days (the README gives one), so a change on the day of the
//! measurement passes.

use std::process::Command;

use anyhow::{Context as _, Result, bail, ensure};
use pipewarden_tests::repo::repo_path;

/// What sets how much `make demo` compiles: its recipe, the Go pins of etcd and
/// kube-apiserver and their build script, the crates and profiles. Source edits are left
/// out: nearly every commit makes one, and they change what is compiled, not how much.
const DEMO_BUILD_INPUTS: &[&str] = &[
    "Makefile",
    "Cargo.toml",
    "Cargo.lock",
    "host/Cargo.toml",
    "tests/Cargo.toml",
    "policies/kfp-default/Cargo.toml",
    "policies/kfp-compiler/Cargo.toml",
    "tests/control-plane/build.sh",
    "tests/control-plane/etcd",
    "tests/control-plane/kube-apiserver",
];

/// `text` on one line, its line breaks and runs of spaces one space each.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `(total, date)` from "`make demo` reached its last line in 7 min 5 s (2026-12-02)".
fn readme_figure(readme: &str) -> Result<(String, String)> {
    let flat = flat(readme);
    let marker = "`make demo` reached its last line in ";
    let rest = &flat[flat
        .find(marker)
        .context("README.md quotes no first-run figure")?
        + marker.len()..];
    let (total, rest) = rest.split_once(" (").context("the figure has no date")?;
    let date = rest.get(..10).context("the figure's date is cut short")?;
    ensure!(is_date(date), "not a date: {date:?}");
    Ok((total.to_owned(), date.to_owned()))
}

fn is_date(text: &str) -> bool {
    text.len() == 10
        && text.char_indices().all(|(i, c)| {
            if i == 4 || i == 7 {
                c == '-'
            } else {
                c.is_ascii_digit()
            }
        })
}

fn git(args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo_path("."))
        .args(args)
        .output()
        .context("git not found: install git (Debian: apt-get install git)")?;
    ensure!(
        out.status.success(),
        "git {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?)
}

/// The latest author day (kept when a commit is rebased) of the commits that changed an
/// input, skipping a shallow clone's boundary commits (they show every file as added); `None`
/// when only those touched the inputs or the sources are no git checkout.
fn last_build_change() -> Result<Option<(String, String)>> {
    if git(&["rev-parse", "--is-inside-work-tree"]).is_err() {
        return Ok(None);
    }
    let shallow_file = repo_path(".").join(git(&["rev-parse", "--git-path", "shallow"])?.trim());
    let shallow = std::fs::read_to_string(shallow_file).unwrap_or_default();
    let mut args = vec!["log", "--format=%H %as", "--"];
    args.extend(DEMO_BUILD_INPUTS);
    let mut latest: Option<(String, String)> = None;
    for line in git(&args)?.lines() {
        let (commit, day) = line.split_once(' ').context("git log line")?;
        let boundary = shallow.lines().any(|b| b == commit);
        if !boundary && latest.as_ref().is_none_or(|(_, seen)| day > seen.as_str()) {
            latest = Some((commit[..8].to_owned(), day.to_owned()));
        }
    }
    Ok(latest)
}

#[test]
fn the_readmes_demo_figure_is_newer_than_the_demos_build() -> Result<()> {
    let readme = std::fs::read_to_string(repo_path("README.md"))?;
    let (total, measured) = readme_figure(&readme)?;
    let benchmarks = std::fs::read_to_string(repo_path("docs/benchmarks.md"))?;
    let flat = flat(&benchmarks);
    ensure!(
        flat.contains(&format!("measured {measured}")) && flat.contains(&format!("({total};")),
        "docs/benchmarks.md does not quote the README's run ({total}, {measured})"
    );
    let Some((commit, changed)) = last_build_change()? else {
        eprintln!(
            "no history to date the demo's build (shallow or no checkout); figure {measured}"
        );
        return Ok(());
    };
    if changed.as_str() > measured.as_str() {
        bail!(
            "README.md quotes `make demo` at {total} measured {measured}, but {commit} changed \
             the demo's build on {changed}: measure again from empty caches \
             (docs/benchmarks.md#build-and-test-times says how) and quote the new figure"
        );
    }
    Ok(())
}

#[test]
fn the_figure_reader_finds_a_wrapped_figure_and_refuses_an_undated_one() -> Result<()> {
    let wrapped = "caches on a 2-core machine, `make demo` reached its last line in 7 min 5 s\n\
                   (2026-12-02). Build and run times";
    assert_eq!(
        readme_figure(wrapped)?,
        ("7 min 5 s".to_owned(), "2026-12-02".to_owned())
    );
    assert!(readme_figure("`make demo` reached its last line in 7 min 5 s.").is_err());
    assert!(readme_figure("`make demo` reached its last line in 7 min (Dec 2, 2026)").is_err());
    Ok(())
}
