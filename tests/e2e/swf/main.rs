//! End-to-end tests of the ScheduledWorkflow loop on the local control plane (etcd and
//! kube-apiserver built from Go modules, the upstream CRDs): rebuilds, KFP's own compiles, restores,
//! conflicts, policies and a busy node. One binary; each module was a binary of its own before.

mod busy_node;
mod conflicts;
mod kfp_tls;
mod policies;
mod rebuild;
mod releases;
mod restore;
mod smoke;
mod upstream;
