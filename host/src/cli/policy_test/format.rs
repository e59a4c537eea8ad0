//! The case file format of `pipewarden test` (documented in `docs/author/policy-tests.md`): parsed
//! and checked whole before any case runs, so a malformed file names the file, the case and
//! the problem, and no half-run is printed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow, bail};
use serde::Deserialize;
use serde_json::Value;

/// One case file, its paths resolved against the file's directory.
#[derive(Debug)]
pub struct CaseFile {
    pub path: PathBuf,
    /// Settings as written in the file (a path or an inline mapping), if any.
    pub settings: Option<SettingsSource>,
    /// The KFP version to render for, unless a case says otherwise.
    pub target: Option<String>,
    pub cases: Vec<Case>,
}

#[derive(Debug, Clone)]
pub enum SettingsSource {
    File(PathBuf),
    Inline(Value),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    settings: Option<Value>,
    target: Option<String>,
    cases: Vec<serde_yaml::Value>,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ExportName {
    ShouldRebuild,
    RenderSwf,
    ExitEligibility,
}

impl ExportName {
    pub fn as_str(self) -> &'static str {
        match self {
            ExportName::ShouldRebuild => "should-rebuild",
            ExportName::RenderSwf => "render-swf",
            ExportName::ExitEligibility => "exit-eligibility",
        }
    }
}

/// One case. Which fields apply depends on `export`; [`check_case`] refuses the others.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Case {
    pub name: String,
    pub export: ExportName,
    /// Overrides the file's target; `null` means the version is unknown.
    #[serde(default, deserialize_with = "present")]
    pub target: Option<Option<String>>,
    /// Merged key by key over the file's settings for this case.
    pub settings: Option<serde_json::Map<String, Value>>,
    /// Settings text edits (`from: to`), applied after the merge: settings changed since a render.
    #[serde(default)]
    pub settings_replace: BTreeMap<String, String>,
    /// should-rebuild: `always` (default), `on-version-change` or `disable`.
    pub rebuild_policy: Option<String>,
    pub swf: Option<SwfSpec>,
    /// should-rebuild: rebuild | skip; render-swf: ok (default) | error; exit-eligibility with
    /// `event`: the decision.
    pub expect: Option<String>,
    /// A text the decision's reason must contain.
    pub reason: Option<String>,
    /// render-swf with `expect: error`: a text the error must contain.
    pub error: Option<String>,
    /// render-swf: the paths the render changes (as `eval` prints them), in any order.
    pub changes: Option<Vec<String>>,
    /// render-swf: the SWF the render must equal (spec and annotations, compared as `run` does).
    pub output: Option<SwfSpec>,
    /// render-swf: change paths (or path prefixes) left out of `changes` and `output`.
    #[serde(default)]
    pub ignore: Vec<String>,
    /// render-swf: JSON pointer -> the value the render holds there.
    #[serde(default)]
    pub equal: BTreeMap<String, Value>,
    /// render-swf: JSON pointers the render must have.
    #[serde(default)]
    pub present: Vec<String>,
    /// render-swf: JSON pointer -> the JSON type of the value there, in the render as returned
    /// (the embedded workflow not parsed: `{/spec/workflow/spec: string}` is KFP's form).
    #[serde(default)]
    pub types: BTreeMap<String, String>,
    /// render-swf: rendering the render again gives the same text.
    #[serde(default)]
    pub idempotent: bool,
    /// render-swf: the render is the input, as JSON.
    #[serde(default)]
    pub unchanged: bool,
    /// exit-eligibility: what shorthand events are built on.
    pub workflow: Option<WorkflowBase>,
    /// exit-eligibility: the tombstone held before the first event.
    pub tombstone: Option<TombstoneSpec>,
    /// exit-eligibility: one event, its expectation in `expect`/`reason`/`action`.
    pub event: Option<EventSpec>,
    /// exit-eligibility: a sequence, the tombstone carried between events as in `run`.
    pub events: Option<Vec<EventSpec>>,
    /// exit-eligibility with `event`: notify | already-notified | none.
    pub action: Option<String>,
}

