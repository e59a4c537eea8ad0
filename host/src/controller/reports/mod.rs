//! Policy reports where policy-engine users look (Kyverno, Kubewarden, Policy Reporter): one
//! OpenReports `Report` per namespace, kept current from the fleet's facts (`metrics::fleet`,
//! `metrics::completions`). Only the leader writes, only what changed, every
//! `--reports-interval`; a report with nothing to say is deleted. Where the Report CRD is not
//! installed nothing is written and one line says so (looked at again each interval, so a CRD
//! installed later is used). What a report says is `content`.

pub mod content;

use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash as _, Hasher as _};

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams};
use kube::api::{Patch, PatchParams, ValidationDirective};

use super::context::Context;
use crate::cluster::api_error::describe;
use crate::config::{ReportArgs, ReportsMode};
use crate::metrics::Metrics;

/// Every this many intervals, every namespace is looked at again, not only the changed ones.
const FULL_EVERY: u64 = 10;
const FIELD_MANAGER: &str = "pipewarden";

pub fn report_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk(content::GROUP, content::VERSION, content::KIND);
    ApiResource::from_gvk_with_plural(&gvk, content::PLURAL)
}

/// Runs until the process stops; returns at once with `--reports=off`.
pub async fn run(ctx: Context, args: ReportArgs) -> anyhow::Result<()> {
    if args.reports == ReportsMode::Off {
        return Ok(());
    }
    let mut writer = Writer {
        name: content::name(ctx.shard),
        ctx,
        max_results: args.reports_max_results,
        written: HashMap::new(),
        leading: false,
        retry: BTreeSet::new(),
    };
    let mut served: Option<bool> = None;
    let mut every = tokio::time::interval(args.reports_interval);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for tick in 0u64.. {
        every.tick().await;
        let mut changed = writer.ctx.metrics.swfs.take_changed();
        changed.extend(writer.ctx.metrics.completions.take_changed());
        if !writer.ctx.may_write() {
            // A new leader writes everything again; this replica when it leads again.
            writer.leading = false;
            continue;
        }
        let now = match crd_served(&writer.ctx.client).await {
            Ok(now) => now,
            Err(error) => {
                let error = describe(&error, &writer.ctx.api_server);
                tracing::warn!(
                    error,
                    "cannot tell whether the OpenReports CRD is installed"
                );
                continue;
            }
        };
        if served != Some(now) {
            say_served(now, served.is_none());
            served = Some(now);
            writer.leading = false;
        }
        if !now {
            continue;
        }
        changed.append(&mut writer.retry);
        writer.sync(changed, tick % FULL_EVERY == 0).await;
    }
    Ok(())
}

fn say_served(served: bool, first: bool) {
    match (served, first) {
        (true, _) => tracing::info!(
            "policy reports: writing an OpenReports Report (openreports.io/v1alpha1) per namespace"
        ),
        (false, true) => tracing::info!(
            "policy reports: the OpenReports Report CRD (reports.openreports.io) is not installed; \
             no report is written (looked for again every --reports-interval)"
        ),
        (false, false) => tracing::warn!(
            "policy reports: the OpenReports Report CRD is gone; no report is written"
        ),
    }
}

/// Whether the API server serves `openreports.io/v1alpha1` `reports`.
async fn crd_served(client: &kube::Client) -> Result<bool, kube::Error> {
    let version = format!("{}/{}", content::GROUP, content::VERSION);
    match client.list_api_group_resources(&version).await {
        Ok(list) => Ok(list.resources.iter().any(|r| r.name == content::PLURAL)),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(error) => Err(error),
    }
}

struct Writer {
    ctx: Context,
    name: String,
    max_results: usize,
    /// Namespaces with a report of ours, and a digest of what it says (0: not known, e.g.
    /// found at start).
    written: HashMap<Box<str>, u64>,
    /// Whether `written` is known (listed since this replica leads and the CRD is there).
    leading: bool,
    /// Namespaces whose write failed: tried again next time.
    retry: BTreeSet<Box<str>>,
}

