//! The exit gate's logic that needs no cluster: tombstones, workflow events, the decision.

pub mod event;
pub mod gate;
pub mod tombstone;