/// Distinguishes a key given as `null` from a key left out.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// An SWF: a file, inline text or an inline object; optionally rendered by the policy under
/// test first, then edited.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SwfSpec {
    pub file: Option<PathBuf>,
    pub text: Option<String>,
    pub object: Option<Value>,
    #[serde(default)]
    pub rendered: bool,
    /// JSON pointer -> value; `null` removes. `~1` is `/`.
    #[serde(default)]
    pub set: BTreeMap<String, Value>,
    #[serde(default)]
    pub reverse_parameters: bool,
}

/// Fields every shorthand event of a case shares.
#[derive(Debug, Deserialize, Clone, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkflowBase {
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub uid: Option<String>,
    pub spec: Option<Value>,
    pub stored_spec: Option<Value>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct TombstoneSpec {
    pub rv: String,
    #[serde(default)]
    pub phase: String,
    #[serde(default)]
    pub completed: bool,
}

/// A watch event: a whole workflow (`object` or `file`), or shorthand fields on the case's
/// `workflow`.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EventSpec {
    #[serde(rename = "type", alias = "kind")]
    pub kind: String,
    pub object: Option<Value>,
    pub file: Option<PathBuf>,
    pub rv: Option<String>,
    pub phase: Option<String>,
    /// Sets the `workflows.argoproj.io/completed` label.
    #[serde(default)]
    pub completed: bool,
    pub spec: Option<Value>,
    pub stored_spec: Option<Value>,
    #[serde(default)]
    pub after_seconds: u64,
    pub expect: Option<String>,
    pub reason: Option<String>,
    pub action: Option<String>,
}

pub const REBUILD_DECISIONS: &[&str] = &["rebuild", "skip"];
pub const RENDER_OUTCOMES: &[&str] = &["ok", "error"];
pub const JSON_TYPES: &[&str] = &["string", "object", "array", "number", "boolean", "null"];
pub const ELIGIBILITIES: &[&str] = &["process", "skip", "reject-stale", "requeue"];
pub const ACTIONS: &[&str] = &["notify", "already-notified", "none"];

/// Reads and checks one case file.
pub fn load(path: &Path) -> anyhow::Result<CaseFile> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {source}"))?;
    let mut yaml: serde_yaml::Value =
        serde_yaml::from_str(&text).with_context(|| format!("{source}: not YAML"))?;
    yaml.apply_merge()
        .with_context(|| format!("{source}: bad merge key"))?;
    let raw: RawFile = serde_yaml::from_value(yaml)
        .with_context(|| format!("{source}: not a case file (settings, target, cases)"))?;
    if raw.cases.is_empty() {
        bail!("{source}: no cases");
    }
    let base = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let settings = match raw.settings {
        None => None,
        Some(Value::String(file)) => Some(SettingsSource::File(base.join(file))),
        Some(Value::Object(map)) => Some(SettingsSource::Inline(Value::Object(map))),
        Some(_) => bail!("{source}: settings must be a file path or a mapping"),
    };
    let mut cases = Vec::new();
    let mut names = std::collections::HashSet::new();
    for (index, value) in raw.cases.into_iter().enumerate() {
        let label = value
            .get("name")
            .and_then(serde_yaml::Value::as_str)
            .map(|name| format!("case {} ({name:?})", index + 1))
            .unwrap_or_else(|| format!("case {}", index + 1));
        let case = serde_yaml::from_value::<Case>(value)
            .map_err(anyhow::Error::from)
            .and_then(|mut case| {
                check_case(&case)?;
                resolve_paths(&mut case, &base);
                Ok(case)
            })
            .map_err(|e| anyhow!("{source}: {label}: {e:#}"))?;
        if !names.insert(case.name.clone()) {
            bail!("{source}: {label}: another case has this name");
        }
        cases.push(case);
    }
    Ok(CaseFile {
        path: path.to_path_buf(),
        settings,
        target: raw.target,
        cases,
    })
}

