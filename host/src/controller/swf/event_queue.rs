//! Per-SWF Events of routine outcomes (`Rebuilt`, `WouldRebuild`) are created off the write
//! path: a reconcile offers its Event to a bounded queue and goes on to the next patch; one
//! task creates them in order, one at a time. When a mass rebuild fills the queue, further
//! Events are dropped and counted (`pipewarden_swf_events_dropped_total{reason}`), so Events
//! never double the write load of a pass, and a summary Event on the controller's own Pod
//! says how many SWFs it rebuilt and how many Events were left out. Past ten of a reason in a
//! namespace, they are combined into one Event about the namespace (`event_combine`).
//! Warnings are neither queued nor combined.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType};
use tokio::sync::mpsc;

use super::event_combine::{Combiner, Route};
use super::report::MAX_NOTE_BYTES;
use crate::cluster::api_error::describe;
use crate::controller::context::Context;
use crate::metrics::ReasonLabel;

/// Events waiting to be created.
pub const QUEUE_CAPACITY: usize = 256;
/// How often dropped Events are summed up in one summary Event.
const SUMMARY_EVERY: Duration = Duration::from_secs(30);

struct Queued {
    event: Event,
    regarding: ObjectReference,
}

/// Per reason: Events offered, and of those dropped, since the last summary; and the Events
/// being combined per namespace.
#[derive(Default)]
struct Tally {
    offered: BTreeMap<String, u64>,
    dropped: BTreeMap<String, u64>,
    combiner: Combiner,
}

pub struct EventQueue {
    tx: mpsc::Sender<Queued>,
    tally: Arc<Mutex<Tally>>,
    ctx: Context,
}

pub struct EventDrain {
    rx: mpsc::Receiver<Queued>,
    tally: Arc<Mutex<Tally>>,
    ctx: Context,
}

pub fn channel(ctx: &Context, capacity: usize) -> (EventQueue, EventDrain) {
    let (tx, rx) = mpsc::channel(capacity);
    let tally = Arc::new(Mutex::new(Tally::default()));
    let queue = EventQueue {
        tx,
        tally: tally.clone(),
        ctx: ctx.clone(),
    };
    let drain = EventDrain {
        rx,
        tally,
        ctx: ctx.clone(),
    };
    (queue, drain)
}

impl EventQueue {
    /// Queues the Event, or drops and counts it when the queue is full. Never waits.
    pub fn offer(&self, event: Event, regarding: ObjectReference) {
        let reason = event.reason.clone();
        let mut tally = lock(&self.tally);
        let route = tally.combiner.route(
            regarding.namespace.as_deref().unwrap_or_default(),
            regarding.name.as_deref().unwrap_or_default(),
            &reason,
            event.note.as_deref().unwrap_or_default(),
            Instant::now(),
        );
        if route == Route::Combined {
            *tally.offered.entry(reason.clone()).or_default() += 1;
            drop(tally);
            let label = ReasonLabel { reason };
            let combined = &self.ctx.metrics.scale.swf_events_combined;
            combined.get_or_create(&label).inc();
            return;
        }
        drop(tally);
        let full = match self.tx.try_send(Queued { event, regarding }) {
            Ok(()) => false,
            Err(mpsc::error::TrySendError::Full(_)) => true,
            // The loop is stopping.
            Err(mpsc::error::TrySendError::Closed(_)) => return,
        };
        let mut tally = lock(&self.tally);
        *tally.offered.entry(reason.clone()).or_default() += 1;
        if full {
            *tally.dropped.entry(reason.clone()).or_default() += 1;
            let label = ReasonLabel { reason };
            self.ctx
                .metrics
                .scale
                .swf_events_dropped
                .get_or_create(&label)
                .inc();
        }
    }
}

