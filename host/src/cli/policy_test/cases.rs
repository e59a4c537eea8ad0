//! Running one case through the engine, with the same decision code as `run` and `eval`.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::format::{Case, EventSpec, ExportName, SwfSpec, TombstoneSpec, WorkflowBase};
use super::swf_checks;
use crate::engine::Decisions;
use crate::engine::{PolicyError, RebuildDecision, RebuildInput, RenderContext};
use crate::exit::TombstoneCache;
use crate::exit::event::parse_event_kind;
use crate::exit::judge::{self, eligibility_parts};
use crate::exit::tombstone::{ManualClock, Phase, Sighting};
use crate::swf::{parse_rebuild_policy, read_stamps};

/// How long a tombstone lives in a simulated sequence: the controller's default.
const TOMBSTONE_TTL: Duration = Duration::from_secs(1300);

/// What a case expected and what the policy did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    pub expected: String,
    pub got: String,
    pub pass: bool,
    /// Why it failed, or what was checked.
    pub detail: String,
}

impl Outcome {
    fn fail(expected: String, got: String, detail: String) -> Outcome {
        Outcome {
            expected,
            got,
            pass: false,
            detail,
        }
    }
}

/// The settings and target a file's cases start from.
pub struct Defaults<'a> {
    pub settings: &'a Value,
    pub target: Option<&'a str>,
}

pub fn run_case<P: Decisions>(policy: &P, case: &Case, defaults: &Defaults) -> Outcome {
    let settings = match case_settings(case, defaults.settings) {
        Ok(settings) => settings,
        Err(message) => return Outcome::fail("-".into(), "-".into(), message),
    };
    let policy = policy.with_settings(&settings);
    if let Err(error) = policy.validate_settings(&settings) {
        return Outcome::fail(
            "-".into(),
            "settings rejected".into(),
            format!("settings rejected: {error}"),
        );
    }
    let target = match &case.target {
        Some(target) => target.clone(),
        None => defaults.target.map(str::to_string),
    };
    let mut run = CaseRun {
        policy: &policy,
        settings,
        target,
        base_settings: defaults.settings.to_string(),
    };
    match case.export {
        ExportName::ShouldRebuild => run.should_rebuild(case),
        ExportName::RenderSwf => run.render(case),
        ExportName::ExitEligibility => run.exit_eligibility(case),
    }
}

/// The file's settings with the case's merged in and its replacements made, as JSON text.
fn case_settings(case: &Case, base: &Value) -> Result<String, String> {
    let mut settings = base.clone();
    if let Some(overrides) = &case.settings {
        let Some(object) = settings.as_object_mut() else {
            return Err(
                "the file's settings are not a mapping; a case cannot merge into them".into(),
            );
        };
        for (key, value) in overrides {
            object.insert(key.clone(), value.clone());
        }
    }
    Ok(case
        .settings_replace
        .iter()
        .fold(settings.to_string(), |text, (from, to)| {
            text.replace(from, to)
        }))
}

struct CaseRun<'a, P> {
    policy: &'a P,
    settings: String,
    target: Option<String>,
    /// The file's settings: what a `rendered: true` SWF was rendered with, before the case's
    /// edits (so `settingsReplace` shows settings changed since the render).
    base_settings: String,
}

