//! Reading `eval` inputs: ScheduledWorkflows, and sequences of workflow watch events.

use std::path::Path;

use anyhow::{Context, bail};
use serde::Deserialize;
use serde_json::Value;

use crate::engine::EventKind;
use crate::exit::event::parse_event_kind;

/// One workflow event of a sequence: `{type, object}` as a watch delivers it, optionally
/// `afterSeconds` to move the simulated clock first (to show tombstone expiry).
#[derive(Debug)]
pub struct EventInput {
    pub kind: EventKind,
    pub workflow: Value,
    pub after_seconds: u64,
}

#[derive(Debug)]
pub enum Input {
    Swf {
        source: String,
        object: Value,
    },
    Events {
        source: String,
        events: Vec<EventInput>,
    },
}

/// A file holds SWFs (YAML documents, JSON, or a `List`) or watch events (YAML documents, a
/// JSON array, or JSON lines). Events in one file form one sequence.
pub fn load(path: &Path) -> anyhow::Result<Vec<Input>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let source = path.display().to_string();
    let documents = documents(&text).with_context(|| format!("cannot parse {source}"))?;
    let mut inputs = Vec::new();
    let mut events = Vec::new();
    for (index, document) in documents.into_iter().enumerate() {
        classify(document, &mut inputs, &mut events, &source)
            .with_context(|| format!("{source}: document {}", index + 1))?;
    }
    // Nothing to evaluate is a mistake (a wrong path, a truncated download), not a pass.
    if inputs.is_empty() && events.is_empty() {
        bail!("{source} is empty: it holds no ScheduledWorkflow and no workflow watch event");
    }
    if !events.is_empty() {
        inputs.push(Input::Events { source, events });
    }
    Ok(inputs)
}

fn documents(text: &str) -> anyhow::Result<Vec<Value>> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.len() > 1 && lines.iter().all(|l| l.starts_with('{') && l.ends_with('}')) {
        return lines.iter().map(|l| Ok(serde_json::from_str(l)?)).collect();
    }
    let mut docs = Vec::new();
    for document in serde_yaml::Deserializer::from_str(text) {
        // `<<: *anchor` merge keys, as event files written by hand use them.
        let mut yaml = serde_yaml::Value::deserialize(document)?;
        yaml.apply_merge()?;
        let value: Value = serde_yaml::from_value(yaml)?;
        if !value.is_null() {
            docs.push(value);
        }
    }
    Ok(docs)
}

fn classify(
    doc: Value,
    inputs: &mut Vec<Input>,
    events: &mut Vec<EventInput>,
    source: &str,
) -> anyhow::Result<()> {
    if let Value::Array(items) = doc {
        for item in items {
            classify(item, inputs, events, source)?;
        }
        return Ok(());
    }
    match doc.get("kind").and_then(Value::as_str) {
        Some("ScheduledWorkflow") => {
            inputs.push(Input::Swf {
                source: source.to_string(),
                object: doc,
            });
            return Ok(());
        }
        Some(kind) if kind.ends_with("List") => {
            let items = doc.get("items").cloned().unwrap_or(Value::Array(vec![]));
            return classify(items, inputs, events, source);
        }
        _ => {}
    }
    if let (Some(kind), Some(object)) = (doc.get("type").and_then(Value::as_str), doc.get("object"))
    {
        let Some(kind) = parse_event_kind(kind) else {
            bail!("unknown event type {kind:?}; expected ADDED, MODIFIED, DELETED or RELISTED");
        };
        events.push(EventInput {
            kind,
            workflow: object.clone(),
            after_seconds: doc.get("afterSeconds").and_then(Value::as_u64).unwrap_or(0),
        });
        return Ok(());
    }
    bail!("neither a ScheduledWorkflow nor a workflow watch event ({{type, object}})")
}
