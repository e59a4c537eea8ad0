//! End-to-end tests of more than one replica on the local control plane: leader failover,
//! partitions, SIGTERM hand-over and shards.

mod claims;
mod failover;
mod partition;
mod shards;
mod sigterm;
