//! Rendering for each supported release, on that release's own data: an SWF the release's API
//! server wrote renders to itself for that target (nothing to write), and a 2.3-era SWF
//! rendered for any target passes the target's driver and launcher only flags they define.

use std::collections::BTreeMap;

use pipewarden_guest::swf::normalized_spec;
use serde_json::{Value, json};

use super::render_swf;
use crate::Settings;
use crate::fixtures::{embedded, swf_json, upstream_file};
use crate::target::{Target, targets};

/// The data set of KFP's own compiler output for a release (`tests/data/upstream`), as the
/// release ledger names it.
fn data_set(release: &str) -> &'static str {
    kfp_compiler::Release::parse(release)
        .unwrap_or_else(|| panic!("no data set for {release}"))
        .data_folder()
}

/// An SWF as the release's API server writes one around `workflow` (its `ScheduledWorkflow`,
/// written out here apart from the code under test): the namespace, the service account (the
/// recurring run's from 2.17.0 on, kubeflow/pipelines#13325; before, the compile's), the Istio
/// annotation on every template that has none, the workflow as a JSON string.
fn swf_as_release_writes(mut workflow: Value, release: &str, job_account: &str) -> Value {
    let namespace = "kubeflow-user-example-com";
    workflow["metadata"]["namespace"] = json!(namespace);
    if release == "2.17.0" {
        workflow["spec"]["serviceAccountName"] = json!(job_account);
    }
    let account = workflow["spec"]["serviceAccountName"].clone();
    for template in workflow["spec"]["templates"].as_array_mut().unwrap() {
        let annotations = &mut template["metadata"]["annotations"];
        if annotations.get("sidecar.istio.io/inject").is_none() {
            annotations["sidecar.istio.io/inject"] = json!("false");
        }
    }
    json!({
        "apiVersion": "kubeflow.org/v1beta1",
        "kind": "ScheduledWorkflow",
        "metadata": {"name": "daily", "namespace": namespace},
        "spec": {
            "enabled": true,
            "trigger": {"cronSchedule": {"cron": "0 0 2 * * *"}},
            "workflow": {"spec": workflow.to_string()},
            "serviceAccount": account,
        },
    })
}

/// Every case of a release's data set compiled with its install settings: (case, IR sha256,
/// workflow).
fn compiled_cases(release: &str) -> Vec<(String, Value)> {
    compiled_cases_with_ir(release)
        .into_iter()
        .map(|(case, _, workflow)| (case, workflow))
        .collect()
}

fn compiled_cases_with_ir(release: &str) -> Vec<(String, String, Value)> {
    let index: Value =
        serde_json::from_str(&upstream_file(&format!("{}/index.json", data_set(release)))).unwrap();
    let entries = index
        .as_array()
        .or_else(|| index["cases"].as_array())
        .expect("index.json lists its cases")
        .clone();
    entries
        .iter()
        .map(|entry| {
            let path = entry["compiled"].as_str().expect("a compiled path");
            let text = upstream_file(&format!("{}/{path}", data_set(release)));
            let ir = entry["sha256"].as_str().unwrap_or_default().to_owned();
            (path.to_owned(), ir, serde_json::from_str(&text).unwrap())
        })
        .collect()
}

#[test]
fn an_swf_each_release_wrote_renders_to_itself_for_that_release() {
    let mut summary = Vec::new();
    for target in targets().filter(|t| t.version == t.release.as_str()) {
        let cases = compiled_cases(target.version);
        let mut differing = Vec::new();
        for (case, workflow) in &cases {
            let live = swf_as_release_writes(workflow.clone(), target.version, "default-editor");
            let rendered = render_swf(
                &live.to_string(),
                Some(target.version),
                &Settings::parse("{}").unwrap(),
            )
            .unwrap_or_else(|e| panic!("{} {case}: {e}", target.version));
            let rendered: Value = serde_json::from_str(&rendered).unwrap();
            let same = embedded(&rendered.to_string()) == embedded(&live.to_string())
                && normalized_spec(&rendered["spec"]) == normalized_spec(&live["spec"]);
            if !same {
                differing.push(case.clone());
            }
        }
        summary.push(format!(
            "{}: {} cases, {} differ {:?}",
            target.version,
            cases.len(),
            differing.len(),
            differing
        ));
        assert!(cases.len() > 50, "{}: the data set shrank", target.version);
    }
    println!("{}", summary.join("\n"));
    assert!(
        summary.iter().all(|line| line.contains(" 0 differ")),
        "{}",
        summary.join("\n")
    );
}

