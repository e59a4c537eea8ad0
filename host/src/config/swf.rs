//! Flags of the ScheduledWorkflow loop.

use std::time::Duration;

use super::duration::humantime_secs;
use super::floor::{Floor, SECOND};
use crate::engine::RebuildPolicy;
use crate::swf::{REBUILD_POLICY_ENV, parse_rebuild_policy};

#[derive(clap::Args, Debug, Clone)]
pub struct SwfArgs {
    /// Run the SWF loop (watches kubeflow.org ScheduledWorkflows); turn off where KFP is not
    /// installed.
    #[arg(long = "swf-loop", env = "PIPEWARDEN_SWF_LOOP", default_value_t = true, action = clap::ArgAction::Set)]
    pub enabled: bool,
    /// How SWFs are rebuilt: disable | always | on-version-change.
    #[arg(long, env = REBUILD_POLICY_ENV, default_value = "always", value_parser = parse_rebuild_policy)]
    pub rebuild_policy: RebuildPolicy,
    /// The KFP version SWFs are rendered for (unknown if neither this nor --kfp-api-url is set).
    #[arg(
        long,
        env = "PIPEWARDEN_TARGET_VERSION",
        conflicts_with = "kfp_api_url"
    )]
    pub target_version: Option<String>,
    /// KFP apiserver base URL, e.g. http://ml-pipeline.kubeflow:8888: the target version is the
    /// `tag_name` its health endpoint reports, polled.
    #[arg(long, env = "PIPEWARDEN_KFP_API_URL")]
    pub kfp_api_url: Option<String>,
    /// How often to ask the KFP apiserver for its version.
    #[arg(long, env = "PIPEWARDEN_KFP_API_POLL", default_value = "60s", value_parser = humantime_secs)]
    pub kfp_api_poll: Duration,
    /// How often every SWF is reconciled again, changed or not.
    #[arg(long, env = "PIPEWARDEN_SWF_RESYNC", default_value = "10m", value_parser = humantime_secs)]
    pub swf_resync: Duration,
}

impl SwfArgs {
    pub fn floors(&self) -> Vec<Floor> {
        vec![
            Floor::duration(
                "--swf-resync",
                Some("PIPEWARDEN_SWF_RESYNC"),
                self.swf_resync,
                SECOND,
            ),
            Floor::duration(
                "--kfp-api-poll",
                Some("PIPEWARDEN_KFP_API_POLL"),
                self.kfp_api_poll,
                SECOND,
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::SwfArgs;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        swf: SwfArgs,
    }

    #[test]
    fn unknown_rebuild_policy_is_refused_naming_the_valid_ones() {
        let error = Cli::try_parse_from(["pipewarden", "--rebuild-policy", "sometimes"])
            .err()
            .expect("refused")
            .to_string();
        assert!(
            error.contains("valid values are: disable, always, on-version-change"),
            "{error}"
        );
    }

    #[test]
    fn a_fixed_target_and_a_polled_one_exclude_each_other() {
        let both = [
            "pipewarden",
            "--target-version=2.17.0",
            "--kfp-api-url=http://ml-pipeline.kubeflow:8888",
        ];
        assert!(Cli::try_parse_from(both).is_err());
    }
}
