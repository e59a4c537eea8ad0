//! `pipewarden eval`: run a policy offline over SWFs and workflow event sequences, through the
//! same engine and decision logic as the controller.

use std::collections::HashSet;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::inputs::{self, EventInput, Input};
use super::table::Table;
use crate::config::{EvalArgs, OutputFormat, read_settings};
use crate::engine::{Policy, PolicyError};
use crate::exit::TombstoneCache;
use crate::exit::event::event_kind_name;
use crate::exit::judge::{self, eligibility_parts};
use crate::exit::tombstone::ManualClock;
use crate::swf::decide::{RenderTarget, SwfOutcome, decide};
use crate::swf::{not_rebuildable_reason, object_key, parse_rebuild_policy};

/// What `eval` found, for the exit status.
#[derive(Default)]
struct Found {
    /// A decision failed (a policy error).
    errors: bool,
    /// A decision would write: an SWF that differs from its render, a notification.
    writes: bool,
}

/// Runs `eval`; returns the exit status (see `--exit-code`).
pub fn run(args: &EvalArgs) -> anyhow::Result<i32> {
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
    let mut found = Found::default();
    let mut swfs = Vec::new();
    let mut sequences = Vec::new();
    let mut out = std::io::stdout().lock();
    for path in &args.inputs {
        for input in inputs::load(path)? {
            match input {
                Input::Swf { object, .. } => swfs.push(object),
                Input::Events { source, events } => {
                    let rows = eval_events(&policy, &events, args, &mut found);
                    if args.output == OutputFormat::Table {
                        print_event_table(&mut out, &source, &rows)?;
                    } else if args.output == OutputFormat::Jsonl {
                        for row in &rows {
                            writeln!(out, "{row}")?;
                        }
                    }
                    sequences.push(json!({"source": source, "events": rows}));
                }
            }
        }
    }
    let (swf_rows, support) = if swfs.is_empty() {
        (Vec::new(), None)
    } else {
        let (rows, support) = eval_swfs(&policy, &swfs, &target, &mut found);
        (rows, Some(support.line(target.target_version.as_deref())))
    };
    match args.output {
        OutputFormat::Table => {
            if !swf_rows.is_empty() {
                print_swf_table(&mut out, &swf_rows)?;
            }
            if let Some(line) = &support {
                writeln!(out, "\n{line}")?;
            }
        }
        OutputFormat::Jsonl => {
            for row in &swf_rows {
                writeln!(out, "{row}")?;
            }
        }
        OutputFormat::Json | OutputFormat::Yaml => {
            let document = json!({
                "swfs": swf_rows,
                "event_sequences": sequences,
                "target": support,
            });
            if args.output == OutputFormat::Json {
                writeln!(out, "{}", serde_json::to_string_pretty(&document)?)?;
            } else {
                write!(out, "{}", serde_yaml::to_string(&document)?)?;
            }
        }
    }
    out.flush()?;
    Ok(match (args.exit_code, found.errors, found.writes) {
        (true, true, _) => 2,
        (true, false, writes) => i32::from(writes),
        (false, errors, _) => i32::from(errors),
    })
}

/// A row per SWF: its decision, reason, changed paths, diff lines and (for a rebuild) the
/// render that would be written.
fn eval_swfs(
    policy: &Policy,
    swfs: &[Value],
    target: &RenderTarget,
    found: &mut Found,
) -> (Vec<Value>, TargetSupport) {
    let mut support = TargetSupport::default();
    let mut rows = Vec::new();
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
                found.errors = true;
                ("error", format!("{} ({})", error, error.kind()), None)
            }
        };
        let changes = outcome.as_ref().map(SwfOutcome::changes).unwrap_or(&[]);
        found.writes |= !changes.is_empty();
        let lines: Vec<String> = changes.iter().map(ToString::to_string).collect();
        let paths: Vec<&str> = changes.iter().map(|c| c.path()).collect();
        let rendered = match &outcome {
            Some(SwfOutcome::Rebuild { desired, .. }) => desired.clone(),
            _ => Value::Null,
        };
        rows.push(json!({"swf": key, "decision": label, "reason": reason, "paths": paths, "diff": lines, "rendered": rendered}));
    }
    (rows, support)
}

fn print_swf_table(out: &mut impl Write, rows: &[Value]) -> std::io::Result<()> {
    let mut table = Table::new(&["SWF", "DECISION", "CHANGES", "REASON"]);
    let mut diffs = String::new();
    let text = |row: &Value, key: &str| row[key].as_str().unwrap_or_default().to_owned();
    for row in rows {
        let lines: Vec<&str> = row["diff"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        table.row(vec![
            text(row, "swf"),
            text(row, "decision"),
            lines.len().to_string(),
            text(row, "reason"),
        ]);
        if !lines.is_empty() {
            diffs.push_str(&format!(
                "\n{}: {} change(s)\n",
                text(row, "swf"),
                lines.len()
            ));
            for change in lines {
                diffs.push_str(&format!("  {change}\n"));
            }
        }
    }
    write!(out, "{}{diffs}", table.render())
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
                "target {target}: not compiled for by the policy ({reason}); nothing would be \
                 written"
            ),
            (None, true) => format!("target {target}: the policy compiles for it"),
            (None, false) => format!("target {target}: no render was needed to decide"),
        }
    }
}

/// A row per event of one sequence, through the tombstone cache and the policy, on a
/// simulated clock.
fn eval_events(
    policy: &Policy,
    events: &[EventInput],
    args: &EvalArgs,
    found: &mut Found,
) -> Vec<Value> {
    let clock = Arc::new(ManualClock::default());
    let tombstones = TombstoneCache::new(args.tombstone_ttl, 100_000, clock.clone());
    let mut notified = HashSet::new();
    let mut rows = Vec::new();
    for (index, input) in events.iter().enumerate() {
        clock.advance(Duration::from_secs(input.after_seconds));
        let kind = event_kind_name(input.kind);
        let row = match judge::assess(policy, &tombstones, input.kind, &input.workflow) {
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
                let decision = decision.label();
                let action = if !assessment.act {
                    "-"
                } else if notified.insert(facts.completion_key()) {
                    found.writes = true;
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
                found.errors = true;
                json!({"#": index + 1, "event": kind, "decision": "error", "reason": format!("{error} ({})", error.kind())})
            }
        };
        rows.push(row);
    }
    rows
}

const EVENT_COLUMNS: [&str; 10] = [
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
];

fn print_event_table(out: &mut impl Write, source: &str, rows: &[Value]) -> std::io::Result<()> {
    let headers: Vec<String> = EVENT_COLUMNS.iter().map(|c| c.to_uppercase()).collect();
    let mut table = Table::with_headers(headers);
    let cell = |row: &Value, key: &str| match &row[key] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    for row in rows {
        table.row(EVENT_COLUMNS.iter().map(|key| cell(row, key)).collect());
    }
    writeln!(out, "{source}: {} event(s)", rows.len())?;
    write!(out, "{}", table.render())
}
