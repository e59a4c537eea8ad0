//! One rate: its workflows submitted at a steady pace for a set time, waited for until Argo
//! completed each and the receiver took one 2xx per completion, then measured.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Result, bail, ensure};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams};
use pipewarden_tests::exit_support::{Controller, Receiver};

use crate::cpu::Cpu;
use crate::pods::PodTimes;
use crate::served::FirstServed;
use crate::support::{Outcome, SHAPE_LABEL, create, seed_001_spec, workflow};

/// The gate's decisions, all of them: events through the gate.
const DECISIONS: [&str; 7] = [
    "process",
    "skip",
    "reject-stale",
    "requeue",
    "error",
    "malformed",
    "delay-dropped",
];
/// How long Argo and pipewarden may take to finish a rate's work after its last submission.
const DRAIN: Duration = Duration::from_secs(900);
/// How often a waiting phase prints its counts.
const PROGRESS: Duration = Duration::from_secs(15);

/// What every rate shares: the namespace's workflows, the sightings, the receiver, pipewarden.
pub struct Bench<'a> {
    pub api: Api<DynamicObject>,
    pub served: &'a FirstServed,
    pub pods: &'a PodTimes,
    pub receiver: &'a Receiver,
    pub pipewarden: &'a Controller,
    /// One clock pair maps Argo's wall-clock finishedAt onto this process's Instants.
    pub clock: (Instant, SystemTime),
}

/// One rate's figures.
pub struct Measured {
    pub per_minute: usize,
    /// Argo's completion rate: completions first served, first to last, per minute.
    pub argo_per_minute: f64,
    pub from_served: Vec<Duration>,
    pub from_finished: Vec<Duration>,
    pub argo_handler: Vec<Duration>,
    /// From the first submission to the last 2xx.
    pub window: Duration,
    pub cpu: Cpu,
    pub events: u64,
}

impl Bench<'_> {
    fn events(&self) -> u64 {
        DECISIONS.iter().map(|d| self.pipewarden.decisions(d)).sum()
    }

    pub async fn run(&self, index: usize, per_minute: usize, seconds: u64) -> Result<Measured> {
        let count = (per_minute * seconds as usize / 60).max(1);
        let names: Vec<String> = (0..count)
            .map(|i| format!("exit-r{index}-{i:05}"))
            .collect();
        let (cpu, events, started) = (Cpu::now(), self.events(), Instant::now());
        let mut ticks = tokio::time::interval(Duration::from_secs_f64(60.0 / per_minute as f64));
        let mut reported = Instant::now();
        for (i, name) in names.iter().enumerate() {
            ticks.tick().await;
            let outcome = [Outcome::Fail, Outcome::Succeed][i % 2];
            let spec = seed_001_spec(true, outcome);
            create(&self.api, &workflow(name, "seed-001", spec)?).await?;
            if reported.elapsed() >= PROGRESS || i + 1 == count {
                reported = Instant::now();
                self.progress(
                    per_minute,
                    &format!("submitted {}/{count}", i + 1),
                    &names,
                    started,
                );
            }
        }
        let deadline = Instant::now() + DRAIN;
        let served = loop {
            let served = self.served.of(&names);
            let notified = self.notified(&served);
            if served.len() == count && notified == count {
                break served;
            }
            if Instant::now() >= deadline {
                bail!(
                    "{per_minute}/min: after {DRAIN:?}, {}/{count} complete, {notified} notified",
                    served.len()
                );
            }
            if reported.elapsed() >= PROGRESS {
                reported = Instant::now();
                self.progress(per_minute, "waiting", &names, started);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let window = started.elapsed();
        let (cpu, events) = (Cpu::now().since(cpu), self.events() - events);
        self.progress(per_minute, "done", &names, started);

        // Exactly one 2xx per completion, and none for anything else of these workflows.
        let keys: BTreeMap<&str, Instant> =
            served.values().map(|s| (s.key.as_str(), s.at)).collect();
        let uids: BTreeSet<&str> = keys.keys().filter_map(|k| k.split('/').next()).collect();
        let per_key = self.receiver.per_key();
        let repeated = keys.keys().filter(|k| per_key.get(**k) > Some(&1)).count();
        let strays = per_key
            .keys()
            .filter(|k| !keys.contains_key(k.as_str()))
            .filter(|k| k.split('/').next().is_some_and(|uid| uids.contains(uid)))
            .count();
        ensure!(
            repeated == 0 && strays == 0,
            "{per_minute}/min: {repeated} completions notified more than once, {strays} 2xx for \
             keys no completion was served with"
        );

        let (instant_zero, wall_zero) = self.clock;
        let mut from_served = Vec::new();
        let mut from_finished = Vec::new();
        for delivery in self.receiver.accepted() {
            let Some(seen) = keys.get(delivery.key.as_str()) else {
                continue;
            };
            from_served.push(delivery.at.saturating_duration_since(*seen));
            let finished = delivery.key.split('/').nth(2).unwrap_or_default();
            if let Some(finished) = wall_instant(finished, instant_zero, wall_zero) {
                from_finished.push(delivery.at.saturating_duration_since(finished));
            }
        }
        let seen: Vec<Instant> = served.values().map(|s| s.at).collect();
        let argo_per_minute = match (seen.iter().min(), seen.iter().max()) {
            (Some(first), Some(last)) if count > 1 => {
                (count - 1) as f64 * 60.0 / last.duration_since(*first).as_secs_f64().max(1e-3)
            }
            _ => 0.0,
        };
        Ok(Measured {
            per_minute,
            argo_per_minute,
            from_served,
            from_finished,
            argo_handler: self.pods.exit_handler_delays(&names),
            window,
            cpu,
            events,
        })
    }

    /// Completions among `served` the receiver took a 2xx for.
    fn notified(&self, served: &BTreeMap<String, crate::served::Served>) -> usize {
        let per_key = self.receiver.per_key();
        served
            .values()
            .filter(|s| per_key.contains_key(&s.key))
            .count()
    }

    fn progress(&self, per_minute: usize, what: &str, names: &[String], started: Instant) {
        let served = self.served.of(names);
        eprintln!(
            "rate {per_minute}/min: {what} ({:.0?}); complete {}, notified {}",
            started.elapsed(),
            served.len(),
            self.notified(&served)
        );
    }

    /// Deletes every workflow and waits until none is left, so the next rate starts alone.
    pub async fn clear(&self) -> Result<()> {
        let started = Instant::now();
        let labelled = ListParams::default().labels(SHAPE_LABEL);
        self.api
            .delete_collection(&DeleteParams::default(), &labelled)
            .await?;
        pipewarden_tests::wait::until("the workflows to be deleted", DRAIN, || async {
            let left = self.api.list_metadata(&labelled).await?.items.len();
            tokio::time::sleep(Duration::from_millis(500)).await;
            Ok((left == 0).then_some(()))
        })
        .await?;
        eprintln!("workflows deleted ({:.0?})", started.elapsed());
        Ok(())
    }
}

/// An RFC 3339 timestamp (Argo's, whole seconds) as an Instant of this process's clock.
fn wall_instant(text: &str, instant_zero: Instant, wall_zero: SystemTime) -> Option<Instant> {
    let at: SystemTime = humantime::parse_rfc3339(text).ok()?;
    match at.duration_since(wall_zero) {
        Ok(after) => Some(instant_zero + after),
        Err(before) => instant_zero.checked_sub(before.duration()),
    }
}
