//! Turning a Workflow object and how it was seen into the event a policy decides on.

use serde_json::Value;

use super::bounded::capped;
use super::tombstone::{Phase, Sighting};
use crate::engine::{EventKind, WorkflowEvent};

pub const COMPLETED_LABEL: &str = "workflows.argoproj.io/completed";

/// The fields of a Workflow the host itself reads.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkflowFacts {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    pub phase: Phase,
    pub phase_text: String,
    /// Complete as Argo means it: phase Succeeded, Failed or Error, with a `finishedAt`. The
    /// `workflows.argoproj.io/completed` label follows the phase; alone it is not completion.
    pub complete: bool,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// `status.message`: why a workflow failed, when Argo says; cut to
    /// [`TENANT_TEXT_MAX`](super::bounded::TENANT_TEXT_MAX) bytes (anyone who edits the
    /// workflow can write it).
    pub message: Option<String>,
    /// Which run of the workflow this is ([`RUN_ANNOTATION`]): 1 until the exit gate saw it
    /// run again after a completion it had marked.
    pub run: u32,
}

/// The annotation counting a workflow's runs, written by the exit gate when it sees a
/// workflow it marked complete running again (`argo retry`): the run after the first has it in
/// its completion key, so a re-run that completes within the same second as the run before,
/// with the same times and phase, is a completion of its own.
pub const RUN_ANNOTATION: &str = "pipewarden.io/exit-run";
/// Runs counted at most; a higher or unreadable count reads as this (written by hand).
pub const RUN_MAX: u32 = 10_000;

impl WorkflowFacts {
    /// None if the object lacks a name or uid: such an object cannot be reasoned about.
    pub fn read(workflow: &Value) -> Option<WorkflowFacts> {
        let text = |pointer: &str| workflow.pointer(pointer).and_then(Value::as_str);
        let phase_text = text("/status/phase").unwrap_or("").to_string();
        let phase = Phase::parse(&phase_text);
        let finished_at = text("/status/finishedAt")
            .filter(|at| !at.is_empty())
            .map(str::to_string);
        Some(WorkflowFacts {
            namespace: text("/metadata/namespace").unwrap_or("").to_string(),
            name: text("/metadata/name")?.to_string(),
            uid: text("/metadata/uid")?.to_string(),
            resource_version: text("/metadata/resourceVersion").unwrap_or("").to_string(),
            phase,
            complete: phase.is_complete() && finished_at.is_some(),
            phase_text,
            started_at: text("/status/startedAt")
                .filter(|at| !at.is_empty())
                .map(str::to_string),
            finished_at,
            message: text("/status/message")
                .filter(|m| !m.is_empty())
                .map(|m| capped(m).into_owned()),
            run: workflow
                .pointer("/metadata/annotations")
                .and_then(|annotations| annotations.get(RUN_ANNOTATION))
                .and_then(Value::as_str)
                .map_or(1, |text| {
                    text.parse::<u32>().map_or(RUN_MAX, |n| n.clamp(1, RUN_MAX))
                }),
        })
    }

    /// The run a mark's `key` names: its fifth part, 1 without one (a first run, or a key of
    /// an earlier version).
    pub fn run_of_key(key: &str) -> u32 {
        key.split('/')
            .nth(4)
            .and_then(|run| run.parse().ok())
            .unwrap_or(1)
    }

    /// Whether `key` (read from a mark) names a completion of this workflow's current run, or
    /// of a run before it: what the gate looks for on a workflow running again.
    pub fn marks_run(&self, key: &str) -> Option<u32> {
        key.strip_prefix(&self.uid)
            .filter(|rest| rest.starts_with('/'))
            .map(|_| WorkflowFacts::run_of_key(key))
    }

    /// Identifies one completion of a workflow: `<uid>/<startedAt>/<finishedAt>/<phase>`, the
    /// times as Argo wrote them (no precision dropped). Stable across restarts and replicas: a
    /// completed workflow's status times and phase do not change until `argo retry`, which
    /// resets `startedAt` to the retry's time and clears `finishedAt`, so the next completion
    /// has a key of its own even when it finishes within the same second as the last (Argo
    /// writes both times to the second: two completions share a key only if a first run, its
    /// retry and the re-run all fall within one second and end in the same phase).
    /// resourceVersion and generation are not part of it: later writes to the same completion
    /// (labels, this controller's own annotation, Argo's garbage collection) move them. The
    /// phase is: a stale copy that Argo's lagging cache turned into `Error` in the second the
    /// real run succeeded has a key of its own, never the real completion's. From the second
    /// run the gate counted ([`RUN_ANNOTATION`]) the key ends in `/<run>`, which tells apart
    /// even those.
    pub fn completion_key(&self) -> String {
        let mut key = format!(
            "{}/{}/{}/{}",
            self.uid,
            self.started_at.as_deref().unwrap_or("-"),
            self.finished_at.as_deref().unwrap_or("-"),
            self.phase_text
        );
        if self.run > 1 {
            key.push_str(&format!("/{}", self.run));
        }
        key
    }

    /// The key versions before 0.1.1 of the exit gate wrote (`<uid>/<finishedAt>`): a mark
    /// carrying it is read as this completion's, so an upgrade does not notify again.
    pub fn legacy_completion_key(&self) -> String {
        format!(
            "{}/{}",
            self.uid,
            self.finished_at.as_deref().unwrap_or(&self.phase_text)
        )
    }

    /// Whether `key` (read from a mark) names this completion.
    pub fn is_completion_key(&self, key: &str) -> bool {
        key == self.completion_key() || (self.run == 1 && key == self.legacy_completion_key())
    }

