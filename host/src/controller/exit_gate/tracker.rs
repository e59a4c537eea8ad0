//! The completions this replica is processing, and those it settled, by completion key.
//!
//! Retries belong to a completion, not to the watch events that show it: an event whose
//! completion is already being processed joins it instead of starting another attempt, and one
//! whose completion was settled (sent, given up, reported too old) is answered from memory.
//! A DELETE event for a completion under way hands its final object to it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use crate::exit::claim::Claim;
use crate::exit::event::WorkflowFacts;
use crate::exit::notification::Mark;
use crate::exit::outcome::Outcome;
use crate::exit::seen::Seen;

/// Completions processed at once; beyond this the shards wait (backpressure on the watch).
const MAX_IN_FLIGHT: usize = 100_000;

/// What a DELETE event carried: the final state of the workflow, and its mark.
#[derive(Clone, Debug)]
pub struct Final {
    pub facts: WorkflowFacts,
    pub mark: Option<Mark>,
    pub claim: Option<Claim>,
}

impl Final {
    pub fn of(seen: &Seen) -> Final {
        Final {
            facts: seen.facts.clone(),
            mark: seen.mark.clone(),
            claim: seen.claim.clone(),
        }
    }
}

#[derive(Default)]
struct InFlight {
    final_object: Option<Final>,
    waiters: Vec<oneshot::Sender<Outcome>>,
}

pub struct Tracker {
    in_flight: Mutex<HashMap<String, InFlight>>,
    settled: moka::sync::Cache<String, Outcome>,
    slots: Arc<Semaphore>,
}

/// What [`Tracker::begin`] found.
pub enum Begin {
    /// Not known: the caller processes it, holding the slot until [`Tracker::finish`].
    New(OwnedSemaphorePermit),
    /// Being processed; the waiter (if any) hears its outcome.
    InFlight,
    /// Settled with this outcome.
    Settled(Outcome),
}

impl Tracker {
    /// Settled outcomes are remembered for `remember` (as long as tombstones), `capacity` at most.
    pub fn new(remember: Duration, capacity: u64) -> Tracker {
        Tracker {
            in_flight: Mutex::default(),
            settled: moka::sync::Cache::builder()
                .max_capacity(capacity.max(1))
                .time_to_live(remember.max(Duration::from_secs(1)))
                .build(),
            slots: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, InFlight>> {
        self.in_flight.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn settled(&self, key: &str) -> Option<Outcome> {
        self.settled.get(key)
    }

    pub fn is_in_flight(&self, key: &str) -> bool {
        self.lock().contains_key(key)
    }

    /// Starts processing `key` unless it is under way or settled. Waits for a slot when
    /// [`MAX_IN_FLIGHT`] completions are under way.
    pub async fn begin(&self, key: &str, waiter: Option<oneshot::Sender<Outcome>>) -> Begin {
        let slot = match self.slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => self
                .slots
                .clone()
                .acquire_owned()
                .await
                .expect("the semaphore is never closed"),
        };
        if let Some(outcome) = self.settled.get(key) {
            if let Some(waiter) = waiter {
                let _ = waiter.send(outcome);
            }
            return Begin::Settled(outcome);
        }
        let mut in_flight = self.lock();
        if let Some(entry) = in_flight.get_mut(key) {
            entry.waiters.extend(waiter);
            return Begin::InFlight;
        }
        in_flight.insert(
            key.to_string(),
            InFlight {
                final_object: None,
                waiters: waiter.into_iter().collect(),
            },
        );
        Begin::New(slot)
    }

    /// Hands the final object of a deleted workflow to its completion under way; false when
    /// none is.
    pub fn attach_final(&self, key: &str, final_object: Final) -> bool {
        match self.lock().get_mut(key) {
            Some(entry) => {
                entry.final_object = Some(final_object);
                true
            }
            None => false,
        }
    }

    /// The final object a DELETE event handed over, if one did.
    pub fn final_object(&self, key: &str) -> Option<Final> {
        self.lock().get(key)?.final_object.clone()
    }

    /// Ends processing `key` with `outcome`; remembered when it settles the completion.
    pub fn finish(&self, key: &str, outcome: Outcome) {
        if outcome.settles() {
            self.settled.insert(key.to_string(), outcome);
        }
        if let Some(entry) = self.lock().remove(key) {
            for waiter in entry.waiters {
                let _ = waiter.send(outcome);
            }
        }
    }

    /// Records an outcome reached without processing (e.g. the sweep's superseded claims).
    pub fn settle(&self, key: &str, outcome: Outcome) {
        self.settled.insert(key.to_string(), outcome);
    }
}