/// Refuses fields that do not apply to the case's export and expectations out of range.
fn check_case(case: &Case) -> anyhow::Result<()> {
    if case.name.trim().is_empty() {
        bail!("name is empty");
    }
    let export = case.export.as_str();
    let given = |fields: &[(&'static str, bool)]| -> Vec<&'static str> {
        fields.iter().filter(|(_, g)| *g).map(|(n, _)| *n).collect()
    };
    let render_only = given(&[
        ("error", case.error.is_some()),
        ("changes", case.changes.is_some()),
        ("output", case.output.is_some()),
        ("ignore", !case.ignore.is_empty()),
        ("equal", !case.equal.is_empty()),
        ("present", !case.present.is_empty()),
        ("types", !case.types.is_empty()),
        ("idempotent", case.idempotent),
        ("unchanged", case.unchanged),
    ]);
    let exit_only = given(&[
        ("workflow", case.workflow.is_some()),
        ("tombstone", case.tombstone.is_some()),
        ("event", case.event.is_some()),
        ("events", case.events.is_some()),
        ("action", case.action.is_some()),
    ]);
    let swf_only = given(&[
        ("swf", case.swf.is_some()),
        ("target", case.target.is_some()),
    ]);
    let rebuild_only = given(&[("rebuildPolicy", case.rebuild_policy.is_some())]);
    let refuse = |fields: Vec<&'static str>| -> anyhow::Result<()> {
        match fields.first() {
            Some(field) => bail!("{field} does not apply to export {export}"),
            None => Ok(()),
        }
    };
    match case.export {
        ExportName::ShouldRebuild => {
            refuse(render_only)?;
            refuse(exit_only)?;
            check_swf(case.swf.as_ref())?;
            if let Some(policy) = &case.rebuild_policy {
                crate::swf::parse_rebuild_policy(policy).map_err(anyhow::Error::msg)?;
            }
            one_of("expect", case.expect.as_deref(), REBUILD_DECISIONS, true)
        }
        ExportName::RenderSwf => {
            refuse(exit_only)?;
            refuse(rebuild_only)?;
            refuse(given(&[("reason", case.reason.is_some())]))?;
            check_swf(case.swf.as_ref())?;
            if let Some(output) = &case.output {
                check_swf(Some(output)).context("output")?;
            }
            one_of("expect", case.expect.as_deref(), RENDER_OUTCOMES, false)?;
            let wants_error = case.expect.as_deref() == Some("error");
            if wants_error && (case.error.is_none() || !render_only_checks(case).is_empty()) {
                bail!(
                    "expect: error takes `error` (a text the error contains) and no output checks"
                );
            }
            if !wants_error && case.error.is_some() {
                bail!("error is for expect: error");
            }
            if !wants_error && render_only_checks(case).is_empty() {
                bail!(
                    "a render-swf case needs a check: changes, output, equal, present, types, idempotent or unchanged"
                );
            }
            for pointer in case.equal.keys().chain(&case.present) {
                check_pointer(pointer)?;
            }
            for (pointer, json_type) in &case.types {
                check_pointer(pointer)?;
                one_of(
                    &format!("types {pointer}"),
                    Some(json_type),
                    JSON_TYPES,
                    true,
                )?;
            }
            Ok(())
        }
        ExportName::ExitEligibility => {
            refuse(render_only)?;
            refuse(swf_only)?;
            refuse(rebuild_only)?;
            refuse(given(&[(
                "settingsReplace",
                !case.settings_replace.is_empty(),
            )]))?;
            if case.tombstone.as_ref().is_some_and(|t| t.rv.is_empty()) {
                bail!("tombstone.rv is empty");
            }
            match (&case.event, &case.events) {
                (Some(event), None) => {
                    if event.expect.is_some() || event.reason.is_some() || event.action.is_some() {
                        bail!("with `event`, expect, reason and action go on the case");
                    }
                    check_event_shape(event).context("event")?;
                    check_expectation(case.expect.as_deref(), case.action.as_deref())
                }
                (None, Some(events)) if !events.is_empty() => {
                    if case.expect.is_some() || case.reason.is_some() || case.action.is_some() {
                        bail!("with `events`, expect, reason and action go on each event");
                    }
                    for (i, event) in events.iter().enumerate() {
                        check_event_shape(event)
                            .and_then(|()| {
                                check_expectation(event.expect.as_deref(), event.action.as_deref())
                            })
                            .with_context(|| format!("event {}", i + 1))?;
                    }
                    Ok(())
                }
                (None, Some(_)) => bail!("events is empty"),
                (None, None) => bail!("an exit-eligibility case needs event or events"),
                (Some(_), Some(_)) => bail!("give event or events, not both"),
            }
        }
    }
}

fn render_only_checks(case: &Case) -> Vec<&'static str> {
    [
        ("changes", case.changes.is_some()),
        ("output", case.output.is_some()),
        ("equal", !case.equal.is_empty()),
        ("present", !case.present.is_empty()),
        ("types", !case.types.is_empty()),
        ("idempotent", case.idempotent),
        ("unchanged", case.unchanged),
    ]
    .iter()
    .filter(|(_, g)| *g)
    .map(|(n, _)| *n)
    .collect()
}

