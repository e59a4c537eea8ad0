//! Which cluster `run` and `plan` talk to: the kubeconfig and context kubectl would use, or
//! others named as kubectl names them.

use std::path::PathBuf;

use anyhow::Context as _;
use kube::config::{KubeConfigOptions, Kubeconfig};

#[derive(clap::Args, Debug, Clone, Default)]
pub struct ClusterArgs {
    /// The kubeconfig file to use; without it, $KUBECONFIG, ~/.kube/config or the pod's
    /// service account, as kubectl finds them.
    #[arg(help_heading = "Cluster", long)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use; without it, the current context.
    #[arg(help_heading = "Cluster", long)]
    pub context: Option<String>,
}

impl ClusterArgs {
    /// The client configuration these flags name.
    pub async fn config(&self) -> anyhow::Result<kube::Config> {
        if self.kubeconfig.is_none() && self.context.is_none() {
            return kube::Config::infer()
                .await
                .context("cannot build a Kubernetes client (KUBECONFIG or in-cluster config)");
        }
        let file = match &self.kubeconfig {
            Some(path) => Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read the kubeconfig {}", path.display()))?,
            None => Kubeconfig::read()
                .context("cannot read the kubeconfig (KUBECONFIG or ~/.kube/config)")?,
        };
        let options = KubeConfigOptions {
            context: self.context.clone(),
            ..KubeConfigOptions::default()
        };
        kube::Config::from_custom_kubeconfig(file, &options)
            .await
            .with_context(|| match &self.context {
                Some(context) => format!("cannot use the kubeconfig context {context}"),
                None => "cannot use the kubeconfig's current context".to_owned(),
            })
    }
}
