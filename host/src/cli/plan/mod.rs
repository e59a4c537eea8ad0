//! `pipewarden plan`: what the controller would do on the cluster the kubeconfig names, with
//! the policy, settings and target `run` would use, as a table per SWF and per recently
//! completed workflow. Read-only: it lists SWFs and Workflows and reads what `run` reads (the
//! settings Deployment and its ConfigMaps, the KFP API's health endpoint); it writes no SWF,
//! mark, Event or Lease. Fetching is here; every decision is the controller's own, in `rows`.

pub mod rows;

use std::collections::BTreeMap;
use std::io::Write as _;

use anyhow::Context as _;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::Value;

use self::rows::{Report, SwfRow, WorkflowRow, changes_summary, swf_row, workflow_row};
use super::table::Table;
use crate::config::{CompileAs, ExitMode, OutputFormat, PlanArgs, SwfArgs};
use crate::controller::exit_gate::{mark_key, workflow_resource};
use crate::controller::load_policy_keeping_refused;
use crate::controller::metrics::Metrics;
use crate::controller::policy_handle::LoadedPolicy;
use crate::controller::policy_reload::install_facts;
use crate::controller::settings_source::{SettingsPin, SettingsSource};
use crate::controller::swf::swf_resource;
use crate::controller::swf::target::HealthPoller;
use crate::exit::claim::Claimant;
use crate::exit::gate::assess_listed;
use crate::exit::notification::{Rules, finished_before};
use crate::exit::seen::SeenWorkflow;
use crate::swf::decide::RenderTarget;
use crate::swf::healthz::Health;
use crate::swf::plan::plan;
use crate::swf::serving::{
    InstallFacts, Probe, SettingsHealth, outcome_without_policy, probe_input, read_probe, serving,
};
use crate::swf::{object_key, rebuild_policy_name};

/// Who plan is when it reads claims: never their holder, so every claim is someone else's.
const PLANNER: &str = "pipewarden-plan";
/// Objects per list request.
const PAGE: u32 = 500;

pub fn run(args: &PlanArgs) -> anyhow::Result<i32> {
    args.run.check()?;
    let runtime = tokio::runtime::Runtime::new()?;
    let fetched = runtime.block_on(fetch(args))?;
    let report = decide(args, fetched)?;
    print(&report, args.output)?;
    Ok(i32::from(args.exit_code && report.writes()))
}

/// What the decisions are made on.
struct Fetched {
    loaded: LoadedPolicy,
    /// What the install said, as `run` would read it at start.
    install: InstallFacts,
    target_version: Option<String>,
    swfs: Vec<Value>,
    workflows: Vec<Value>,
    notes: Vec<String>,
}

async fn fetch(args: &PlanArgs) -> anyhow::Result<Fetched> {
    let run = &args.run;
    let config = kube::Config::infer()
        .await
        .context("cannot build a Kubernetes client (KUBECONFIG or in-cluster config)")?;
    let client = kube::Client::try_from(config)?;
    let source = SettingsSource {
        file: run.settings.clone(),
        live: run.settings_from.clone().map(|at| (client.clone(), at)),
        pin: SettingsPin::from_flags(
            run.settings_sha256.as_deref(),
            run.settings_sha256_file.as_ref(),
        ),
    };
    let file = source.read_file()?;
    let (settings, read) = match source.read_install(&file).await {
        Some(Ok((settings, install))) => (settings, Some(Ok(install))),
        Some(Err(error)) => (file, Some(Err(error))),
        None => (file, None),
    };
    let (loaded, refused) =
        load_policy_keeping_refused(&run.policy, &settings, source.is_given(), &Metrics::new())?;
    let mut install = install_facts(refused, read.as_ref());
    let mut notes = Vec::new();
    let (target_version, swfs) = if run.swf.enabled {
        let health = health(&run.swf).await?;
        install.reported.clone_from(&health.version);
        install.healthz_multi_user = health.multi_user;
        let target = CompileAs::apply(&run.swf.compile_as, health.version);
        let swfs = list(
            &client,
            &run.namespaces,
            &swf_resource(),
            "ScheduledWorkflows",
        )
        .await;
        (target, served(swfs, &mut notes)?)
    } else {
        notes.push("the SWF loop is off (--swf-loop=false): no SWF planned".into());
        (None, Vec::new())
    };
    let workflows = if run.exit.exit_gate {
        let found = list(&client, &run.namespaces, &workflow_resource(), "Workflows").await;
        served(found, &mut notes)?
    } else {
        notes.push("the exit gate is off (--exit-gate=false): no workflow planned".into());
        Vec::new()
    };
    Ok(Fetched {
        loaded,
        install,
        target_version,
        swfs,
        workflows,
        notes,
    })
}