fn check_swf(swf: Option<&SwfSpec>) -> anyhow::Result<()> {
    let Some(swf) = swf else {
        bail!("swf is missing (file, text or object)");
    };
    let sources = [swf.file.is_some(), swf.text.is_some(), swf.object.is_some()];
    if sources.iter().filter(|g| **g).count() != 1 {
        bail!("an swf is exactly one of file, text or object");
    }
    if swf.text.is_some() && (swf.rendered || !swf.set.is_empty() || swf.reverse_parameters) {
        bail!("an swf given as text is used as it is: no rendered, set or reverseParameters");
    }
    for pointer in swf.set.keys() {
        check_pointer(pointer)?;
    }
    Ok(())
}

fn check_event_shape(event: &EventSpec) -> anyhow::Result<()> {
    if crate::exit::event::parse_event_kind(&event.kind).is_none() {
        bail!(
            "type {:?} is not ADDED, MODIFIED, DELETED or RELISTED",
            event.kind
        );
    }
    let whole = event.object.is_some() || event.file.is_some();
    if event.object.is_some() && event.file.is_some() {
        bail!("give object or file, not both");
    }
    let shorthand = event.rv.is_some()
        || event.phase.is_some()
        || event.completed
        || event.spec.is_some()
        || event.stored_spec.is_some();
    if whole && shorthand {
        bail!(
            "a whole workflow (object or file) takes no rv, phase, completed, spec or storedSpec"
        );
    }
    if !whole && event.rv.is_none() {
        bail!("needs object, file or rv");
    }
    Ok(())
}

fn check_expectation(expect: Option<&str>, action: Option<&str>) -> anyhow::Result<()> {
    one_of("expect", expect, ELIGIBILITIES, true)?;
    one_of("action", action, ACTIONS, false)
}

fn one_of(
    field: &str,
    value: Option<&str>,
    allowed: &[&str],
    required: bool,
) -> anyhow::Result<()> {
    match value {
        None if required => bail!("{field} is missing; one of {}", allowed.join(", ")),
        Some(v) if !allowed.contains(&v) => {
            bail!("{field} {v:?} is not one of {}", allowed.join(", "))
        }
        _ => Ok(()),
    }
}

fn check_pointer(pointer: &str) -> anyhow::Result<()> {
    if !pointer.starts_with('/') {
        bail!("{pointer:?} is not a JSON pointer (it starts with /; `~1` is /)");
    }
    Ok(())
}

fn resolve_paths(case: &mut Case, base: &Path) {
    let resolve = |file: &mut Option<PathBuf>| {
        if let Some(path) = file {
            *path = base.join(&*path);
        }
    };
    for swf in [&mut case.swf, &mut case.output].into_iter().flatten() {
        resolve(&mut swf.file);
    }
    for event in case
        .event
        .iter_mut()
        .chain(case.events.iter_mut().flatten())
    {
        resolve(&mut event.file);
    }
}
