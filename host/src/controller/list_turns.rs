//! The turns of a process's watches at listing: a list page is held whole while it is read, and
//! fifty namespace watches listing at once held fifty pages.

use std::sync::Arc;

/// Watches of one process that may be listing at once (their first list, or a list again after
/// a failure); the others wait for a turn before their list's first page.
pub const LISTS_AT_ONCE: usize = 2;

/// Shared by every watch of a process (`watch_health::watched`).
pub type ListTurns = Arc<tokio::sync::Semaphore>;

pub fn list_turns() -> ListTurns {
    Arc::new(tokio::sync::Semaphore::new(LISTS_AT_ONCE))
}
