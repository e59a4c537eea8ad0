//! End-to-end tests of the ScheduledWorkflow loop on the local control plane (etcd and
//! kube-apiserver built from Go modules, the upstream CRDs): rebuilds, KFP's own compiles, restores,
//! conflicts, policies, a busy node, the order of a long pass and the Events of a mass rebuild. One binary; each module was a
//! binary of its own before.

mod bodies;
mod busy_node;
mod conflicts;
mod events;
mod install;
mod kfp_tls;
mod order;
mod policies;
mod rebuild;
mod releases;
mod reports;
mod restore;
mod smoke;
mod upstream;
