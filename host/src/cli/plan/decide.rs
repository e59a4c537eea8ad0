//! The controller's decisions on each listed object, as `run` would make them now: a page of
//! SWFs at a time on as many threads as there are cores, each completed workflow through the
//! policy and the exit gate's rules. And the progress lines `plan` writes on stderr.

use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use super::rows::{SwfRow, WorkflowRow, swf_row, workflow_row};
use super::summary::Summary;
use crate::cluster::mark_key::mark_key;
use crate::cluster::policy_handle::LoadedPolicy;
use crate::config::{PlanArgs, Shard};
use crate::exit::claim::{Claimant, MarkKey};
use crate::exit::judge::assess_listed;
use crate::exit::notification::{Rules, finished_before};
use crate::exit::seen::SeenWorkflow;
use crate::metrics::completions::CompletionState;
use crate::swf::decide::RenderTarget;
use crate::swf::object_key;
use crate::swf::plan::plan;
use crate::swf::serving::{Serving, outcome_without_policy};

/// Who plan is when it reads claims: never their holder, so every claim is someone else's.
const PLANNER: &str = "pipewarden-plan";
/// Decisions on more threads than this gain nothing on the machines plan runs on.
const MAX_THREADS: usize = 4;

pub struct Decider<'a> {
    loaded: &'a LoadedPolicy,
    target: RenderTarget,
    standing: Serving,
    shard: Shard,
    threads: usize,
    claimant: Claimant,
    key: MarkKey,
    now: Timestamp,
    catch_up: Duration,
    workflows_since: Duration,
}

impl<'a> Decider<'a> {
    pub fn new(
        args: &PlanArgs,
        loaded: &'a LoadedPolicy,
        target_version: Option<String>,
        standing: Serving,
        now: Timestamp,
    ) -> anyhow::Result<Decider<'a>> {
        let run = &args.run;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        Ok(Decider {
            loaded,
            target: RenderTarget {
                rebuild_policy: run.swf.rebuild_policy,
                target_version,
                settings: loaded.settings.clone(),
            },
            standing,
            shard: run.shard.unwrap_or_default(),
            threads: threads.clamp(1, MAX_THREADS),
            claimant: Claimant::new(PLANNER),
            key: mark_key(run.exit.exit_mark_key_file.as_deref())?,
            now,
            catch_up: run.exit.exit_catchup_window,
            workflows_since: args.workflows_since,
        })
    }

    fn owns(&self, object: &Value) -> bool {
        let uid = object.pointer("/metadata/uid").and_then(Value::as_str);
        uid.is_some_and(|uid| self.shard.owns(uid))
    }

    /// A row per SWF of this shard in `page`, in the page's order.
    pub fn swfs(&self, page: Vec<Value>) -> Vec<SwfRow> {
        let page: Vec<Value> = page.into_iter().filter(|swf| self.owns(swf)).collect();
        let chunk = page.len().div_ceil(self.threads).max(1);
        std::thread::scope(|scope| {
            let workers: Vec<_> = page
                .chunks(chunk)
                .map(|swfs| {
                    scope.spawn(move || swfs.iter().map(|swf| self.swf(swf)).collect::<Vec<_>>())
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|worker| {
                    worker
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect::<Vec<SwfRow>>()
        })
    }

    fn swf(&self, swf: &Value) -> SwfRow {
        let outcome = outcome_without_policy(&self.standing, &swf.to_string())
            .unwrap_or_else(|| plan(&self.loaded.policy, swf, &self.target));
        swf_row(object_key(swf), &outcome)
    }

    /// The row of a completed workflow of this shard that finished within the window; the
    /// completion is counted in `summary` either way.
    pub fn workflow(
        &self,
        raw: Value,
        summary: &mut Summary,
    ) -> anyhow::Result<Option<WorkflowRow>> {
        if !self.owns(&raw) {
            return Ok(None);
        }
        let Some(seen) = SeenWorkflow::read(raw) else {
            return Ok(None);
        };
        if !seen.facts.complete {
            return Ok(None);
        }
        summary.completion(seen.own_mark().map(CompletionState::of_mark));
        if finished_before(&seen.facts, self.now, self.workflows_since) {
            summary.older_workflows += 1;
            return Ok(None);
        }
        let rules = Rules {
            claimant: &self.claimant,
            key: &self.key,
            now: self.now,
            catch_up: self.catch_up,
        };
        Ok(Some(
            match assess_listed(&self.loaded.policy, &seen.facts, &seen.raw) {
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
                    plan: "policy error".into(),
                    reason: format!("{error} ({})", error.kind()),
                },
            },
        ))
    }
}

/// A line on stderr per phase and per thousand objects, so a long plan shows it is moving.
pub struct Progress {
    on: bool,
    started: Instant,
    swfs: u64,
    workflows: u64,
}

/// Objects between progress lines.
const EVERY: u64 = 1000;

impl Progress {
    pub fn new(on: bool, started: Instant) -> Progress {
        Progress {
            on,
            started,
            swfs: 0,
            workflows: 0,
        }
    }

    fn say(&self, text: &str) {
        if self.on {
            eprintln!(
                "plan: {text} ({:.1}s)",
                self.started.elapsed().as_secs_f64()
            );
        }
    }

    pub fn phase(&self, what: &str) {
        self.say(what);
    }

    pub fn swf(&mut self) {
        self.swfs += 1;
        if self.swfs.is_multiple_of(EVERY) {
            self.say(&format!("{} SWFs decided", self.swfs));
        }
    }

    pub fn swfs_done(&self) {
        self.say(&format!("{} SWFs decided in all", self.swfs));
    }

    pub fn workflow(&mut self) {
        self.workflows += 1;
        if self.workflows.is_multiple_of(EVERY) {
            self.say(&format!("{} completed workflows planned", self.workflows));
        }
    }

    pub fn workflows_done(&self) {
        self.say(&format!(
            "{} completed workflows planned in all",
            self.workflows
        ));
    }
}
