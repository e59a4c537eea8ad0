//! Which SWFs one side of a bench reconciles: `FLEET=real` (default) a fleet made from every
//! release's own compiler output, in the mix `swf_support::fleet` states, over its 50
//! namespaces; `FLEET=uniform` copies of two KFP 2.3 pipelines in one namespace, half with
//! runtime parameters (the bench before the real fleet). Each side has its own copy, made from
//! the same seed, so the sides reconcile the same objects.

use std::time::Instant;

use super::fleet::{Fleet, Job, Kind};
use super::*;
use anyhow::{Context as _, Result};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DynamicObject, PostParams};

/// The fleet's seed: the same fleet in every run.
pub const SEED: u64 = 20_261_205;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FleetKind {
    Real,
    Uniform,
}

impl FleetKind {
    pub fn from_env() -> Result<FleetKind> {
        match std::env::var("PIPEWARDEN_BENCH_FLEET").as_deref() {
            Ok("real") | Err(_) => Ok(FleetKind::Real),
            Ok("uniform") => Ok(FleetKind::Uniform),
            Ok(other) => anyhow::bail!("PIPEWARDEN_BENCH_FLEET={other}: real or uniform"),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FleetKind::Real => "real",
            FleetKind::Uniform => "uniform",
        }
    }
}

/// One side's SWFs: `count` of them, in namespaces named from `prefix`.
pub struct Side {
    pub fleet: FleetKind,
    pub prefix: String,
    pub count: usize,
    /// The real fleet's data, loaded once.
    data: Option<Fleet>,
    /// A uniform fleet's two SWFs.
    pipelines: Vec<DynamicObject>,
}

impl Side {
    pub fn new(fleet: FleetKind, prefix: &str, count: usize) -> Result<Side> {
        let data = match fleet {
            FleetKind::Real => Some(Fleet::load(TARGET, SEED)?),
            FleetKind::Uniform => None,
        };
        Ok(Side {
            fleet,
            prefix: prefix.to_owned(),
            count,
            data,
            pipelines: vec![fixture("kfp-2.3")?, fixture("kfp-2.3-parameters")?],
        })
    }

    pub fn namespaces(&self) -> Vec<String> {
        match self.fleet {
            FleetKind::Real => Fleet::namespaces(&self.prefix),
            FleetKind::Uniform => vec![self.prefix.clone()],
        }
    }

    /// SWF `index` and its job row.
    pub fn job(&self, index: usize) -> Result<Job> {
        match &self.data {
            Some(fleet) => fleet.job(&self.prefix, index),
            None => Ok(uniform(&self.pipelines, &self.prefix, index)),
        }
    }

    /// Every SWF, one at a time.
    pub fn jobs(&self) -> impl Iterator<Item = Result<Job>> + '_ {
        (0..self.count).map(|index| self.job(index))
    }

    /// How many SWFs of each kind.
    pub fn mix(&self) -> String {
        let Some(fleet) = &self.data else {
            return format!("{} copies of two KFP 2.3 pipelines", self.count);
        };
        let mut counts = std::collections::BTreeMap::new();
        for index in 0..self.count {
            *counts.entry(fleet.kind(index).label()).or_insert(0) += 1;
        }
        let parts: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
        parts.join(", ")
    }

    /// The SWFs a rebuild changes: stale ones (and, for KFP's own path, the overwritten ones,
    /// which it compiles again from the job row).
    pub fn stale(&self) -> usize {
        match &self.data {
            Some(fleet) => (0..self.count)
                .filter(|i| matches!(fleet.kind(*i), Kind::Stale { .. }))
                .count(),
            None => self.count,
        }
    }

    /// The target's own compile of the job's IR, as every stale or current SWF holds it after
    /// a pass (real fleet only).
    pub fn target_workflow(&self, job: &Job) -> Option<serde_json::Value> {
        self.data.as_ref()?.target_workflow(job)
    }

    /// Creates the namespaces and the SWFs, 16 at a time, with a progress line per 10,000.
    pub async fn seed(&self, client: &kube::Client) -> Result<()> {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        for name in self.namespaces() {
            let namespace: Namespace =
                serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))?;
            match namespaces.create(&PostParams::default(), &namespace).await {
                Err(kube::Error::Api(status)) if status.is_already_exists() => {}
                other => drop(other?),
            }
        }
        let started = Instant::now();
        futures::stream::iter(self.jobs())
            .map(|job| async move {
                let job = job?;
                swfs(client, &job.namespace)
                    .create(&PostParams::default(), &job.swf)
                    .await
                    .with_context(|| format!("creating {}/{}", job.namespace, job.name))
            })
            .buffer_unordered(16)
            .enumerate()
            .map(|(done, created)| {
                if (done + 1) % 10_000 == 0 {
                    eprintln!(
                        "{}: {} SWFs created ({:.0?})",
                        self.prefix,
                        done + 1,
                        started.elapsed()
                    );
                }
                created
            })
            .try_for_each(|_| async { Ok(()) })
            .await
    }

    /// Deletes the side's SWFs.
    pub async fn delete(&self, client: &kube::Client) -> Result<()> {
        for namespace in self.namespaces() {
            swfs(client, &namespace)
                .delete_collection(&Default::default(), &Default::default())
                .await
                .with_context(|| format!("deleting the SWFs in {namespace}"))?;
        }
        Ok(())
    }
}

/// A uniform fleet's SWF: KFP 2.3's compile of one of two pipelines (the second with runtime
/// parameters).
fn uniform(pipelines: &[DynamicObject], namespace: &str, index: usize) -> Job {
    let mut swf = pipelines[index % 2].clone();
    let name = format!("daily-{index:05}");
    swf.metadata.name = Some(name.clone());
    swf.metadata.namespace = Some(namespace.to_owned());
    Job {
        namespace: namespace.to_owned(),
        name,
        kind: Kind::Stale { by: "2.3.0" },
        ir: None,
        account: String::new(),
        swf,
    }
}
