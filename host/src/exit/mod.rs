//! The exit gate's logic that needs no cluster: tombstones, workflow events, the decision,
//! and the once-per-completion notification rules.

pub mod bounded;
mod cache;
pub mod claim;
pub mod decision;
pub mod event;
pub mod judge;
pub mod notification;
pub mod outcome;
pub mod retry;
pub mod seen;
pub mod tombstone;

pub use cache::TombstoneCache;