/// What `run` would learn of the KFP API at start: the flag's version, or its healthz.
async fn health(swf: &SwfArgs) -> anyhow::Result<Health> {
    Ok(match &swf.kfp_api_url {
        Some(url) => HealthPoller::new(url, swf.kfp_api_ca_file.as_deref())?
            .fetch()
            .await
            .context("the target version")?,
        None => Health {
            version: swf.target_version.clone().filter(|v| !v.trim().is_empty()),
            multi_user: None,
        },
    })
}

/// A kind the API server does not serve (its CRD is not installed) is a note, not an error.
fn served(
    listed: Result<Vec<Value>, ListError>,
    notes: &mut Vec<String>,
) -> anyhow::Result<Vec<Value>> {
    match listed {
        Ok(objects) => Ok(objects),
        Err(ListError::NotServed(what)) => {
            notes.push(format!("{what} are not served here (no CRD): none planned"));
            Ok(Vec::new())
        }
        Err(ListError::Failed(error)) => Err(error),
    }
}

enum ListError {
    NotServed(&'static str),
    Failed(anyhow::Error),
}

/// Every object of `resource` in `namespaces` (all when empty), a page at a time.
async fn list(
    client: &kube::Client,
    namespaces: &[String],
    resource: &ApiResource,
    what: &'static str,
) -> Result<Vec<Value>, ListError> {
    let apis: Vec<Api<DynamicObject>> = match namespaces {
        [] => vec![Api::all_with(client.clone(), resource)],
        some => some
            .iter()
            .map(|ns| Api::namespaced_with(client.clone(), ns, resource))
            .collect(),
    };
    let mut objects = Vec::new();
    for api in apis {
        let mut params = ListParams::default().limit(PAGE);
        loop {
            let page = match api.list(&params).await {
                Ok(page) => page,
                Err(kube::Error::Api(status)) if status.code == 404 => {
                    return Err(ListError::NotServed(what));
                }
                Err(error) => {
                    let error = anyhow::Error::new(error).context(format!("listing {what}"));
                    return Err(ListError::Failed(error));
                }
            };
            for item in page.items {
                let value = serde_json::to_value(item).map_err(|e| ListError::Failed(e.into()))?;
                objects.push(value);
            }
            match page.metadata.continue_.filter(|token| !token.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => break,
            }
        }
    }
    Ok(objects)
}

/// The controller's decisions on what was fetched.
fn decide(args: &PlanArgs, fetched: Fetched) -> anyhow::Result<Report> {
    let run = &args.run;
    let policy = &fetched.loaded.policy;
    let shard = run.shard.unwrap_or_default();
    let owned = |object: &Value| {
        let uid = object.pointer("/metadata/uid").and_then(Value::as_str);
        uid.is_some_and(|uid| shard.owns(uid))
    };
    let target = RenderTarget {
        rebuild_policy: run.swf.rebuild_policy,
        target_version: fetched.target_version.clone(),
        settings: fetched.loaded.settings.clone(),
    };
    // What the SWF loop may do, as `run` settles it before its first decision.
    let probe = match fetched.install.settings {
        SettingsHealth::Ok => read_probe(&policy.should_rebuild(&probe_input(
            run.swf.rebuild_policy,
            fetched.target_version.clone(),
            &fetched.loaded.settings,
        ))),
        _ => Probe::Unknown,
    };
    let facts = fetched.install.facts(
        run.swf.kfp_multi_user,
        fetched.target_version.clone(),
        probe,
    );
    let standing = serving(&facts);
    let mut swfs: Vec<SwfRow> = fetched
        .swfs
        .iter()
        .filter(|swf| owned(swf))
        .map(|swf| {
            let outcome = outcome_without_policy(&standing, &swf.to_string())
                .unwrap_or_else(|| plan(policy, swf, &target));
            swf_row(object_key(swf), &outcome)
        })
        .collect();
    swfs.sort_by(|a, b| a.swf.cmp(&b.swf));

    let claimant = Claimant::new(PLANNER);
    let key = mark_key(run.exit.exit_mark_key_file.as_deref())?;
    let now = Timestamp::now();
    let rules = Rules {
        claimant: &claimant,
        key: &key,
        now,
        catch_up: run.exit.exit_catchup_window,
    };
    let mut older_workflows = 0;
    let mut workflows: Vec<WorkflowRow> = Vec::new();
    for raw in fetched.workflows.into_iter().filter(|w| owned(w)) {
        let Some(seen) = SeenWorkflow::read(raw) else {
            continue;
        };
        if !seen.facts.complete {
            continue;
        }
        if finished_before(&seen.facts, now, args.workflows_since) {
            older_workflows += 1;
            continue;
        }
        let row = match assess_listed(policy, &seen.facts, &seen.raw) {
            Ok(eligibility) => workflow_row(
                &seen.facts,
                seen.own_mark(),
                seen.claim.as_ref(),
                &eligibility,
                &rules,
            ),
            Err(error) => WorkflowRow {
                workflow: format!("{}/{}", seen.facts.namespace, seen.facts.name),
                phase: seen.facts.phase_text.clone(),
                finished_at: seen.facts.finished_at.clone().unwrap_or_default(),
                plan: "policy error",
                reason: format!("{error} ({})", error.kind()),
            },
        };
        workflows.push(row);
    }
    workflows.sort_by(|a, b| a.workflow.cmp(&b.workflow));

    let observe = run.exit.exit_mode == ExitMode::Observe;
    let mut notes = fetched.notes;
    notes.extend(Report::mode_note(run.swf.rebuild_policy, observe));
    Ok(Report {
        target_version: fetched.target_version,
        mode: match &facts.mode {
            Some(Ok(mode)) if mode.multi_user => "multi-user",
            Some(Ok(_)) => "single-user",
            _ => "mode unknown",
        },
        swf_owner: standing.owner(),
        swf_loop: standing.to_string(),
        rebuild_policy: rebuild_policy_name(run.swf.rebuild_policy),
        exit_mode: if observe { "observe" } else { "notify" },
        swfs,
        workflows,
        older_workflows,
        notes,
    })
}

fn print(report: &Report, output: OutputFormat) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match output {
        OutputFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(report)?)?,
        OutputFormat::Yaml => write!(out, "{}", serde_yaml::to_string(report)?)?,
        OutputFormat::Table => write!(out, "{}", table_text(report))?,
    }
    out.flush()?;
    Ok(())
}

