//! Runs `cases.yaml` against a policy under test. Shared, file for file, by the native run
//! (`kfp-default/tests/cases.rs`) and the component run (`host/tests/default_policy_cases.rs`),
//! so both check the same cases with the same expectations.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The three decisions, in plain strings so either type family can implement them.
pub trait PolicyUnderTest {
    /// Returns ("rebuild" | "skip", reason).
    fn should_rebuild(&mut self, input: &RebuildCase) -> (String, String);
    fn render(&mut self, swf: &str, target: Option<&str>, settings: &str)
    -> Result<String, String>;
    /// Returns ("process" | "skip" | "reject-stale" | "requeue", reason). `settings` are the
    /// settings in force, which the policy reads through the host's `settings` import.
    fn exit_eligibility(
        &mut self,
        event: &EventCase,
        tombstone: Option<&TombstoneCase>,
        settings: &str,
    ) -> (String, String);
}

pub struct RebuildCase {
    pub policy: String,
    pub swf: String,
    pub target: Option<String>,
    pub version_stamp: Option<String>,
    pub hash_stamp: Option<String>,
    pub settings: String,
}

pub struct EventCase {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    pub phase: String,
    pub labels: Vec<(String, String)>,
    pub workflow: String,
}

pub struct TombstoneCase {
    pub resource_version: String,
    pub phase: String,
    pub completed: bool,
}

