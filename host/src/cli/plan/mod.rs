//! `pipewarden plan`: what the controller would do on the cluster the kubeconfig names, with
//! the policy, settings and target `run` would use. Read-only: it lists SWFs and Workflows and
//! reads what `run` reads (the settings Deployment and its ConfigMaps, the KFP API's health
//! endpoint); it writes no SWF, mark, Event or Lease.
//!
//! It streams: each kind is listed a page at a time, each page decided (on as many threads as
//! there are cores) and dropped; the rows go to a temporary file (`spool`) and only the counts
//! stay in memory (`summary`), which are printed first. Every decision is the controller's own
//! (`rows`); the outputs are in `output`.

mod decide;
mod output;
mod pages;
pub mod rows;
mod spool;
pub mod summary;

use std::time::Instant;

use anyhow::Context as _;
use k8s_openapi::jiff::Timestamp;

use self::decide::{Decider, Progress};
use self::pages::{Page, Pages};
use self::rows::Header;
use self::spool::Spool;
use self::summary::Summary;
use crate::cluster::kfp_target::HealthPoller;
use crate::cluster::policy_handle::LoadedPolicy;
use crate::cluster::policy_load::load_policy_keeping_refused;
use crate::cluster::policy_reload::install_facts;
use crate::cluster::resources::swf_resource;
use crate::cluster::resources::workflow_resource;
use crate::cluster::settings_source::{SettingsPin, SettingsSource};
use crate::config::{CompileAs, ExitMode, PlanArgs, PlanOnly, SwfArgs};
use crate::exit::event::COMPLETED_LABEL;
use crate::metrics::Metrics;
use crate::swf::healthz::Health;
use crate::swf::rebuild_policy_name;
use crate::swf::serving::{InstallFacts, Probe, SettingsHealth, probe_input, read_probe, serving};

/// SWFs per list request: about 11 KB each as JSON, several times that as values.
const SWF_PAGE: u32 = 200;
/// Workflows per list request: a workflow with a few hundred nodes is 100-500 KB.
const WORKFLOW_PAGE: u32 = 50;

pub fn run(args: &PlanArgs) -> anyhow::Result<i32> {
    args.run.check()?;
    let runtime = tokio::runtime::Runtime::new()?;
    let started = Instant::now();
    let client = runtime.block_on(async {
        let config = args.run.cluster.config().await?;
        anyhow::Ok(kube::Client::try_from(config)?)
    })?;
    let context = runtime.block_on(read_context(args, &client))?;
    let (header, decider) = settle(args, &context)?;
    let mut summary = Summary::default();
    let mut spool = Spool::new()?;
    let mut notes = header.notes.clone();
    let mut progress = Progress::new(!args.quiet, started);
    let run = &args.run;
    if run.swf.enabled {
        let mut pages = Pages::new(
            &client,
            &run.namespaces,
            &swf_resource(),
            "ScheduledWorkflows",
            None,
            SWF_PAGE,
        );
        progress.phase("listing and deciding ScheduledWorkflows");
        while let Some(page) = runtime.block_on(pages.next()) {
            match page? {
                Page::NotServed => notes.push(not_served("ScheduledWorkflows")),
                Page::Objects(swfs) => {
                    for row in decider.swfs(swfs) {
                        summary.swf(&row);
                        if listed(args.only, row.writes(), row.is_problem()) {
                            spool.swf(&row)?;
                        }
                        progress.swf();
                    }
                }
            }
        }
        progress.swfs_done();
    } else {
        notes.push("the SWF loop is off (--swf-loop=false): no SWF planned".into());
    }
    if run.exit.exit_gate {
        let selector = format!("{COMPLETED_LABEL}=true");
        let mut pages = Pages::new(
            &client,
            &run.namespaces,
            &workflow_resource(),
            "Workflows",
            Some(&selector),
            WORKFLOW_PAGE,
        );
        progress.phase("listing completed Workflows");
        while let Some(page) = runtime.block_on(pages.next()) {
            match page? {
                Page::NotServed => notes.push(not_served("Workflows")),
                Page::Objects(workflows) => {
                    for workflow in workflows {
                        let Some(row) = decider.workflow(workflow, &mut summary)? else {
                            continue;
                        };
                        summary.workflow(&row);
                        if listed(args.only, row.writes(), row.is_problem()) {
                            spool.workflow(&row)?;
                        }
                        progress.workflow();
                    }
                }
            }
        }
        progress.workflows_done();
    } else {
        notes.push("the exit gate is off (--exit-gate=false): no workflow planned".into());
    }
    let header = Header { notes, ..header };
    let spooled = spool.finish()?;
    output::print(&header, &summary, &spooled, args)?;
    Ok(i32::from(args.exit_code && summary.writes()))
}

fn not_served(what: &str) -> String {
    format!("{what} are not served here (no CRD): none planned")
}

/// Whether a row is listed under `--only`.
fn listed(only: Option<PlanOnly>, writes: bool, problem: bool) -> bool {
    match only {
        None => true,
        Some(PlanOnly::Changed) => writes,
        Some(PlanOnly::Problems) => problem,
    }
}

/// What `run` would read at start, before any SWF.
struct Context {
    loaded: LoadedPolicy,
    install: InstallFacts,
    target_version: Option<String>,
}

async fn read_context(args: &PlanArgs, client: &kube::Client) -> anyhow::Result<Context> {
    let run = &args.run;
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
    let mut target_version = None;
    if run.swf.enabled {
        let health = health(&run.swf).await?;
        install.reported.clone_from(&health.version);
        install.healthz_multi_user = health.multi_user;
        target_version = CompileAs::apply(&run.swf.compile_as, health.version);
    }
    Ok(Context {
        loaded,
        install,
        target_version,
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

/// The loop's standing as `run` settles it before its first decision, the header, and what
/// decides each object.
fn settle<'a>(args: &PlanArgs, context: &'a Context) -> anyhow::Result<(Header, Decider<'a>)> {
    let run = &args.run;
    let policy = &context.loaded.policy;
    let probe = match context.install.settings {
        SettingsHealth::Ok => read_probe(&policy.should_rebuild(&probe_input(
            run.swf.rebuild_policy,
            context.target_version.clone(),
            &context.loaded.settings,
        ))),
        _ => Probe::Unknown,
    };
    let facts = context.install.facts(
        run.swf.kfp_multi_user,
        context.target_version.clone(),
        probe,
    );
    let standing = serving(&facts);
    let observe = run.exit.exit_mode == ExitMode::Observe;
    let header = Header {
        target_version: context.target_version.clone(),
        mode: match &facts.mode {
            Some(Ok(mode)) if mode.multi_user => "multi-user",
            Some(Ok(_)) => "single-user",
            _ => "mode unknown",
        },
        swf_owner: standing.owner(),
        swf_loop: standing.to_string(),
        rebuild_policy: rebuild_policy_name(run.swf.rebuild_policy),
        exit_mode: if observe { "observe" } else { "notify" },
        only: args.only.map(|only| match only {
            PlanOnly::Changed => "changed",
            PlanOnly::Problems => "problems",
        }),
        notes: Header::mode_note(run.swf.rebuild_policy, observe)
            .into_iter()
            .collect(),
    };
    let decider = Decider::new(
        args,
        &context.loaded,
        context.target_version.clone(),
        standing,
        Timestamp::now(),
    )?;
    Ok((header, decider))
}