/// An SWF one release wrote, rendered for another (an upgrade, or a downgrade): the second
/// release's own compile of the same IR, wrapped as it wraps one, for every IR file both data
/// sets hold byte for byte (a file of one name may differ between the two tags' trees).
#[test]
fn an_swf_one_release_wrote_renders_as_the_other_release_writes_it() {
    // Every older release to 2.17.0 (what the benches' fleet upgrades), and back.
    const STEPS: [(&str, &str); 9] = [
        ("2.14.4", "2.15.0"),
        ("2.15.0", "2.16.0"),
        ("2.16.0", "2.16.1"),
        ("2.16.1", "2.17.0"),
        ("2.17.0", "2.16.1"),
        ("2.14.4", "2.17.0"),
        ("2.15.0", "2.17.0"),
        ("2.16.0", "2.17.0"),
        ("2.17.0", "2.14.4"),
    ];
    let mut summary = Vec::new();
    for (from, to) in STEPS {
        let theirs: BTreeMap<(String, String), Value> = compiled_cases_with_ir(to)
            .into_iter()
            .map(|(case, ir, workflow)| ((case, ir), workflow))
            .collect();
        let mut common = 0;
        let mut differing = Vec::new();
        for (case, ir, workflow) in compiled_cases_with_ir(from) {
            let Some(expected) = theirs.get(&(case.clone(), ir)) else {
                continue;
            };
            common += 1;
            let live = swf_as_release_writes(workflow, from, "default-editor");
            let rendered = render_swf(&live.to_string(), Some(to), &Settings::parse("{}").unwrap())
                .unwrap_or_else(|e| panic!("{from} -> {to} {case}: {e}"));
            // The recurring run's own account is what the SWF holds: a release before 2.17.0
            // wrote the compile's there (the install's runner), and that is all an SWF keeps.
            let account = live["spec"]["serviceAccount"].as_str().unwrap().to_owned();
            let wanted = swf_as_release_writes(expected.clone(), to, &account);
            if embedded(&rendered) != embedded(&wanted.to_string()) {
                differing.push(case);
            }
        }
        summary.push(format!(
            "{from} -> {to}: {common} cases, {} differ {differing:?}",
            differing.len()
        ));
        assert!(common >= 4, "{from} -> {to}: {common} common cases");
    }
    println!("{}", summary.join("\n"));
    assert!(
        summary.iter().all(|line| line.contains(" 0 differ")),
        "{}",
        summary.join("\n")
    );
}

/// The flags each release's driver and launcher define (`tests/data/upstream/kfp-flags`).
fn defined_flags(release: &str) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let text = upstream_file(&format!("kfp-flags/{release}.json"));
    let file: Value = serde_json::from_str(&text).unwrap();
    let flags = |binary: &str| -> BTreeMap<String, String> {
        serde_json::from_value(file[binary]["flags"].clone()).unwrap()
    };
    (flags("driver"), flags("launcher"))
}

/// The flags `args` set, parsed as Go's `flag` package parses them; an undefined one (which
/// stops the binary) or a stray argument is an error.
fn flags_in(args: &[String], defined: &BTreeMap<String, String>) -> Result<(), String> {
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let body = arg
            .strip_prefix("--")
            .or_else(|| arg.strip_prefix('-'))
            .ok_or_else(|| format!("{arg:?} is not a flag"))?;
        let (name, inline) = match body.split_once('=') {
            Some((name, _)) => (name, true),
            None => (body, false),
        };
        let kind = defined
            .get(name)
            .ok_or_else(|| format!("flag provided but not defined: -{name}"))?;
        if !inline && kind != "bool" {
            args.next()
                .ok_or_else(|| format!("flag needs an argument: -{name}"))?;
        }
    }
    Ok(())
}

