//! Info metrics (a gauge at 1 whose labels carry the value): what this process is, which policy
//! is in force, what it is allowed to do, and which shard it serves. Dashboards join on them;
//! an operator reads at a glance that a first install only reports.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use super::labels::TargetLabels;

#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabels {
    pub version: String,
    pub wit_world: String,
}

#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PolicyLabels {
    pub digest: String,
    pub world: String,
}

/// What the controller may do: `rebuild_policy` disable and `exit_mode` observe write nothing.
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ModeLabels {
    pub rebuild_policy: String,
    pub exit_mode: String,
    /// `report-only` when neither loop writes, else `enforce`.
    pub mode: String,
}

#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ShardLabels {
    pub shard: String,
    pub shards: String,
}

metric_group! {
    pub struct InfoMetrics {
        /// This binary: its version and the WIT world it serves.
        pub build: Family<BuildLabels, Gauge> = "build_info",
        /// The policy in force: its digest and the world it implements.
        pub policy: Family<PolicyLabels, Gauge> = "policy_info",
        /// What this replica may do: rebuild policy, exit mode, report-only or enforce.
        pub mode: Family<ModeLabels, Gauge> = "mode_info",
        /// The shard this replica serves (0 of 1 when unsharded).
        pub shard: Family<ShardLabels, Gauge> = "shard_info",
        /// 1 while this replica holds the leader lease (or runs without election), so may
        /// write.
        pub leader: Gauge = "leader",
        /// 1 for the KFP version SWFs are rendered for, labelled with whether and how the
        /// policy serves it, who writes SWFs and why the SWF loop writes nothing.
        pub target: Family<TargetLabels, Gauge> = "target_info",
    }
}

impl InfoMetrics {
    pub(super) fn show_build(&self) {
        self.build
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION").to_owned(),
                wit_world: crate::engine::WORLD.to_owned(),
            })
            .set(1);
    }

    pub fn set_policy(&self, digest: &str, world: &str) {
        self.policy.clear();
        self.policy
            .get_or_create(&PolicyLabels {
                digest: digest.to_owned(),
                world: world.to_owned(),
            })
            .set(1);
    }

    pub fn set_mode(&self, rebuild_policy: &str, exit_mode: &str, writes: bool) {
        self.mode.clear();
        let mode = if writes { "enforce" } else { "report-only" };
        self.mode
            .get_or_create(&ModeLabels {
                rebuild_policy: rebuild_policy.to_owned(),
                exit_mode: exit_mode.to_owned(),
                mode: mode.to_owned(),
            })
            .set(1);
    }

    pub fn set_shard(&self, index: u32, count: u32) {
        self.shard.clear();
        self.shard
            .get_or_create(&ShardLabels {
                shard: index.to_string(),
                shards: count.to_string(),
            })
            .set(1);
    }
}

#[cfg(test)]
mod tests {
    use super::super::Metrics;

    #[test]
    fn a_report_only_replica_says_so_and_names_its_policy_and_shard() {
        let metrics = Metrics::new();
        metrics.info.set_mode("disable", "observe", false);
        metrics
            .info
            .set_policy("sha256:ab", "pipewarden:policy/policy@0.1.1");
        metrics.info.set_shard(1, 4);
        metrics
            .info
            .set_policy("sha256:cd", "pipewarden:policy/policy@0.1.1");
        let text = metrics.encode();
        for line in [
            "pipewarden_mode_info{rebuild_policy=\"disable\",exit_mode=\"observe\",mode=\"report-only\"} 1",
            "pipewarden_policy_info{digest=\"sha256:cd\",world=\"pipewarden:policy/policy@0.1.1\"} 1",
            "pipewarden_shard_info{shard=\"1\",shards=\"4\"} 1",
        ] {
            assert!(text.contains(line), "no {line} in\n{text}");
        }
        assert!(
            !text.contains("sha256:ab"),
            "a replaced policy stays listed"
        );
        let build = format!(
            "pipewarden_build_info{{version=\"{}\"",
            env!("CARGO_PKG_VERSION")
        );
        assert!(text.contains(&build), "{text}");
    }
}
