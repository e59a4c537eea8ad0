//! The compiler's tests as one binary: the `kfp-compile` command, compile options, driver and
//! launcher flags, IR recovery, release behaviour, every release against its own compiler,
//! KFP 2.17.0's own goldens, and (ignored) timings.

mod cli;
mod compile_options;
mod flags;
mod recover;
mod release_behaviour;
mod releases;
mod support;
mod timing;
mod upstream_goldens;
