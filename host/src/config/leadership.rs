//! Leader election flags.

use super::floor::Floor;

#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Leader election")]
pub struct LeaderArgs {
    /// Elect a leader among replicas on a Lease; without it this process always writes.
    #[arg(long, env = "PIPEWARDEN_LEADER_ELECT")]
    pub leader_elect: bool,
    /// The Lease replicas elect a leader on; with --shard I/N each shard has its own,
    /// `<name>-shard-I-of-N`.
    #[arg(long, env = "PIPEWARDEN_LEASE_NAME", default_value = "pipewarden")]
    pub lease_name: String,
    /// Namespace of the Lease (the controller's own).
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    pub lease_namespace: String,
    /// How long a leader holds the Lease without renewing it; a standby takes over after it
    /// (at once when the leader releases it on SIGTERM).
    #[arg(long, env = "PIPEWARDEN_LEASE_DURATION_SECONDS", default_value_t = 15)]
    pub lease_duration_seconds: u64,
    /// This replica's name in the Lease; defaults to the pod name, else host and pid.
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
}

impl LeaderArgs {
    pub fn identity(&self) -> String {
        self.identity.clone().unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
            format!("{}-{}", host.trim(), std::process::id())
        })
    }
}

impl LeaderArgs {
    pub fn floors(&self) -> Vec<Floor> {
        vec![Floor::count(
            "--lease-duration-seconds",
            "PIPEWARDEN_LEASE_DURATION_SECONDS",
            self.lease_duration_seconds,
            3,
        )]
    }
}
