//! Flags of what the controller tells beyond its decisions: the fleet gauge's labels and the
//! policy reports (OpenReports `Report` objects, one per namespace).

use std::time::Duration;

use super::duration::parse_duration;
use super::floor::{Floor, SECOND};

#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Reports and fleet metrics")]
pub struct ReportArgs {
    /// Label `pipewarden_swfs` by the SWFs' namespace too (`swf_namespace`): one series per
    /// namespace and state, so as many as there are namespaces with SWFs. Off: one per state.
    #[arg(long, env = "PIPEWARDEN_METRICS_SWF_NAMESPACES")]
    pub metrics_swf_namespaces: bool,
    /// Policy reports: `auto` keeps one OpenReports `Report` (openreports.io/v1alpha1) per
    /// namespace, with a result per SWF that differs or cannot be served and per completion
    /// observe mode recorded, where the Report CRD is installed (one log line where it is
    /// not); `off` writes none.
    #[arg(long, env = "PIPEWARDEN_REPORTS", value_enum, default_value_t = ReportsMode::Auto)]
    pub reports: ReportsMode,
    /// How often changed reports are written (and whether the CRD is there looked at).
    #[arg(long, env = "PIPEWARDEN_REPORTS_INTERVAL", default_value = "30s", value_parser = parse_duration)]
    pub reports_interval: Duration,
    /// Results listed in one report at most (problems first); the summary counts them all.
    /// Keeps a report well below the API server's object size limit.
    #[arg(long, env = "PIPEWARDEN_REPORTS_MAX_RESULTS", default_value_t = 1000)]
    pub reports_max_results: usize,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportsMode {
    Auto,
    Off,
}

impl ReportArgs {
    pub fn floors(&self) -> Vec<Floor> {
        vec![
            Floor::duration(
                "--reports-interval",
                Some("PIPEWARDEN_REPORTS_INTERVAL"),
                self.reports_interval,
                SECOND,
            ),
            Floor::count(
                "--reports-max-results",
                "PIPEWARDEN_REPORTS_MAX_RESULTS",
                self.reports_max_results as u64,
                1,
            ),
        ]
    }
}
