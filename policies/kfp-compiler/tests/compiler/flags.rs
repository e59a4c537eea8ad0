//! Compiled workflows pass the driver and the launcher only flags their release defines.
//!
//! `tests/data/upstream/kfp-flags/<release>.json` lists the flags (name and type) that
//! `backend/src/v2/cmd/driver` and `backend/src/v2/cmd/launcher-v2` define at each tag, read
//! from the tag's sources (`extract.py` beside them). A flag the binary does not define stops
//! Go's flag parsing with an error, and the pod (every run) fails. Every workflow this crate
//! compiles for a release, from every IR of every data set under both settings files, has its
//! driver containers (the driver command) and launcher containers (the launcher command: the
//! `--copy` init container of executors, the importer) parsed as Go's `flag` package parses
//! them: `-name`/`--name`, `--name=value`, `--name value` for non-bool flags, bare for bool
//! flags; parsing stops at the first argument that is not a flag. The release's own outputs
//! are checked the same way, which checks the flag lists.

use std::collections::BTreeMap;
use std::fmt::Write;

use kfp_compiler::{CompileOptions, Release};
use serde::Deserialize;
use serde_json::Value;

use crate::support::releases::*;
use crate::support::upstream_dir;

#[derive(Deserialize)]
struct FlagFile {
    release: String,
    commit: String,
    driver: Binary,
    launcher: Binary,
}

#[derive(Deserialize)]
struct Binary {
    sources: Vec<String>,
    /// Flag name to its type (`string`, `bool`, `int`, `int64`, ...).
    flags: BTreeMap<String, String>,
}

fn flag_file(release: Release) -> FlagFile {
    let path = upstream_dir("kfp-flags").join(format!("{release}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file: FlagFile =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(file.release, release.as_str());
    assert_eq!(file.commit, release.commit(), "{release}: tag commit");
    for binary in [&file.driver, &file.launcher] {
        assert!(!binary.sources.is_empty() && binary.flags.len() > 10);
    }
    file
}

/// The flags in `args` as Go's `flag.Parse` reads them, or why it would stop with an error.
/// Arguments left after parsing stopped are an error too: the compiler never means them.
fn parse_go_flags(
    args: &[String],
    defined: &BTreeMap<String, String>,
) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut index = 0;
    while index < args.len() {
        let arg = &args[index];
        index += 1;
        if arg == "--" {
            break;
        }
        if arg.len() < 2 || !arg.starts_with('-') {
            return Err(format!("{arg:?} is not a flag; parsing stops before it"));
        }
        let body = arg.strip_prefix("--").unwrap_or(&arg[1..]);
        if body.is_empty() || body.starts_with('-') || body.starts_with('=') {
            return Err(format!("bad flag syntax: {arg}"));
        }
        let (name, value) = match body.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (body, None),
        };
        let Some(kind) = defined.get(name) else {
            return Err(format!("flag provided but not defined: -{name}"));
        };
        if kind == "bool" {
            if let Some(value) = value
                && kfp_compiler::options::parse_go_bool(value).is_none()
            {
                return Err(format!("invalid boolean value {value:?} for -{name}"));
            }
        } else if value.is_none() {
            if index == args.len() {
                return Err(format!("flag needs an argument: -{name}"));
            }
            index += 1;
        }
        names.push(name.to_owned());
    }
    if index < args.len() {
        return Err(format!("arguments after `--`: {:?}", &args[index..]));
    }
    Ok(names)
}

#[derive(Default)]
struct Counts {
    workflows: usize,
    driver_containers: usize,
    launcher_containers: usize,
}