fn read(root: &Path, relative: &str) -> String {
    let path = root.join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn yaml(root: &Path, relative: &str) -> Value {
    serde_yaml::from_str(&read(root, relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// Runs every case and fails the calling test, listing the cases that did not hold.
pub fn check_all(root: &Path, policy: &mut dyn PolicyUnderTest) {
    let (lines, failures) = run_all(root, policy);
    for line in &lines {
        println!("{line}");
    }
    assert!(
        lines.len() >= 30,
        "the case file shrank: {} cases",
        lines.len()
    );
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Runs every case, with files read below the repository `root`; returns one line per case,
/// and the failures.
pub fn run_all(root: &Path, policy: &mut dyn PolicyUnderTest) -> (Vec<String>, Vec<String>) {
    let cases = yaml(root, "policies/kfp-default/cases/cases.yaml");
    let settings = read(root, cases["settings"].as_str().expect("settings path"));
    let target = cases["target"].as_str().map(str::to_string);
    let mut ctx = Ctx {
        root: root.to_path_buf(),
        policy,
        settings,
        target,
    };
    let (mut lines, mut failures) = (Vec::new(), Vec::new());
    for section in ["should_rebuild", "render", "exit_eligibility"] {
        for case in cases[section].as_array().expect("a list of cases") {
            let name = case["case"].as_str().unwrap_or("?");
            let outcome = match section {
                "should_rebuild" => ctx.rebuild_case(case),
                "render" => ctx.render_case(case),
                _ => ctx.eligibility_case(case),
            };
            match outcome {
                Ok(got) => lines.push(format!("ok    {section:<16} {name}: {got}")),
                Err(why) => {
                    lines.push(format!("FAIL  {section:<16} {name}: {why}"));
                    failures.push(format!("{section} / {name}: {why}"));
                }
            }
        }
    }
    (lines, failures)
}

struct Ctx<'a> {
    root: PathBuf,
    policy: &'a mut dyn PolicyUnderTest,
    settings: String,
    target: Option<String>,
}

impl Ctx<'_> {
    fn target_for(&self, case: &Value) -> Option<String> {
        match case.get("target") {
            Some(Value::Null) => None,
            Some(value) => value.as_str().map(str::to_string),
            None => self.target.clone(),
        }
    }

    /// The SWF a case describes, as JSON text.
    fn swf(&mut self, spec: &Value, target: Option<&str>) -> Result<String, String> {
        if let Some(text) = spec["text"].as_str() {
            return Ok(text.to_string());
        }
        let fixture = spec["fixture"]
            .as_str()
            .ok_or("swf needs fixture or text")?;
        let mut swf = yaml(&self.root, &format!("tests/data/swf/{fixture}"));
        if spec["rendered"].as_bool() == Some(true) {
            let rendered = self
                .policy
                .render(&swf.to_string(), target, &self.settings)?;
            swf =
                serde_json::from_str(&rendered).map_err(|e| format!("render is not JSON: {e}"))?;
        }
        if let Some(edits) = spec["set"].as_object() {
            for (pointer, value) in edits {
                set_pointer(&mut swf, pointer, value.clone());
            }
        }
        if spec["reverse_parameters"].as_bool() == Some(true)
            && let Some(list) = swf
                .pointer_mut("/spec/workflow/parameters")
                .and_then(Value::as_array_mut)
        {
            list.reverse();
        }
        Ok(swf.to_string())
    }

    fn rebuild_case(&mut self, case: &Value) -> Result<String, String> {
        let target = self.target_for(case);
        let swf = self.swf(&case["swf"], target.as_deref())?;
        let parsed: Value = serde_json::from_str(&swf).unwrap_or_default();
        let annotation = |key: &str| {
            parsed
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(key))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let input = RebuildCase {
            policy: case["policy"].as_str().ok_or("policy")?.to_string(),
            swf,
            target,
            version_stamp: annotation("pipelines.kubeflow.org/version"),
            hash_stamp: annotation("pipewarden.io/render-hash"),
            settings: match case["settings_replace"].as_object() {
                // Settings edited since the render: each `from: to` replaced in the text.
                Some(edits) => edits
                    .iter()
                    .fold(self.settings.clone(), |text, (from, to)| {
                        text.replace(from.as_str(), to.as_str().unwrap_or(""))
                    }),
                None => self.settings.clone(),
            },
        };
        let (decision, reason) = self.policy.should_rebuild(&input);
        expect_decision(case, &decision, &reason)
    }

    fn render_case(&mut self, case: &Value) -> Result<String, String> {
        let target = self.target_for(case);
        let input = self.swf(&case["swf"], target.as_deref())?;
        let result = self
            .policy
            .render(&input, target.as_deref(), &self.settings);
        match (case["expect"].as_str(), result) {
            (Some("error"), Err(message)) => {
                let wanted = case["error"].as_str().unwrap_or("");
                message
                    .contains(wanted)
                    .then(|| format!("error: {message}"))
                    .ok_or(format!("error {message:?} lacks {wanted:?}"))
            }
            (Some("error"), Ok(_)) => Err("rendered, but an error was expected".into()),
            (_, Err(message)) => Err(format!("render failed: {message}")),
            (_, Ok(output)) => self.check_render(case, &input, &output, target.as_deref()),
        }
    }

    fn check_render(
        &mut self,
        case: &Value,
        input: &str,
        output: &str,
        target: Option<&str>,
    ) -> Result<String, String> {
        let out: Value =
            serde_json::from_str(output).map_err(|e| format!("render is not JSON: {e}"))?;
        let inp: Value = serde_json::from_str(input).map_err(|e| e.to_string())?;
        let mut checked = Vec::new();
        if let Some(fixture) = case["same_drivers_as"].as_str() {
            let want = driver_parts(&embedded(&yaml(
                &self.root,
                &format!("tests/data/swf/{fixture}"),
            )));
            let got = driver_parts(&embedded(&out));
            if got != want {
                return Err(format!(
                    "drivers and launcher differ from {fixture}'s: got {got}, want {want}"
                ));
            }
            checked.push("same drivers and launcher");
        }
        if let Some(fixture) = case["same_workflow_as"].as_str() {
            let want = embedded(&yaml(&self.root, &format!("tests/data/swf/{fixture}")));
            if embedded(&out) != want {
                return Err(format!("embedded workflow differs from {fixture}'s"));
            }
            checked.push("same workflow");
        }
        if case["stamped"].as_bool() == Some(true) {
            let annotations = &out["metadata"]["annotations"];
            let hash = annotations["pipewarden.io/render-hash"]
                .as_str()
                .unwrap_or("");
            if annotations["pipelines.kubeflow.org/version"].as_str() != target
                || !hash.starts_with("sha256:")
            {
                return Err(format!("stamps missing: {annotations}"));
            }
            checked.push("stamped");
        }
        if case["idempotent"].as_bool() == Some(true) {
            if output != input {
                return Err("a render of a render changed the text".into());
            }
            checked.push("byte-identical");
        }
        if case["string_form"].as_bool() == Some(true) {
            if !out["spec"]["workflow"]["spec"].is_string() {
                return Err("workflow.spec is not a string".into());
            }
            checked.push("string form");
        }
        if case["same_parameters"].as_bool() == Some(true) {
            if out["spec"]["workflow"]["parameters"] != inp["spec"]["workflow"]["parameters"] {
                return Err("parameters changed".into());
            }
            checked.push("parameters kept");
        }
        if case["unchanged"].as_bool() == Some(true) {
            if out != inp {
                return Err("the object changed".into());
            }
            checked.push("unchanged");
        }
        if out.get("status") != inp.get("status") {
            return Err("status changed".into());
        }
        Ok(checked.join(", "))
    }

    fn eligibility_case(&mut self, case: &Value) -> Result<String, String> {
        let e = &case["event"];
        let text = |v: &Value| v.as_str().unwrap_or("").to_string();
        let completed = e["completed"].as_bool() == Some(true);
        let mut labels = vec![("workflows.argoproj.io/phase".to_string(), text(&e["phase"]))];
        if completed {
            labels.push(("workflows.argoproj.io/completed".into(), "true".into()));
        }
        let label_map: serde_json::Map<String, Value> =
            labels.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        let mut status = json!({"phase": text(&e["phase"])});
        if matches!(text(&e["phase"]).as_str(), "Succeeded" | "Failed" | "Error") {
            status["finishedAt"] = json!("2026-08-03T02:01:12Z");
        }
        // `spec` replaces the workflow's spec (which has an onExit handler unless replaced);
        // `stored_spec` is what Argo stores from a workflowTemplateRef, with Argo's node
        // bookkeeping beside it, as the host receives it.
        if let Some(stored) = case.get("stored_spec") {
            status["storedWorkflowTemplateSpec"] = stored.clone();
            status["nodes"] = json!({"exit-demo": {"id": "exit-demo", "phase": text(&e["phase"])}});
        }
        let spec = case
            .get("spec")
            .cloned()
            .unwrap_or_else(|| json!({"entrypoint": "main", "onExit": "exit-handler"}));
        let workflow = json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
            "metadata": {"name": "exit-demo", "namespace": "team-a", "uid": "7f0c7c1e-4d8a-4a63-9b1f-1c2d3e4f5a61",
                         "resourceVersion": text(&e["rv"]), "labels": label_map},
            "spec": spec,
            "status": status,
        });
        let event = EventCase {
            kind: text(&e["kind"]),
            namespace: "team-a".into(),
            name: "exit-demo".into(),
            uid: "7f0c7c1e-4d8a-4a63-9b1f-1c2d3e4f5a61".into(),
            resource_version: text(&e["rv"]),
            phase: text(&e["phase"]),
            labels,
            workflow: workflow.to_string(),
        };
        let tombstone = case.get("tombstone").map(|t| TombstoneCase {
            resource_version: text(&t["rv"]),
            phase: text(&t["phase"]),
            completed: t["completed"].as_bool() == Some(true),
        });
        // `notify` is merged into the case file's settings.
        let settings = match case.get("notify") {
            Some(notify) => {
                let mut settings: Value =
                    serde_json::from_str(&self.settings).map_err(|e| e.to_string())?;
                settings["notify"] = notify.clone();
                settings.to_string()
            }
            None => self.settings.clone(),
        };
        let (decision, reason) =
            self.policy
                .exit_eligibility(&event, tombstone.as_ref(), &settings);
        expect_decision(case, &decision, &reason)
    }
}

fn expect_decision(case: &Value, decision: &str, reason: &str) -> Result<String, String> {
    let want = case["expect"].as_str().unwrap_or("?");
    let why = case["reason"].as_str().unwrap_or("");
    if decision != want {
        return Err(format!("got {decision} ({reason}), expected {want}"));
    }
    if !reason.contains(why) {
        return Err(format!("reason {reason:?} lacks {why:?}"));
    }
    Ok(format!("{decision} ({reason})"))
}

/// The embedded workflow of an SWF, parsed from either form.
fn embedded(swf: &Value) -> Value {
    match &swf["spec"]["workflow"]["spec"] {
        Value::String(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        other => other.clone(),
    }
}

/// Per template: the driver container's image and args, and init container images.
fn driver_parts(workflow: &Value) -> Value {
    let templates = workflow["spec"]["templates"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    templates
        .iter()
        .map(|t| {
            let inits: Vec<&Value> = t["initContainers"].as_array().into_iter().flatten().map(|c| &c["image"]).collect();
            json!({"name": t["name"], "image": t["container"]["image"], "args": t["container"]["args"], "inits": inits})
        })
        .collect()
}

/// Sets (or with null, removes) the value at a JSON pointer, creating objects on the way.
fn set_pointer(root: &mut Value, pointer: &str, value: Value) {
    let keys: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|k| k.replace("~1", "/").replace("~0", "~"))
        .collect();
    let Some((last, parents)) = keys.split_last() else {
        return;
    };
    let mut node = root;
    for key in parents {
        node = node
            .as_object_mut()
            .expect("objects along the pointer")
            .entry(key.clone())
            .or_insert(json!({}));
    }
    let object = node
        .as_object_mut()
        .expect("an object at the pointer's parent");
    if value.is_null() {
        object.remove(last);
    } else {
        object.insert(last.clone(), value);
    }
}