impl EventDrain {
    /// Creates queued Events one at a time, and a summary when some were dropped; runs as long
    /// as the loop does.
    pub async fn run(mut self) {
        let mut summary = tokio::time::interval(SUMMARY_EVERY);
        summary.tick().await;
        loop {
            tokio::select! {
                queued = self.rx.recv() => match queued {
                    Some(queued) => self.publish(&queued.event, &queued.regarding).await,
                    None => return,
                },
                _ = summary.tick() => self.summarise().await,
            }
        }
    }

    async fn publish(&self, event: &Event, regarding: &ObjectReference) {
        // A replica that lost its lease meanwhile says nothing more.
        if !self.ctx.may_write() {
            return;
        }
        if let Err(error) = self.ctx.recorder.publish(event, regarding).await {
            tracing::warn!(
                namespace = regarding.namespace.as_deref().unwrap_or_default(),
                name = regarding.name.as_deref().unwrap_or_default(),
                error = describe(&error, &self.ctx.api_server),
                "cannot publish an Event"
            );
        }
    }

    async fn summarise(&self) {
        let (offered, dropped, combined) = {
            let mut tally = lock(&self.tally);
            let combined = tally.combiner.take(Instant::now());
            (
                std::mem::take(&mut tally.offered),
                std::mem::take(&mut tally.dropped),
                combined,
            )
        };
        for combined in combined {
            let event = Event {
                type_: EventType::Normal,
                reason: combined.reason.clone(),
                note: Some(combined.note(MAX_NOTE_BYTES)),
                action: "Reconcile".into(),
                secondary: None,
            };
            self.publish(&event, &namespace_ref(&combined.namespace))
                .await;
        }
        let Some(note) = summary_note(&offered, &dropped) else {
            return;
        };
        tracing::info!(note, "SWF Events summed up");
        if let Some(pod) = own_pod() {
            let event = Event {
                type_: EventType::Normal,
                reason: "SwfPassSummary".into(),
                note: Some(note),
                action: "Reconcile".into(),
                secondary: None,
            };
            self.publish(&event, &pod).await;
        }
    }
}

/// What a summary says, or None when no Event was dropped (each SWF then has its own).
fn summary_note(
    offered: &BTreeMap<String, u64>,
    dropped: &BTreeMap<String, u64>,
) -> Option<String> {
    if dropped.values().all(|n| *n == 0) {
        return None;
    }
    let parts: Vec<String> = offered
        .iter()
        .map(|(reason, n)| {
            let left_out = dropped.get(reason).copied().unwrap_or(0);
            format!("{reason}: {n} SWFs, {left_out} without their own Event")
        })
        .collect();
    Some(format!(
        "Since the last summary, {} (Event queue full; see the swf decision log lines).",
        parts.join("; ")
    ))
}

/// A namespace as an Event's subject, with the Event created in it: its tenants see it.
fn namespace_ref(namespace: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Namespace".into()),
        name: Some(namespace.to_owned()),
        namespace: Some(namespace.to_owned()),
        ..ObjectReference::default()
    }
}

/// The controller's own Pod, from the downward API variables the Deployment sets.
fn own_pod() -> Option<ObjectReference> {
    let name = std::env::var("POD_NAME").ok()?;
    let namespace = std::env::var("POD_NAMESPACE").ok()?;
    Some(ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(name),
        namespace: Some(namespace),
        ..ObjectReference::default()
    })
}

fn lock(tally: &Mutex<Tally>) -> std::sync::MutexGuard<'_, Tally> {
    tally
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_summary_when_every_swf_had_its_event() {
        let offered = BTreeMap::from([("Rebuilt".to_owned(), 12)]);
        assert_eq!(summary_note(&offered, &BTreeMap::new()), None);
    }

    #[test]
    fn a_summary_counts_the_swfs_left_without_an_event() {
        let offered = BTreeMap::from([("Rebuilt".to_owned(), 2000)]);
        let dropped = BTreeMap::from([("Rebuilt".to_owned(), 1700)]);
        let note = summary_note(&offered, &dropped).expect("a summary");
        assert!(
            note.contains("Rebuilt: 2000 SWFs, 1700 without their own Event"),
            "{note}"
        );
    }
}