/// Checks every container of `workflow` that runs the driver or the launcher; returns the
/// problems found.
fn check_workflow(
    workflow: &Value,
    options: &CompileOptions,
    flags: &FlagFile,
    counts: &mut Counts,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut drivers = 0;
    counts.workflows += 1;
    let strings = |value: Option<&Value>| -> Vec<String> {
        value
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    for template in workflow
        .pointer("/spec/templates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = template["name"].as_str().unwrap_or("?");
        let containers = template.get("container").into_iter().chain(
            ["initContainers", "sidecars"].iter().flat_map(|key| {
                template
                    .get(*key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            }),
        );
        for container in containers {
            let command = strings(container.get("command"));
            let (binary, defined) = if command == options.driver_command {
                counts.driver_containers += 1;
                drivers += 1;
                ("driver", &flags.driver.flags)
            } else if command == options.launcher_command {
                counts.launcher_containers += 1;
                ("launcher", &flags.launcher.flags)
            } else {
                continue;
            };
            if let Err(problem) = parse_go_flags(&strings(container.get("args")), defined) {
                problems.push(format!("template {name}, {binary}: {problem}"));
            }
        }
    }
    if drivers == 0 {
        problems.push("no driver container at all".into());
    }
    problems
}

#[test]
fn compiled_workflows_pass_only_flags_their_release_defines() {
    let mut report = String::new();
    let mut table = String::new();
    let mut failures = 0;
    for release in selected_releases() {
        let flags = flag_file(release);
        let set = ReleaseSet::load(release);
        for settings in Settings::ALL {
            let options = set.options(settings);
            let mut counts = Counts::default();
            let mut failed = 0;
            for case in &set.cases {
                if case.expected_path(settings).is_none() {
                    continue;
                }
                let workflow = load_ir_file(&case.ir)
                    .compile(&options)
                    .unwrap_or_else(|e| panic!("{release} {}: {e}", case.name));
                let mut problems = check_workflow(&workflow, &options, &flags, &mut counts);
                // The release's own output, as a check on the flag lists themselves.
                let expected = load_json(case.expected_path(settings).expect("checked above"));
                for problem in check_workflow(&expected, &options, &flags, &mut Counts::default()) {
                    problems.push(format!("in the release's own output: {problem}"));
                }
                if !problems.is_empty() {
                    failed += 1;
                    let _ = writeln!(
                        report,
                        "FAIL {release} [{}] {}\n    {}",
                        settings.label(),
                        case.name,
                        problems.join("\n    ")
                    );
                }
            }
            assert!(
                counts.launcher_containers > 0,
                "{release}: no launcher seen"
            );
            failures += failed;
            let _ = writeln!(
                table,
                "  {:<8} {:<8} {:>9} {:>7} {:>9} {:>6}",
                release.as_str(),
                settings.label(),
                counts.workflows,
                counts.driver_containers,
                counts.launcher_containers,
                failed
            );
        }
    }
    println!(
        "{report}driver and launcher flags of compiled workflows:\n  {:<8} {:<8} {:>9} {:>7} {:>9} {:>6}\n{table}",
        "release", "settings", "workflows", "drivers", "launchers", "fail"
    );
    assert_eq!(
        failures, 0,
        "{failures} workflows pass undefined flags (above)"
    );
}

/// The check finds the bug it exists for: a 2.17.0 compile handed to 2.16.1's driver.
#[test]
fn a_newer_release_s_flags_are_caught() {
    let flags = flag_file(Release::V2_16_1);
    let set = ReleaseSet::load(Release::V2_16_1);
    let case = &set.cases[0];
    let mut options = set.options(Settings::Install);
    options.release = Release::V2_17_0;
    let workflow = load_ir_file(&case.ir).compile(&options).unwrap();
    let problems = check_workflow(&workflow, &options, &flags, &mut Counts::default());
    assert!(
        problems
            .iter()
            .any(|p| p.contains("not defined: -pipeline_job_create_time_utc")),
        "{problems:?}"
    );
}

#[test]
fn go_flag_parsing() {
    let defined: BTreeMap<String, String> = [("a", "string"), ("b", "bool"), ("n", "int")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let args = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        parse_go_flags(
            &args(&["--a", "-x", "-b", "--n=3", "-a=", "--b=false"]),
            &defined
        ),
        Ok(args(&["a", "b", "n", "a", "b"]))
    );
    assert!(parse_go_flags(&args(&["--c", "1"]), &defined).is_err());
    assert!(
        parse_go_flags(&args(&["--b", "true"]), &defined).is_err(),
        "bool takes no value"
    );
    assert!(parse_go_flags(&args(&["--a"]), &defined).is_err());
    assert!(parse_go_flags(&args(&["--b=maybe"]), &defined).is_err());
}