/// The plan as a person reads it: the setting line, notes, both tables, each with its counts.
pub fn table_text(report: &Report) -> String {
    let mut text = format!(
        "target {}, KFP {}, SWF owner {}, rebuild policy {}, exit mode {}\nswf loop: {}\n",
        report.target_version.as_deref().unwrap_or("unknown"),
        report.mode,
        report.swf_owner,
        report.rebuild_policy,
        report.exit_mode,
        report.swf_loop,
    );
    for note in &report.notes {
        text.push_str(&format!("note: {note}\n"));
    }
    let mut swfs = Table::new(&["SWF", "PLAN", "CHANGES", "REASON"]);
    let mut diffs = String::new();
    for row in &report.swfs {
        swfs.row(vec![
            row.swf.clone(),
            row.plan.into(),
            changes_summary(&row.changes),
            row.reason.clone(),
        ]);
        if !row.diff.is_empty() {
            diffs.push_str(&format!("\n{}:\n", row.swf));
            for line in &row.diff {
                diffs.push_str(&format!("  {line}\n"));
            }
        }
    }
    text.push('\n');
    text.push_str(&swfs.render());
    text.push_str(&counts("SWFs", report.swfs.iter().map(|r| r.plan), 0));
    text.push_str(&diffs);
    if !text.ends_with("\n\n") {
        text.push('\n');
    }
    let mut workflows = Table::new(&["WORKFLOW", "PHASE", "FINISHED", "PLAN", "REASON"]);
    for row in &report.workflows {
        workflows.row(vec![
            row.workflow.clone(),
            row.phase.clone(),
            row.finished_at.clone(),
            row.plan.into(),
            row.reason.clone(),
        ]);
    }
    text.push_str(&workflows.render());
    let plans = report.workflows.iter().map(|r| r.plan);
    text.push_str(&counts(
        "completed workflows",
        plans,
        report.older_workflows,
    ));
    text
}

/// `N what: 2 would rebuild, 1 up to date` (and how many older ones were left out).
fn counts<'a>(what: &str, plans: impl Iterator<Item = &'a str>, older: usize) -> String {
    let mut by_plan: BTreeMap<&str, usize> = BTreeMap::new();
    for plan in plans {
        *by_plan.entry(plan).or_default() += 1;
    }
    let total: usize = by_plan.values().sum();
    let parts: Vec<String> = by_plan.iter().map(|(p, n)| format!("{n} {p}")).collect();
    let mut line = format!("{total} {what}");
    if !parts.is_empty() {
        line.push_str(&format!(": {}", parts.join(", ")));
    }
    if older > 0 {
        line.push_str(&format!(" ({older} finished earlier, not listed)"));
    }
    line.push('\n');
    line
}
