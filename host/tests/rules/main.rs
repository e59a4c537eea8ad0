//! The host's pure rules, no cluster and no Wasm: leadership, tombstones, the SWF diff and
//! patch, and the once-per-completion notification rules.

mod exit_notification;
mod lease;
mod swf_diff;
mod tombstone;
