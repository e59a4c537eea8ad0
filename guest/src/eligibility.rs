//! Argo 4.1's exit-eligibility rules (argo-workflows #16357), as a reusable function.
//!
//! The host keeps one tombstone per workflow **uid**: the highest resourceVersion it saw, the
//! phase there, and whether the workflow was seen completed. Against it an event is:
//!
//! | event                                               | answer         |
//! |-----------------------------------------------------|----------------|
//! | deleted before completing                           | `skip`         |
//! | no tombstone (new uid, evicted, or host restarted)  | `process`      |
//! | newer than the tombstone                            | `process`      |
//! | older or equal, tombstone completed                 | `reject-stale` |
//! | older, tombstone not completed (running)            | `requeue`      |
//! | equal, tombstone not completed                      | `process`      |
//! | resourceVersion unordered, tombstone completed      | `reject-stale` |
//! | resourceVersion unordered, tombstone not completed  | `process`      |
//!
//! A deleted workflow that had completed goes through the same rules: its DELETE event carries
//! the final object, and a completion nobody notified yet (deleted right after completing) is
//! notified from it. One deleted before completing has nothing to notify (`skip`, also where
//! the rules would requeue: there is nothing left to read again).
//!
//! An unordered pair (either resourceVersion not a canonical decimal, see [`crate::rv`]) fails
//! open like Argo's, except against a completed tombstone: a copy that cannot be proven newer
//! than a completion already seen is never acted on. Failing open is safe because `process`
//! only makes an event *eligible*: the host confirms completion with a fresh GET before any
//! side effect and sends one exit notification per completion, so a newer copy of a completion
//! it already handled (e.g. a label update) does not notify twice.
//!
//! "Completed" is Argo's meaning: phase Succeeded, Failed or Error (see
//! [`crate::workflow::event_is_completed`]); the completed label alone is not completion.
//!
//! The tombstone's age is not consulted: the host owns its time to live (Argo keeps 1300 s),
//! and a second, shorter TTL here could only let stale copies through earlier.

use std::cmp::Ordering;

use crate::workflow::event_is_completed;
use crate::{Eligibility, EventKind, Tombstone, WorkflowEvent, rv};

/// Whether `event` may lead to exit processing, given the host's `tombstone` for its uid.
pub fn argo_exit_eligibility(event: &WorkflowEvent, tombstone: Option<&Tombstone>) -> Eligibility {
    let answer = ordered(event, tombstone);
    if event.kind != EventKind::Deleted {
        return answer;
    }
    let event_rv = &event.resource_version;
    match answer {
        Eligibility::Process | Eligibility::Requeue(_) if !event_is_completed(event) => {
            Eligibility::Skip(format!(
                "Workflow deleted at resourceVersion {event_rv} before completing; nothing to \
                 notify."
            ))
        }
        Eligibility::Requeue(_) => Eligibility::Skip(format!(
            "Workflow deleted at resourceVersion {event_rv}, behind a newer copy; nothing to \
             read again."
        )),
        other => other,
    }
}

/// The ordering rules of the table, for any kind of event.
fn ordered(event: &WorkflowEvent, tombstone: Option<&Tombstone>) -> Eligibility {
    let event_rv = &event.resource_version;
    let Some(tombstone) = tombstone else {
        return Eligibility::Process;
    };
    let seen_rv = &tombstone.resource_version;
    match rv::compare(event_rv, seen_rv) {
        Some(Ordering::Greater) => Eligibility::Process,
        None if tombstone.completed => Eligibility::RejectStale(format!(
            "Cannot order resourceVersion {event_rv:?} against the completed copy at \
             {seen_rv:?}; a copy not proven newer is not acted on."
        )),
        None => Eligibility::Process,
        Some(_) if tombstone.completed => Eligibility::RejectStale(format!(
            "Stale copy of a completed workflow: resourceVersion {event_rv} is not newer than \
             {seen_rv} ({}).",
            tombstone.phase
        )),
        Some(Ordering::Less) => Eligibility::Requeue(format!(
            "Older copy of a running workflow: resourceVersion {event_rv} is behind {seen_rv}."
        )),
        Some(Ordering::Equal) => Eligibility::Process,
    }
}

#[cfg(test)]
mod tests;