impl<P: Decisions> CaseRun<'_, P> {
    fn render_text(&self, swf: &str, settings: &str) -> Result<String, PolicyError> {
        let context = RenderContext {
            target_version: self.target.clone(),
            settings: settings.to_string(),
        };
        self.policy.render_swf(swf, &context)
    }

    /// The SWF a spec describes, as the JSON text the policy gets.
    fn swf_text(&self, spec: &SwfSpec) -> Result<String, String> {
        if let Some(text) = &spec.text {
            return Ok(text.clone());
        }
        let mut swf = match (&spec.file, &spec.object) {
            (Some(path), _) => read_object(path)?,
            (None, Some(object)) => object.clone(),
            (None, None) => return Err("swf has no file, text or object".into()),
        };
        if spec.rendered {
            let rendered = self
                .render_text(&swf.to_string(), &self.base_settings)
                .map_err(|e| format!("preparing the swf (rendered: true): {e}"))?;
            swf = serde_json::from_str(&rendered)
                .map_err(|e| format!("preparing the swf: the render is not JSON: {e}"))?;
        }
        for (pointer, value) in &spec.set {
            set_pointer(&mut swf, pointer, value.clone())?;
        }
        if spec.reverse_parameters
            && let Some(list) = swf
                .pointer_mut("/spec/workflow/parameters")
                .and_then(Value::as_array_mut)
        {
            list.reverse();
        }
        Ok(swf.to_string())
    }

    fn should_rebuild(&mut self, case: &Case) -> Outcome {
        let expected = expectation(case.expect.as_deref(), case.reason.as_deref());
        let swf = match self.swf_text(case.swf.as_ref().expect("checked")) {
            Ok(swf) => swf,
            Err(message) => return Outcome::fail(expected, "-".into(), message),
        };
        let live: Value = serde_json::from_str(&swf).unwrap_or(Value::Null);
        let policy = case.rebuild_policy.as_deref().unwrap_or("always");
        let input = RebuildInput {
            policy: parse_rebuild_policy(policy).expect("checked"),
            swf,
            target_version: self.target.clone(),
            stamps: read_stamps(&live),
            settings: self.settings.clone(),
        };
        let (decision, reason) = match self.policy.should_rebuild(&input) {
            Ok(RebuildDecision::Rebuild(reason)) => ("rebuild", reason),
            Ok(RebuildDecision::Skip(reason)) => ("skip", reason),
            Err(error) => return engine_error(expected, &error),
        };
        judge(
            expected,
            case.expect.as_deref(),
            case.reason.as_deref(),
            decision,
            &reason,
        )
    }

    fn render(&mut self, case: &Case) -> Outcome {
        let wants_error = case.expect.as_deref() == Some("error");
        let expected = if wants_error {
            format!("error: {}", case.error.as_deref().unwrap_or(""))
        } else {
            "ok".to_string()
        };
        let input = match self.swf_text(case.swf.as_ref().expect("checked")) {
            Ok(swf) => swf,
            Err(message) => return Outcome::fail(expected, "-".into(), message),
        };
        match (self.render_text(&input, &self.settings), wants_error) {
            (Err(PolicyError::Guest { message, .. }), true) => {
                let wanted = case.error.as_deref().unwrap_or("");
                let got = format!("error: {message}");
                if message.contains(wanted) {
                    Outcome {
                        expected,
                        got,
                        pass: true,
                        detail: String::new(),
                    }
                } else {
                    Outcome::fail(expected, got, format!("the error lacks {wanted:?}"))
                }
            }
            (Err(error), _) => engine_error(expected, &error),
            (Ok(_), true) => Outcome::fail(
                expected,
                "ok".into(),
                "rendered, but an error was expected".into(),
            ),
            (Ok(output), false) => {
                let checks = swf_checks::Checks {
                    case,
                    input: &input,
                    output: &output,
                    read_swf: &|spec| self.swf_text(spec),
                    rerender: &|text| self.render_text(text, &self.settings),
                };
                match checks.run() {
                    Ok(done) => Outcome {
                        expected,
                        got: "ok".into(),
                        pass: true,
                        detail: done.join(", "),
                    },
                    Err(why) => Outcome::fail(expected, "ok".into(), why),
                }
            }
        }
    }

    fn exit_eligibility(&mut self, case: &Case) -> Outcome {
        let single = case.event.as_ref().map(|event| EventSpec {
            expect: case.expect.clone(),
            reason: case.reason.clone(),
            action: case.action.clone(),
            ..event.clone()
        });
        let events: Vec<EventSpec> = match single {
            Some(event) => vec![event],
            None => case.events.clone().unwrap_or_default(),
        };
        let base = case.workflow.clone().unwrap_or_default();
        let clock = Arc::new(ManualClock::default());
        let tombstones = TombstoneCache::new(TOMBSTONE_TTL, 100_000, clock.clone());
        if let Some(seed) = &case.tombstone {
            seed_tombstone(&tombstones, &base, seed);
        }
        let mut notified = HashSet::new();
        let (mut expected, mut got, mut failures) = (Vec::new(), Vec::new(), Vec::new());
        for (index, event) in events.iter().enumerate() {
            clock.advance(Duration::from_secs(event.after_seconds));
            let want = expectation(event.expect.as_deref(), event.reason.as_deref());
            expected.push(match &event.action {
                Some(action) => format!("{want} [{action}]"),
                None => want,
            });
            let prefix = if events.len() > 1 {
                format!("event {}: ", index + 1)
            } else {
                String::new()
            };
            let workflow = match event_object(event, &base) {
                Ok(workflow) => workflow,
                Err(message) => {
                    got.push("-".into());
                    failures.push(format!("{prefix}{message}"));
                    continue;
                }
            };
            let kind = parse_event_kind(&event.kind).expect("checked");
            let assessment = match judge::assess(self.policy, &tombstones, kind, &workflow) {
                Ok(assessment) => assessment,
                Err(error) => {
                    got.push(format!("error ({})", error.kind()));
                    failures.push(format!("{prefix}{error}"));
                    continue;
                }
            };
            let (decision, reason) = eligibility_parts(&assessment.eligibility);
            let decision = decision.label();
            let action = if !assessment.act {
                "none"
            } else if notified.insert(assessment.facts.completion_key()) {
                "notify"
            } else {
                "already-notified"
            };
            got.push(if event.action.is_some() {
                format!("{} [{action}]", shown(decision, reason))
            } else {
                shown(decision, reason)
            });
            let verdict = judge(
                String::new(),
                event.expect.as_deref(),
                event.reason.as_deref(),
                decision,
                reason,
            );
            if !verdict.pass {
                failures.push(format!("{prefix}{}", verdict.detail));
            } else if let Some(want) = event.action.as_deref().filter(|want| *want != action) {
                failures.push(format!("{prefix}action {action}, expected {want}"));
            }
        }
        Outcome {
            expected: expected.join("; "),
            got: got.join("; "),
            pass: failures.is_empty(),
            detail: failures.join("; "),
        }
    }
}

