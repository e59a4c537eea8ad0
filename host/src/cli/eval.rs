//! `pipewarden eval`: run a policy offline over SWFs and workflow event sequences, through the
//! same engine and decision logic as the controller.

use std::collections::HashSet;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::inputs::{self, EventInput, Input};
use super::table::Table;
use crate::config::{EvalArgs, OutputFormat, read_settings};
use crate::engine::{Policy, PolicyError};
use crate::exit::TombstoneCache;
use crate::exit::event::event_kind_name;
use crate::exit::gate::{self, eligibility_parts};
use crate::exit::tombstone::ManualClock;
use crate::swf::decide::{RenderTarget, SwfOutcome, decide};
use crate::swf::{not_rebuildable_reason, object_key, parse_rebuild_policy};

/// Returns whether every decision was made (no policy error).
pub fn run(args: &EvalArgs) -> anyhow::Result<bool> {
    let settings = read_settings(args.settings.as_ref())?;
    let policy_args = args.policy.with_settings_budget(&settings.budget);
    args.check_floors(&policy_args)?;
    let rebuild_policy = parse_rebuild_policy(&args.rebuild_policy).map_err(anyhow::Error::msg)?;
    let settings = settings.text;
    let policy = policy_args.load()?.with_settings(&settings);
    // Without settings only exit eligibility is meaningful; renders then see `{}`.
    if args.settings.is_some() {
        policy
            .validate_settings(&settings)
            .map_err(|e| anyhow::anyhow!("settings rejected: {e}"))?;
    } else {
        eprintln!("note: no --settings given; validate-settings skipped and renders get {{}}");
    }
    let target = RenderTarget {
        rebuild_policy,
        target_version: args.target_version.clone(),
        settings,
    };
    let mut all_ok = true;
    let mut swfs = Vec::new();
    for path in &args.inputs {
        for input in inputs::load(path)? {
            match input {
                Input::Swf { object, .. } => swfs.push(object),
                Input::Events { source, events } => {
                    all_ok &= eval_events(&policy, &source, &events, args)?;
                }
            }
        }
    }
    if !swfs.is_empty() {
        all_ok &= eval_swfs(&policy, &swfs, &target, args.output)?;
    }
    Ok(all_ok)
}

fn eval_swfs(
    policy: &Policy,
    swfs: &[Value],
    target: &RenderTarget,
    output: OutputFormat,
) -> std::io::Result<bool> {
    let mut out = std::io::stdout().lock();
    let mut table = Table::new(&["SWF", "DECISION", "CHANGES", "REASON"]);
    let mut diffs = String::new();
    let mut all_ok = true;
    let mut support = TargetSupport::default();
    for swf in swfs {
        let key = object_key(swf);
        let decided = decide(policy, swf, target);
        if let Ok(outcome) = &decided {
            support.observe(outcome);
        }
        let (label, reason, outcome) = match decided {
            Ok(outcome) => (outcome.label(), outcome.reason().to_string(), Some(outcome)),
            // What the controller reports as not rebuildable and leaves alone.
            Err(PolicyError::Guest { message, .. })
                if not_rebuildable_reason(&message).is_some() =>
            {
                let reason = not_rebuildable_reason(&message).unwrap_or_default();
                ("not-rebuildable", reason.to_owned(), None)
            }
            Err(error) => {
                all_ok = false;
                ("error", format!("{} ({})", error, error.kind()), None)
            }
        };
        let changes = outcome.as_ref().map(SwfOutcome::changes).unwrap_or(&[]);
        if output != OutputFormat::Table {
            let lines: Vec<String> = changes.iter().map(ToString::to_string).collect();
            let paths: Vec<&str> = changes.iter().map(|c| c.path()).collect();
            let rendered = match &outcome {
                Some(SwfOutcome::Rebuild { desired, .. }) => desired.clone(),
                _ => Value::Null,
            };
            let row = json!({"swf": key, "decision": label, "reason": reason, "paths": paths, "diff": lines, "rendered": rendered});
            write_row(&mut out, output, &row)?;
            continue;
        }
        table.row(vec![
            key.clone(),
            label.into(),
            changes.len().to_string(),
            reason,
        ]);
        if !changes.is_empty() {
            diffs.push_str(&format!("\n{key}: {} change(s)\n", changes.len()));
            for change in changes {
                diffs.push_str(&format!("  {change}\n"));
            }
        }
    }
    if output == OutputFormat::Table {
        write!(out, "{}{diffs}", table.render())?;
        writeln!(out, "{}", support.line(target.target_version.as_deref()))?;
    }
    out.flush()?;
    Ok(all_ok)
}