    /// For the tombstone rules, a copy in a complete phase counts as completed even without a
    /// `finishedAt`: nothing may act on an older copy of it.
    pub fn sighting(&self, kind: EventKind) -> Sighting<'_> {
        Sighting {
            resource_version: &self.resource_version,
            phase: self.phase,
            complete: self.phase.is_complete(),
            deleted: kind == EventKind::Deleted,
        }
    }

    /// The event record for the policy; `workflow` is the object as JSON text.
    pub fn event(&self, kind: EventKind, workflow: &Value) -> WorkflowEvent {
        self.event_from(kind, labels_of(workflow), policy_view(workflow))
    }

    /// The event record for the policy from what was kept of the workflow: its labels and its
    /// [`policy_view`].
    pub fn event_from(
        &self,
        kind: EventKind,
        labels: Vec<(String, String)>,
        view: String,
    ) -> WorkflowEvent {
        WorkflowEvent {
            kind,
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            resource_version: self.resource_version.clone(),
            phase: self.phase_text.clone(),
            labels,
            workflow: view,
        }
    }
}

/// The workflow's labels with string values, each cut as [`capped`] cuts.
pub fn labels_of(workflow: &Value) -> Vec<(String, String)> {
    workflow
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| {
                    Some((capped(k).into_owned(), capped(v.as_str()?).into_owned()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Status fields left out of what the policy sees: Argo's per-node bookkeeping, which grows
/// with the workflow and would dominate the cost of every decision.
pub const STATUS_FIELDS_WITHHELD: [&str; 2] = ["nodes", "storedTemplates"];

/// The status field holding the spec Argo merged from a `workflowTemplateRef`: the policy sees
/// only its exit handler (`onExit`, `hooks.exit`), which decides whether a workflow that takes
/// its spec from a template is notified; the rest of it can be as large as the template.
pub const STORED_SPEC_FIELD: &str = "storedWorkflowTemplateSpec";

/// The Workflow as JSON for the policy, without [`STATUS_FIELDS_WITHHELD`] and with
/// [`STORED_SPEC_FIELD`] cut down to its exit handler; tenant text the policy has no use for
/// in full (`status.message`, annotation values) cut as [`capped`] cuts. Written straight
/// from the object, without copying it.
pub fn policy_view(workflow: &Value) -> String {
    serde_json::to_string(&Withholding {
        value: workflow,
        level: Level::Top,
    })
    .unwrap_or_default()
}

/// Where in the workflow a value sits, as far as what is withheld or cut depends on it.
#[derive(Clone, Copy, PartialEq)]
enum Level {
    Top,
    Metadata,
    Annotations,
    Status,
    /// Anything below: written as it is.
    Inside,
}

struct Withholding<'a> {
    value: &'a Value,
    level: Level,
}

impl serde::Serialize for Withholding<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Value::Object(object) = self.value else {
            return self.value.serialize(serializer);
        };
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in object {
            let key_text = key.as_str();
            match (self.level, key_text, value) {
                (Level::Status, field, _) if STATUS_FIELDS_WITHHELD.contains(&field) => {}
                (Level::Status, STORED_SPEC_FIELD, _) => {
                    if let Some(exit) = ExitHandlerOnly::of(value) {
                        map.serialize_entry(key, &exit)?;
                    }
                }
                (Level::Status, "message", Value::String(text))
                | (Level::Annotations, _, Value::String(text)) => {
                    map.serialize_entry(key, &capped(text))?;
                }
                (Level::Top | Level::Metadata | Level::Status, _, _) => {
                    let level = match (self.level, key_text) {
                        (Level::Top, "status") => Level::Status,
                        (Level::Top, "metadata") => Level::Metadata,
                        (Level::Metadata, "annotations") => Level::Annotations,
                        _ => Level::Inside,
                    };
                    map.serialize_entry(key, &Withholding { value, level })?;
                }
                _ => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

/// `onExit` and `hooks.exit` of a workflow spec; None when it has neither.
struct ExitHandlerOnly<'a> {
    on_exit: Option<&'a Value>,
    exit_hook: Option<&'a Value>,
}

impl<'a> ExitHandlerOnly<'a> {
    fn of(spec: &'a Value) -> Option<Self> {
        let on_exit = spec.get("onExit");
        let exit_hook = spec.get("hooks").and_then(|hooks| hooks.get("exit"));
        (on_exit.is_some() || exit_hook.is_some()).then_some(ExitHandlerOnly { on_exit, exit_hook })
    }
}

impl serde::Serialize for ExitHandlerOnly<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        if let Some(on_exit) = self.on_exit {
            map.serialize_entry("onExit", on_exit)?;
        }
        if let Some(exit) = self.exit_hook {
            map.serialize_entry("hooks", &serde_json::json!({ "exit": exit }))?;
        }
        map.end()
    }
}

pub fn event_kind_name(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Added => "ADDED",
        EventKind::Modified => "MODIFIED",
        EventKind::Deleted => "DELETED",
        EventKind::Relisted => "RELISTED",
    }
}

/// Parses a watch event type (`ADDED`, `MODIFIED`, `DELETED`, or `RELISTED` for a list item).
pub fn parse_event_kind(kind: &str) -> Option<EventKind> {
    match kind.to_ascii_uppercase().as_str() {
        "ADDED" => Some(EventKind::Added),
        "MODIFIED" => Some(EventKind::Modified),
        "DELETED" => Some(EventKind::Deleted),
        "RELISTED" | "LISTED" => Some(EventKind::Relisted),
        _ => None,
    }
}