/// Every driver and launcher command line of a workflow: (binary, args).
fn command_lines(workflow: &Value) -> Vec<(&'static str, Vec<String>)> {
    let mut lines = Vec::new();
    let mut visit = |container: &Value| {
        let command = container["command"].as_array().cloned().unwrap_or_default();
        let binary = match command.first().and_then(Value::as_str) {
            Some("driver") => "driver",
            Some("launcher-v2") => "launcher",
            _ => return,
        };
        let args: Vec<String> = command[1..]
            .iter()
            .chain(container["args"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        lines.push((binary, args));
    };
    for template in workflow["spec"]["templates"].as_array().unwrap() {
        visit(&template["container"]);
        for init in template["initContainers"].as_array().into_iter().flatten() {
            visit(init);
        }
    }
    lines
}

#[test]
fn a_kfp_2_3_swf_rendered_for_any_target_passes_only_flags_that_release_defines() {
    for target in targets() {
        let (driver, launcher) = defined_flags(target.release.as_str());
        let busy = upstream_file(&format!(
            "{}/settings/busy.json",
            data_set(target.release.as_str())
        ));
        let busy: Value = serde_json::from_str(&busy).unwrap();
        // The busy settings with the target's own images (2.14.0 and 2.14.3 inherit 2.14.4's).
        let mut busy = busy.as_object().unwrap().clone();
        for key in ["V2_DRIVER_IMAGE", "V2_LAUNCHER_IMAGE"] {
            busy.insert(key.into(), target.install_settings()[key].clone());
        }
        for settings in ["{}".to_owned(), Value::Object(busy).to_string()] {
            let settings = Settings::parse(&settings).unwrap();
            for fixture in ["kfp-2.3.yaml", "kfp-2.3-parameters.yaml", "kfp-2.17.yaml"] {
                let rendered =
                    render_swf(&swf_json(fixture), Some(target.version), &settings).unwrap();
                let workflow = embedded(&rendered);
                let lines = command_lines(&workflow);
                assert!(
                    lines.iter().any(|(binary, _)| *binary == "driver"),
                    "{fixture}: no driver"
                );
                for (binary, args) in lines {
                    let defined = if binary == "driver" {
                        &driver
                    } else {
                        &launcher
                    };
                    flags_in(&args, defined).unwrap_or_else(|e| {
                        panic!("{fixture} for {}: {binary}: {e}", target.version)
                    });
                }
            }
        }
    }
}

#[test]
fn the_2_17_0_create_time_flag_stops_a_2_16_1_driver_and_is_not_written_for_it() {
    // The bug this policy is written against: a 2.17.0 compile run by a 2.16.1 driver.
    let (driver_2_16_1, _) = defined_flags("2.16.1");
    let args = ["--pipeline_job_create_time_utc".to_owned(), "x".to_owned()];
    assert!(flags_in(&args, &driver_2_16_1).is_err());
    let target = Target::of(Some("2.16.1")).unwrap();
    let settings = Settings::parse("{}").unwrap();
    let rendered = render_swf(&swf_json("kfp-2.3.yaml"), Some(target.version), &settings).unwrap();
    assert!(!rendered.contains("pipeline_job_create_time_utc"));
    assert!(rendered.contains("kfp-driver:2.16.1"));
}

/// A patch release that inherits a compiler renders exactly what that release renders, with
/// its own driver and launcher images and its own version stamp: nothing else may differ.
#[test]
fn an_inheriting_patch_release_renders_its_compilers_output_with_its_own_images() {
    let settings = Settings::parse("{}").unwrap();
    let mut checked = Vec::new();
    for target in targets().filter(|t| t.version != t.release.as_str()) {
        for fixture in ["kfp-2.3.yaml", "kfp-2.3-parameters.yaml", "kfp-2.17.yaml"] {
            let ours = render_swf(&swf_json(fixture), Some(target.version), &settings).unwrap();
            let base =
                render_swf(&swf_json(fixture), Some(target.release.as_str()), &settings).unwrap();
            let expected = embedded(&base).to_string().replace(
                &format!(":{}\"", target.release.as_str()),
                &format!(":{}\"", target.version),
            );
            assert_eq!(
                embedded(&ours).to_string(),
                expected,
                "{fixture} for {}",
                target.version
            );
            let stamp = |swf: &str| {
                let swf: Value = serde_json::from_str(swf).unwrap();
                swf["metadata"]["annotations"]["pipelines.kubeflow.org/version"].clone()
            };
            assert_eq!(stamp(&ours), json!(target.version));
        }
        checked.push(target.version);
    }
    assert!(checked.contains(&"2.17.1"), "checked {checked:?}");
}