/// Whether the policy compiled for the target, as its decisions showed: said after the table.
#[derive(Default)]
struct TargetSupport {
    rendered: bool,
    refused: Option<String>,
}

impl TargetSupport {
    fn observe(&mut self, outcome: &SwfOutcome) {
        match outcome {
            SwfOutcome::UnsupportedTarget { reason } => self.refused = Some(reason.clone()),
            SwfOutcome::UpToDate { .. }
            | SwfOutcome::Rebuild { .. }
            | SwfOutcome::WouldRebuild { .. } => self.rendered = true,
            _ => {}
        }
    }

    fn line(&self, target: Option<&str>) -> String {
        let target = target.unwrap_or("unknown");
        match (&self.refused, self.rendered) {
            (Some(reason), _) => format!(
                "\ntarget {target}: not compiled for by the policy ({reason}); nothing would be \
                 written"
            ),
            (None, true) => format!("\ntarget {target}: the policy compiles for it"),
            (None, false) => format!("\ntarget {target}: no render was needed to decide"),
        }
    }
}

fn eval_events(
    policy: &Policy,
    source: &str,
    events: &[EventInput],
    args: &EvalArgs,
) -> anyhow::Result<bool> {
    let clock = Arc::new(ManualClock::default());
    let tombstones = TombstoneCache::new(args.tombstone_ttl, 100_000, clock.clone());
    let mut notified = HashSet::new();
    let mut table = Table::new(&[
        "#",
        "EVENT",
        "WORKFLOW",
        "UID",
        "RV",
        "PHASE",
        "TOMBSTONE",
        "DECISION",
        "ACTION",
        "REASON",
    ]);
    let mut all_ok = true;
    let mut out = std::io::stdout().lock();
    for (index, input) in events.iter().enumerate() {
        clock.advance(Duration::from_secs(input.after_seconds));
        let kind = event_kind_name(input.kind);
        let row = match gate::assess(policy, &tombstones, input.kind, &input.workflow) {
            Ok(assessment) => {
                let facts = &assessment.facts;
                let tombstone = assessment
                    .tombstone
                    .map(|t| {
                        format!(
                            "{}{}",
                            t.resource_version,
                            if t.completed { " done" } else { "" }
                        )
                    })
                    .unwrap_or_else(|| "-".into());
                let (decision, reason) = eligibility_parts(&assessment.eligibility);
                let action = if !assessment.act {
                    "-"
                } else if notified.insert(facts.completion_key()) {
                    "notify"
                } else {
                    "already notified"
                };
                json!({
                    "#": index + 1, "event": kind, "workflow": format!("{}/{}", facts.namespace, facts.name),
                    "uid": facts.uid, "rv": facts.resource_version, "phase": facts.phase_text,
                    "tombstone": tombstone, "decision": decision, "action": action, "reason": reason,
                })
            }
            Err(error) => {
                all_ok = false;
                json!({"#": index + 1, "event": kind, "decision": "error", "reason": format!("{error} ({})", error.kind())})
            }
        };
        if args.output != OutputFormat::Table {
            write_row(&mut out, args.output, &row)?;
        } else {
            let cell = |key: &str| match &row[key] {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            table.row(
                [
                    "#",
                    "event",
                    "workflow",
                    "uid",
                    "rv",
                    "phase",
                    "tombstone",
                    "decision",
                    "action",
                    "reason",
                ]
                .iter()
                .map(|key| cell(key))
                .collect(),
            );
        }
    }
    if args.output == OutputFormat::Table {
        writeln!(out, "{source}: {} event(s)", events.len())?;
        write!(out, "{}", table.render())?;
    }
    out.flush()?;
    Ok(all_ok)
}

/// One row as a JSON line or a YAML document.
fn write_row(
    out: &mut impl std::io::Write,
    output: OutputFormat,
    row: &Value,
) -> std::io::Result<()> {
    if output == OutputFormat::Yaml {
        let text = serde_yaml::to_string(row).map_err(std::io::Error::other)?;
        write!(out, "---\n{text}")
    } else {
        writeln!(out, "{row}")
    }
}
