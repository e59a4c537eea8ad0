//! Every supported release, proven exact against its own compiler's output.
//!
//! `tests/data/upstream/kfp-<release>` (for 2.17.0: `kfp-2.17.0-exact`) holds, per IR of that
//! release's tree, the workflow the release's own compiler (built from source at the tag, fed
//! the IR as the API server feeds it) wrote under the release's default install settings
//! (`settings/install.json`) and under a busier configuration (`settings/busy.json`; not for
//! IRs over 150 KB). Each IR is compiled here for that release under the same settings and
//! must give the same workflow exactly: both are parsed as JSON and compared as data, JSON
//! strings byte for byte and every list in order, after fixing only the orders the data sets'
//! READMEs name as random in Go ([`normalise`]: workflow arguments by name, `dependentTasks`
//! lists inside JSON strings, the clauses of `depends`).
//!
//! `KFP_RELEASES=2.16.1,2.17.0` limits a run to some releases.

use std::fmt::Write;

use kfp_compiler::{Release, compile_job, recover_ir};
use serde_json::Value;

use crate::support::releases::*;
use crate::support::{diff, render_differences};

/// Outcomes of one release under one settings file.
struct Row {
    release: Release,
    settings: Settings,
    cases: usize,
    passed: usize,
}

/// Differences shown per failing case.
const SHOWN: usize = 12;

fn table(title: &str, rows: &[Row]) -> String {
    let mut text = format!(
        "{title}\n  {:<8} {:<8} {:>6} {:>6} {:>6}\n",
        "release", "settings", "cases", "pass", "fail"
    );
    for row in rows {
        let _ = writeln!(
            text,
            "  {:<8} {:<8} {:>6} {:>6} {:>6}",
            row.release.as_str(),
            row.settings.label(),
            row.cases,
            row.passed,
            row.cases - row.passed
        );
    }
    text
}

fn check(expected: &Value, got: Result<Value, String>) -> Result<(), String> {
    let got = normalise(got?);
    if &got == expected {
        Ok(())
    } else {
        Err(render_differences(&diff(expected, &got, SHOWN)))
    }
}

/// Runs `attempt` on every case of every selected release under both settings, prints the
/// failures with their differences, then the table, and fails when any case failed.
fn over_every_case(
    title: &str,
    mut attempt: impl FnMut(&ReleaseSet, &Case, Settings, &Value) -> Result<(), String>,
) {
    let mut report = String::new();
    let mut rows = Vec::new();
    for release in selected_releases() {
        let set = ReleaseSet::load(release);
        for settings in Settings::ALL {
            let mut row = Row {
                release,
                settings,
                cases: 0,
                passed: 0,
            };
            for case in &set.cases {
                let Some(path) = case.expected_path(settings) else {
                    continue;
                };
                row.cases += 1;
                let expected = normalise(load_json(path));
                match attempt(&set, case, settings, &expected) {
                    Ok(()) => row.passed += 1,
                    Err(details) => {
                        let _ = writeln!(
                            report,
                            "FAIL {} [{}] {}\n{details}",
                            release,
                            settings.label(),
                            case.name
                        );
                    }
                }
            }
            rows.push(row);
        }
    }
    let failed: usize = rows.iter().map(|r| r.cases - r.passed).sum();
    println!("{report}{}", table(title, &rows));
    assert_eq!(failed, 0, "{failed} cases differ (details above)");
}

#[test]
fn every_release_compiles_its_own_irs_exactly() {
    let mut options = std::collections::BTreeMap::new();
    over_every_case(
        "compiled for the release, compared with its own compiler's output:",
        |set, case, settings, expected| {
            let options = options
                .entry((set.release, settings))
                .or_insert_with(|| set.options(settings));
            let ir = load_ir_file(&case.ir);
            check(
                expected,
                ir.compile(options)
                    .map_err(|e| format!("    compile error: {e}\n")),
            )
        },
    );
}

/// Recovering the IR from each release's workflow and compiling it again for the same
/// release and settings gives the same workflow.
#[test]
fn every_release_recompiles_its_workflows_from_their_recovered_ir() {
    let mut options = std::collections::BTreeMap::new();
    over_every_case(
        "recovered from the release's workflow, compiled again for it:",
        |set, case, settings, expected| {
            let options = options
                .entry((set.release, settings))
                .or_insert_with(|| set.options(settings));
            let workflow = load_json(case.expected_path(settings).expect("has a workflow"));
            let recovered =
                recover_ir(&workflow).map_err(|e| format!("    recover error: {e}\n"))?;
            check(
                expected,
                compile_job(
                    &recovered.pipeline_job(),
                    recovered.platform_spec.as_ref(),
                    options,
                )
                .map_err(|e| format!("    compile error: {e}\n")),
            )
        },
    );
}

#[test]
fn the_normalisation_sorts_dependent_tasks_as_text() {
    let text = r#"{"a":1,"dependentTasks":["z","a\"b","m"],"x":{"dependentTasks":[]}}"#;
    assert_eq!(
        sort_dependent_tasks_text(text).unwrap(),
        r#"{"a":1,"dependentTasks":["a\"b","m","z"],"x":{"dependentTasks":[]}}"#
    );
    assert_eq!(sort_dependent_tasks_text(r#"{"a":[]}"#), None);
}

/// The settings each release's data set was made with parse for that release, and a key
/// of a later release is refused by an earlier one.
#[test]
fn each_release_reads_its_own_settings() {
    for release in selected_releases() {
        let set = ReleaseSet::load(release);
        for settings in Settings::ALL {
            set.options(settings);
        }
        assert_eq!(
            set.settings(Settings::Install),
            release.install_settings(),
            "{release}: the embedded install settings are the data set's"
        );
        let shipped = std::fs::read_to_string(set.dir.join("settings/install.json")).unwrap();
        assert_eq!(shipped, release.install_settings_text(), "{release}");
    }
}
