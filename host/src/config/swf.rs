//! Flags of the ScheduledWorkflow loop.

use std::time::Duration;

use super::duration::parse_duration;
use super::floor::{Floor, SECOND};
use crate::engine::RebuildPolicy;
use crate::swf::{REBUILD_POLICY_ENV, parse_rebuild_policy};

#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "SWF loop")]
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
    /// PEM CA bundle an https:// --kfp-api-url is verified against (KFP's cert-manager TLS:
    /// the certificate Secret's ca.crt); without it, the system roots.
    #[arg(long, env = "PIPEWARDEN_KFP_API_CA_FILE", requires = "kfp_api_url")]
    pub kfp_api_ca_file: Option<std::path::PathBuf>,
    /// How often to ask the KFP apiserver for its version.
    #[arg(long, env = "PIPEWARDEN_KFP_API_POLL", default_value = "60s", value_parser = parse_duration)]
    pub kfp_api_poll: Duration,
    /// A version the KFP apiserver reports (a distribution's own string) and the KFP release to
    /// compile for when it does: `REPORTED=RELEASE`, comma-separated, e.g.
    /// `2.16.1-acme.3=2.16.1`. A version not listed is taken as it is; nothing is guessed.
    #[arg(long, env = "PIPEWARDEN_COMPILE_AS", value_delimiter = ',', value_parser = CompileAs::parse)]
    pub compile_as: Vec<CompileAs>,
    /// Whether KFP runs in multi-user mode, where it cannot be read from the install (the KFP
    /// API's healthz with --kfp-api-url, else MULTIUSER of the API server's environment with
    /// --settings-from): from 2.18 on, KFP's API server then owns every recurring run and the
    /// SWF loop writes nothing.
    #[arg(long, env = "PIPEWARDEN_KFP_MULTI_USER", action = clap::ArgAction::Set)]
    pub kfp_multi_user: Option<bool>,
    /// Writes one SWF may get in an hour; beyond them it is left alone (one WriteLoop
    /// Warning), so a fight with another writer that keeps changing it back ends.
    #[arg(long, env = "PIPEWARDEN_SWF_WRITES_PER_HOUR", default_value_t = 6)]
    pub swf_writes_per_hour: usize,
    /// MiB of compressed SWFs kept for decisions to come. Each is let go once its SWF is
    /// decided with nothing left to do; an SWF listed while they are spent is kept as its keys
    /// and read from the API server (one GET) when it must be decided.
    #[arg(long, env = "PIPEWARDEN_SWF_BODIES_MIB", default_value_t = 64)]
    pub swf_bodies_mib: usize,
    /// How often every SWF is reconciled again, changed or not.
    #[arg(long, env = "PIPEWARDEN_SWF_RESYNC", default_value = "10m", value_parser = parse_duration)]
    pub swf_resync: Duration,
}

/// One `REPORTED=RELEASE` mapping of `--compile-as`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileAs {
    pub reported: String,
    pub release: String,
}

impl CompileAs {
    pub fn parse(text: &str) -> Result<CompileAs, String> {
        let (reported, release) = text.split_once('=').ok_or_else(|| {
            format!("{text:?} is not REPORTED=RELEASE, e.g. 2.16.1-acme.3=2.16.1")
        })?;
        let (reported, release) = (reported.trim(), release.trim());
        if reported.is_empty() || release.is_empty() {
            return Err(format!("{text:?}: both sides of = must be versions"));
        }
        Ok(CompileAs {
            reported: reported.to_owned(),
            release: release.to_owned(),
        })
    }

    /// The version to render for when `reported` is the target: its mapping, or itself.
    pub fn apply(mappings: &[CompileAs], reported: Option<String>) -> Option<String> {
        let reported = reported?;
        match mappings.iter().find(|m| m.reported == reported) {
            Some(mapping) => {
                tracing::info!(
                    reported,
                    release = mapping.release,
                    "target mapped by --compile-as"
                );
                Some(mapping.release.clone())
            }
            None => Some(reported),
        }
    }
}

impl SwfArgs {
    pub fn floors(&self) -> Vec<Floor> {
        vec![
            Floor::count(
                "--swf-writes-per-hour",
                "PIPEWARDEN_SWF_WRITES_PER_HOUR",
                self.swf_writes_per_hour as u64,
                1,
            ),
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
    fn compile_as_maps_only_the_versions_it_names() {
        let cli = Cli::try_parse_from([
            "pipewarden",
            "--compile-as=2.16.1-acme.3=2.16.1, 2.17.0-acme.1=2.17.0",
        ])
        .unwrap();
        let mappings = &cli.swf.compile_as;
        assert_eq!(mappings.len(), 2);
        let mapped = |v: &str| super::CompileAs::apply(mappings, Some(v.to_owned()));
        assert_eq!(mapped("2.16.1-acme.3").as_deref(), Some("2.16.1"));
        assert_eq!(mapped("2.18.0-acme.1").as_deref(), Some("2.18.0-acme.1"));
        assert_eq!(super::CompileAs::apply(mappings, None), None);
        for bad in ["2.16.1", "=2.16.1", "2.16.1-acme="] {
            assert!(
                Cli::try_parse_from(["pipewarden", "--compile-as", bad]).is_err(),
                "{bad}"
            );
        }
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