/// Puts a tombstone in place as if the workflow had been seen so.
fn seed_tombstone(tombstones: &TombstoneCache, base: &WorkflowBase, seed: &TombstoneSpec) {
    let phase = Phase::parse(&seed.phase);
    let sighting = Sighting {
        resource_version: &seed.rv,
        phase,
        complete: seed.completed,
        deleted: false,
    };
    tombstones.observe(base.uid.as_deref().unwrap_or(DEFAULT_UID), &sighting);
}

const DEFAULT_UID: &str = "7f0c7c1e-4d8a-4a63-9b1f-1c2d3e4f5a61";

/// The workflow an event carries: given whole, or built from shorthand fields.
fn event_object(event: &EventSpec, base: &WorkflowBase) -> Result<Value, String> {
    if let Some(object) = &event.object {
        return Ok(object.clone());
    }
    if let Some(path) = &event.file {
        return read_object(path);
    }
    let phase = event.phase.clone().unwrap_or_default();
    let mut labels = json!({"workflows.argoproj.io/phase": phase});
    if event.completed {
        labels["workflows.argoproj.io/completed"] = json!("true");
    }
    let mut status = json!({"phase": phase});
    if Phase::parse(&phase).is_complete() {
        status["startedAt"] = json!("2026-08-03T02:00:00Z");
        status["finishedAt"] = json!("2026-08-03T02:01:12Z");
    }
    if let Some(stored) = event.stored_spec.as_ref().or(base.stored_spec.as_ref()) {
        status["storedWorkflowTemplateSpec"] = stored.clone();
    }
    let spec = event
        .spec
        .clone()
        .or_else(|| base.spec.clone())
        .unwrap_or_else(|| json!({"entrypoint": "main", "onExit": "exit-handler"}));
    Ok(json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {
            "name": base.name.as_deref().unwrap_or("exit-demo"),
            "namespace": base.namespace.as_deref().unwrap_or("team-a"),
            "uid": base.uid.as_deref().unwrap_or(DEFAULT_UID),
            "resourceVersion": event.rv,
            "labels": labels,
        },
        "spec": spec,
        "status": status,
    }))
}

fn expectation(expect: Option<&str>, reason: Option<&str>) -> String {
    let expect = expect.unwrap_or("?");
    match reason {
        Some(reason) => format!("{expect} ({reason}…)"),
        None => expect.to_string(),
    }
}

fn shown(decision: &str, reason: &str) -> String {
    if reason.is_empty() {
        decision.to_string()
    } else {
        format!("{decision} ({reason})")
    }
}

fn judge(
    expected: String,
    want: Option<&str>,
    want_reason: Option<&str>,
    decision: &str,
    reason: &str,
) -> Outcome {
    let got = shown(decision, reason);
    if Some(decision) != want {
        let detail = format!("got {decision}, expected {}", want.unwrap_or("?"));
        return Outcome::fail(expected, got, detail);
    }
    if let Some(wanted) = want_reason.filter(|wanted| !reason.contains(wanted)) {
        return Outcome::fail(expected, got, format!("the reason lacks {wanted:?}"));
    }
    Outcome {
        expected,
        got,
        pass: true,
        detail: String::new(),
    }
}

fn engine_error(expected: String, error: &PolicyError) -> Outcome {
    Outcome::fail(
        expected,
        format!("error ({})", error.kind()),
        error.to_string(),
    )
}

/// A YAML or JSON file holding one object.
pub fn read_object(path: &std::path::Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_yaml::from_str(&text).map_err(|e| format!("{} is not YAML: {e}", path.display()))
}

/// Sets (or with null, removes) the value at a JSON pointer, creating objects on the way.
fn set_pointer(root: &mut Value, pointer: &str, value: Value) -> Result<(), String> {
    let keys: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|k| k.replace("~1", "/").replace("~0", "~"))
        .collect();
    let Some((last, parents)) = keys.split_last() else {
        return Err(format!("set: {pointer:?} names no key"));
    };
    let mut node = root;
    for key in parents {
        node = node
            .as_object_mut()
            .ok_or_else(|| format!("set: {pointer:?} goes through a non-object"))?
            .entry(key.clone())
            .or_insert(json!({}));
    }
    let object = node
        .as_object_mut()
        .ok_or_else(|| format!("set: the parent of {pointer:?} is not an object"))?;
    if value.is_null() {
        object.remove(last);
    } else {
        object.insert(last.clone(), value);
    }
    Ok(())
}