impl Writer {
    async fn sync(&mut self, changed: BTreeSet<Box<str>>, full: bool) {
        let first = !self.leading;
        if first {
            match self.existing().await {
                Ok(existing) => self.written = existing,
                Err(error) => {
                    let error = describe(&error, &self.ctx.api_server);
                    tracing::warn!(error, "cannot list the policy reports");
                    self.retry.extend(changed);
                    return;
                }
            }
            self.leading = true;
        }
        let metrics = self.ctx.metrics.clone();
        let namespaces: BTreeSet<Box<str>> = if first || full {
            let mut all: BTreeSet<Box<str>> = self.written.keys().cloned().collect();
            all.extend(metrics.swfs.namespaces());
            all.extend(metrics.completions.namespaces());
            all.extend(changed.iter().cloned());
            all
        } else {
            changed.clone()
        };
        let target = Some(metrics.target().version).filter(|v| !v.is_empty());
        for namespace in namespaces {
            let (tally, swfs) = metrics.swfs.findings(&namespace);
            let observed = metrics.completions.observed_in(&namespace);
            let inputs = content::Inputs {
                name: &self.name,
                namespace: &namespace,
                target: target.as_deref(),
                tally,
                swfs: &swfs,
                observed: &observed,
                max_results: self.max_results,
            };
            match content::report(&inputs) {
                Some(report) => self.apply(&namespace, &report).await,
                // Found at start with no fact behind it: its SWFs may not be decided yet; a
                // change or the next full pass decides.
                None if first && !changed.contains(&namespace) => {}
                None => self.delete(&namespace).await,
            }
        }
    }

    /// Our reports on the cluster now (in the namespaces watched).
    async fn existing(&self) -> Result<HashMap<Box<str>, u64>, kube::Error> {
        let resource = report_resource();
        let apis: Vec<Api<DynamicObject>> = match self.ctx.namespaces.as_slice() {
            [] => vec![Api::all_with(self.ctx.client.clone(), &resource)],
            some => some
                .iter()
                .map(|ns| Api::namespaced_with(self.ctx.client.clone(), ns, &resource))
                .collect(),
        };
        let selector = format!("{}={}", content::MANAGED_BY.0, content::MANAGED_BY.1);
        let mut found = HashMap::new();
        for api in apis {
            let params = ListParams::default().labels(&selector);
            for report in api.list_metadata(&params).await? {
                if report.metadata.name.as_deref() == Some(self.name.as_str())
                    && let Some(namespace) = report.metadata.namespace
                {
                    found.insert(namespace.into(), 0);
                }
            }
        }
        Ok(found)
    }

    async fn apply(&mut self, namespace: &str, report: &serde_json::Value) {
        let digest = digest(report);
        if self.written.get(namespace) == Some(&digest) {
            return;
        }
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.ctx.client.clone(), namespace, &report_resource());
        // Strict: a field the CRD does not define is refused, not dropped unseen.
        let params = PatchParams::apply(FIELD_MANAGER)
            .force()
            .validation(ValidationDirective::Strict);
        match api.patch(&self.name, &params, &Patch::Apply(report)).await {
            Ok(_) => {
                self.written.insert(namespace.into(), digest);
                Metrics::count(&self.ctx.metrics.reports.writes, "applied");
            }
            Err(error) => self.failed(namespace, "write", &error),
        }
    }

    async fn delete(&mut self, namespace: &str) {
        if !self.written.contains_key(namespace) {
            return;
        }
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.ctx.client.clone(), namespace, &report_resource());
        match api.delete(&self.name, &DeleteParams::default()).await {
            Ok(_) => Metrics::count(&self.ctx.metrics.reports.writes, "deleted"),
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return self.failed(namespace, "delete", &error),
        }
        self.written.remove(namespace);
    }

    fn failed(&mut self, namespace: &str, what: &str, error: &kube::Error) {
        Metrics::count(&self.ctx.metrics.reports.writes, "error");
        let error = describe(error, &self.ctx.api_server);
        tracing::warn!(
            namespace,
            error,
            "cannot {what} the policy report; trying again"
        );
        self.retry.insert(namespace.into());
    }
}

fn digest(report: &serde_json::Value) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    report.to_string().hash(&mut hasher);
    hasher.finish()
}
