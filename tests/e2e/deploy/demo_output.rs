//! The demo as a newcomer runs it with its output saved to a file: every phase reports, the
//! tables are whole, nothing reads as a failure and nothing carries terminal colour codes. The
//! controller's log is moved to a file, not lost.

use std::process::Command;

use anyhow::{Context as _, Result, ensure};

const ESCAPE: char = '\u{1b}';

#[test]
fn a_successful_demo_prints_clean_tables_without_error_lines_or_colour_codes() -> Result<()> {
    let log = std::env::temp_dir().join(format!("pipewarden-demo-{}.log", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_demo"))
        .arg(format!("--log={}", log.display()))
        // Pipes, not a terminal: colour must stay off without anyone asking.
        .env_remove("NO_COLOR")
        .env_remove("PIPEWARDEN_LOG")
        .env_remove("PIPEWARDEN_LOG_FORMAT")
        .output()
        .context("running the demo")?;
    let stdout = String::from_utf8(out.stdout)?;
    let stderr = String::from_utf8(out.stderr)?;
    println!("{stdout}\n--- stderr ---\n{stderr}");
    ensure!(out.status.success(), "the demo failed: {}", out.status);

    for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
        ensure!(!text.contains(ESCAPE), "{name} carries ANSI escapes");
        let errors: Vec<&str> = text.lines().filter(|l| l.contains("ERROR")).collect();
        ensure!(errors.is_empty(), "ERROR lines on {name}: {errors:#?}");
    }
    for phase in [
        "control plane",
        "seed",
        "controller",
        "exit gate",
        "drift",
        "report",
        "stop",
    ] {
        ensure!(
            stdout.contains(&format!("demo: {phase:<14}")),
            "no line for the {phase} phase"
        );
    }
    for heading in ["objects before:", "objects after:"] {
        let rows = table_after(&stdout, heading)?;
        // A header, six SWFs and two Workflows, with no log line in between.
        ensure!(
            rows.len() == 9,
            "{heading} has {} lines: {rows:#?}",
            rows.len()
        );
        ensure!(rows[0].starts_with("NAMESPACE"), "{heading}: {rows:#?}");
        let interrupted = rows.iter().any(|row| {
            row.starts_with(|c: char| c.is_ascii_digit())
                || [" INFO ", " WARN ", "swf decision"]
                    .iter()
                    .any(|w| row.contains(w))
        });
        ensure!(
            !interrupted,
            "{heading} is interrupted by log lines: {rows:#?}"
        );
    }

    // The 2.3-era SWF is rebuilt to exactly KFP 2.17's compile; the ones KFP 2.17 wrote are
    // already that compile and are left unstamped (stamps are never written alone).
    let row = |heading: &str, namespace: &str| -> Result<String> {
        let rows = table_after(&stdout, heading)?;
        let found = rows
            .iter()
            .find(|row| row.starts_with(namespace) && row.contains(" ScheduledWorkflow "));
        Ok(found
            .with_context(|| format!("{heading} no SWF row in {namespace}"))?
            .to_string())
    };
    let before = row("objects before:", "kubeflow-user-team-a ")?;
    ensure!(
        before.contains("differs from KFP 2.17.0 compile"),
        "{before}"
    );
    let after = row("objects after:", "kubeflow-user-team-a ")?;
    ensure!(
        after.ends_with("stamped 2.17.0, equal to KFP 2.17.0 compile"),
        "{after}"
    );
    for heading in ["objects before:", "objects after:"] {
        let upstream = row(heading, "kubeflow-user-team-b ")?;
        ensure!(
            upstream.ends_with("  equal to KFP 2.17.0 compile"),
            "{heading} {upstream}"
        );
    }

    let logged = std::fs::read_to_string(&log).context("the controller log")?;
    ensure!(
        stdout.contains("demo: controller log") && stdout.contains("pipewarden-demo-"),
        "the demo does not say where the controller log is"
    );
    ensure!(
        !logged.contains(ESCAPE),
        "the log file carries ANSI escapes"
    );
    ensure!(
        logged
            .lines()
            .filter(|l| l.contains("swf decision"))
            .count()
            >= 4,
        "the controller's decision lines are not in its log:\n{logged}"
    );
    ensure!(!logged.lines().any(|l| l.contains(" ERROR ")), "{logged}");
    let _ = std::fs::remove_file(log);
    Ok(())
}

/// The lines of the table that follows `heading`, up to the blank line ending it.
fn table_after<'a>(text: &'a str, heading: &str) -> Result<Vec<&'a str>> {
    let start = text
        .find(heading)
        .with_context(|| format!("no {heading:?} table"))?;
    Ok(text[start + heading.len()..]
        .trim_start_matches('\n')
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .collect())
}
