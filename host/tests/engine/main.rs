//! The engine and the decisions it runs, on policy components (built on demand when `make
//! policies` has not): the compiled-artifact cache, hostile guests, one instance per SWF
//! decision, and Argo's stale-copy sequence through the component and natively.

mod cache;
mod exit_sequence;
mod limits;
mod swf_decision;
