//! The KFP releases this crate compiles for, and what changed between them.
//!
//! One code base: where upstream's compiler (or the API server around it) changed behaviour
//! between two supported tags, the compiler asks `options.release.has(Feature::X)`. Each
//! [`Feature`] names the tag that introduced it and the upstream pull request. Proto fields
//! a release added or dropped are marked in the message tables of [`crate::proto`] instead
//! (`.since(...)`, `.until(...)`).
//!
//! Which KFP versions run which release's compiler, and how each is proven, is the
//! [`ledger`]'s to say.

pub mod ledger;

use std::fmt;

use serde_json::Value;

/// A KFP release whose API server and compiler this crate reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Release {
    V2_14_4,
    V2_15_0,
    V2_16_0,
    V2_16_1,
    V2_17_0,
}

impl Release {
    /// Every supported release, oldest first.
    pub const ALL: [Release; 5] = [
        Release::V2_14_4,
        Release::V2_15_0,
        Release::V2_16_0,
        Release::V2_16_1,
        Release::V2_17_0,
    ];

    /// The release compiled for when none is named.
    pub const LATEST: Release = Release::V2_17_0;

    /// The release named exactly `version` (`"2.16.1"`); no prefix matching, no `v`.
    pub fn parse(version: &str) -> Option<Release> {
        Self::ALL.into_iter().find(|r| r.as_str() == version)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Release::V2_14_4 => "2.14.4",
            Release::V2_15_0 => "2.15.0",
            Release::V2_16_0 => "2.16.0",
            Release::V2_16_1 => "2.16.1",
            Release::V2_17_0 => "2.17.0",
        }
    }

    /// The supported versions, comma separated (for error messages).
    pub fn supported() -> String {
        Self::ALL.map(Release::as_str).join(", ")
    }

    /// Whether this release behaves as `feature` describes.
    pub fn has(self, feature: Feature) -> bool {
        self >= feature.since()
    }

    /// Whether this release's API server or compiler reads the settings key `key`, among
    /// the keys that shape a compiled workflow (see [`SETTINGS_KEYS`]). Keys that play no
    /// part in compiling (database, object store, ...) give `false`.
    pub fn reads(self, key: &str) -> bool {
        SETTINGS_KEYS.iter().any(|(name, since, until)| {
            *name == key && self >= *since && until.is_none_or(|until| self <= until)
        })
    }

    /// The settings of this release's default install: the variables its
    /// `ml-pipeline-apiserver-deployment.yaml` sets (values from `pipeline-install-config`),
    /// with `POD_NAMESPACE=kubeflow`. The same bytes as the shipped
    /// `tests/data/upstream/kfp-<release>/settings/install.json`.
    pub fn install_settings(self) -> Value {
        serde_json::from_str(self.install_settings_text())
            .expect("embedded install settings are JSON")
    }

    /// [`Release::install_settings`] as the text it is stored as.
    pub fn install_settings_text(self) -> &'static str {
        match ledger::own_entry(self).compile {
            ledger::Compile::Own { install, .. } => install,
            _ => unreachable!("own_entry is an Own row"),
        }
    }

    /// The commit the release's tag points to in kubeflow/pipelines.
    pub fn commit(self) -> &'static str {
        ledger::own_entry(self)
            .commit
            .expect("a release proven on its own compiler names its tag's commit")
    }

    /// The folder under `tests/data/upstream/` holding its own compiler's output.
    pub fn data_folder(self) -> &'static str {
        match ledger::own_entry(self).compile {
            ledger::Compile::Own { data, .. } => data,
            _ => unreachable!("own_entry is an Own row"),
        }
    }
}

impl Default for Release {
    fn default() -> Self {
        Release::LATEST
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Release {
    type Err = UnknownRelease;

    fn from_str(version: &str) -> Result<Self, Self::Err> {
        Release::parse(version).ok_or_else(|| UnknownRelease(version.to_owned()))
    }
}

/// A version that is not one of [`Release::ALL`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownRelease(pub String);

impl fmt::Display for UnknownRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown KFP release {:?}; supported releases: {}",
            self.0,
            Release::supported()
        )
    }
}

impl std::error::Error for UnknownRelease {}

/// A behaviour of upstream's compiler that one supported release introduced; every later
/// release has it too. Removed behaviour is named by what replaced it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Feature {
    // --- 2.15.0 ---
    /// Drivers get `--ml_pipeline_server_address/_port` and `--mlmd_server_address/_port`
    /// as literals (kubeflow/pipelines#12463, #12428); the importer's MLMD address becomes
    /// a literal too, where 2.14.4 passed `$(METADATA_GRPC_SERVICE_SERVICE_HOST)`/`_PORT`.
    ServerAddressFlags,
    /// `--ml_pipeline_tls_enabled`, `--metadata_tls_enabled` and, with
    /// `CABUNDLE_SECRET_NAME`, `--ca_cert_path` and a CA volume on drivers, importer and
    /// executors (#12082, #12357).
    Tls,
    /// The executor CA bundle from `EXECUTOR_CABUNDLE_CONFIGMAP_NAME/_KEY/_MOUNTPATH`
    /// (`REQUESTS_CA_BUNDLE`, `AWS_CA_BUNDLE`, `SSL_CERT_*` and a `ca-bundle` volume) is
    /// gone; the launcher handles system CA bundles (#12382).
    NoExecutorCaBundle,
    /// Importers with `downloadToWorkspace` run `system-importer-workspace`, which mounts
    /// the workspace (#12353).
    ImporterWorkspace,
    /// `COMPILED_PIPELINE_SPEC_PATCH` is applied to the workflow spec (#12317).
    SpecPatch,
    /// The workspace PVC spec must have `accessModes` and `storageClassName`; the default
    /// workspace of `config.json` is gone (#12369).
    WorkspaceSpecChecks,

    // --- 2.16.0 ---
    /// Security contexts: workflow `runAsNonRoot` + seccomp `RuntimeDefault`; drivers and
    /// importer non-root, no privilege escalation, all capabilities dropped; executors pod
    /// seccomp and user-container defaults (#12782).
    SecurityContexts,
    /// `DEFAULT_SECURITY_CONTEXT_RUN_AS_USER/_GROUP/_NON_ROOT`: user-container security
    /// context and `--default_run_as_*` on the container driver (#12859).
    DefaultRunAs,
    /// `KFP_POD_NAME`/`KFP_POD_UID` on the container driver (#12499).
    ContainerDriverPodEnv,
    /// Service addresses and the default `NO_PROXY` use `CLUSTER_DOMAIN`; the ML pipeline
    /// address becomes a full name, `<svc>.<ns>.svc.<domain>` (#12701, #12718).
    ClusterDomain,
    /// The CA bundle comes from `CABUNDLE_SECRET_NAME` or `CABUNDLE_CONFIGMAP_NAME` (key
    /// `CABUNDLE_KEY_NAME`) in a `custom-ca` volume, whether or not TLS is on (#12572).
    CustomCaVolume,
    /// Tasks inside a ParallelFor resolve inputs under the ParallelFor task's name
    /// (`task-name` on iteration drivers, #12808).
    IterationTaskName,

    // --- 2.16.1 ---
    /// The launcher init container's memory limit is 256Mi, not 128Mi (#13299).
    LauncherMemory256Mi,
    /// `KFP_RETRY_INDEX={{retries}}` on executors with a retry policy (#13326).
    RetryIndexEnv,

    // --- 2.17.0 ---
    /// `--pipeline_job_create_time_utc {{workflow.creationTimestamp}}` on drivers (#13474).
    CreateTimeFlag,
    /// `DEFAULT_SECURITY_CONTEXT_HOST_USERS`: `--default_host_users` (#13301).
    DefaultHostUsers,
    /// `pipelines.kubeflow.org/runtime-role` annotations on driver and launcher templates
    /// (#13441).
    RuntimeRole,
    /// `ttlStrategy` and `activeDeadlineSeconds` from the platform spec's
    /// `pipelineConfig` (#13184, #13187), with `PipelineConfig` renumbered for them.
    PipelineTimeouts,
    /// The workspace PVC may leave `storageClassName` out (#13306).
    OptionalStorageClass,
    /// Argo Workflows v4 types and Kubernetes 0.35 (#13459): no `creationTimestamp: null`
    /// in object metadata.
    ArgoV4,
}

impl Feature {
    /// The first release with this behaviour.
    pub fn since(self) -> Release {
        use Feature::*;
        match self {
            ServerAddressFlags | Tls | NoExecutorCaBundle | ImporterWorkspace | SpecPatch
            | WorkspaceSpecChecks => Release::V2_15_0,
            SecurityContexts
            | DefaultRunAs
            | ContainerDriverPodEnv
            | ClusterDomain
            | CustomCaVolume
            | IterationTaskName => Release::V2_16_0,
            LauncherMemory256Mi | RetryIndexEnv => Release::V2_16_1,
            CreateTimeFlag | DefaultHostUsers | RuntimeRole | PipelineTimeouts
            | OptionalStorageClass | ArgoV4 => Release::V2_17_0,
        }
    }
}

/// Settings keys that shape a compiled workflow, with the first release whose API server or
/// compiler reads them and, for a key no longer read, the last one (`None`: still read, so a
/// new release edits no row it did not change). Keys are the API server's environment
/// variable names, plus the `config.json` keys `CacheEnabled` and `workspace`.
pub const SETTINGS_KEYS: &[(&str, Release, Option<Release>)] = {
    use Release::*;
    &[
        ("V2_DRIVER_IMAGE", V2_14_4, None),
        ("V2_LAUNCHER_IMAGE", V2_14_4, None),
        ("V2_DRIVER_COMMAND", V2_14_4, None),
        ("V2_LAUNCHER_COMMAND", V2_14_4, None),
        ("CacheEnabled", V2_14_4, None),
        ("CACHEENABLED", V2_14_4, None),
        ("PIPELINE_LOG_LEVEL", V2_14_4, None),
        ("PUBLISH_LOGS", V2_14_4, None),
        ("PIPELINE_RUN_AS_USER", V2_14_4, None),
        ("HTTP_PROXY", V2_14_4, None),
        ("HTTPS_PROXY", V2_14_4, None),
        ("NO_PROXY", V2_14_4, None),
        ("POD_NAMESPACE", V2_14_4, None),
        ("DEFAULTPIPELINERUNNERSERVICEACCOUNT", V2_14_4, None),
        ("workspace", V2_14_4, None),
        // 2.14.4's executor CA bundle, removed in 2.15.0 (#12382).
        ("EXECUTOR_CABUNDLE_CONFIGMAP_NAME", V2_14_4, Some(V2_14_4)),
        ("EXECUTOR_CABUNDLE_CONFIGMAP_KEY", V2_14_4, Some(V2_14_4)),
        ("EXECUTOR_CABUNDLE_MOUNTPATH", V2_14_4, Some(V2_14_4)),
        ("ML_PIPELINE_TLS_ENABLED", V2_15_0, None),
        ("METADATA_TLS_ENABLED", V2_15_0, None),
        ("CABUNDLE_SECRET_NAME", V2_15_0, None),
        ("COMPILED_PIPELINE_SPEC_PATCH", V2_15_0, None),
        ("ML_PIPELINE_SERVICE_NAME", V2_15_0, None),
        ("METADATA_SERVICE_NAME", V2_15_0, None),
        ("CABUNDLE_CONFIGMAP_NAME", V2_16_0, None),
        ("CABUNDLE_KEY_NAME", V2_16_0, None),
        ("CLUSTER_DOMAIN", V2_16_0, None),
        ("DEFAULT_SECURITY_CONTEXT_RUN_AS_USER", V2_16_0, None),
        ("DEFAULT_SECURITY_CONTEXT_RUN_AS_GROUP", V2_16_0, None),
        ("DEFAULT_SECURITY_CONTEXT_RUN_AS_NON_ROOT", V2_16_0, None),
        ("DEFAULT_SECURITY_CONTEXT_HOST_USERS", V2_17_0, None),
    ]
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_exactly() {
        for release in Release::ALL {
            assert_eq!(Release::parse(release.as_str()), Some(release));
        }
        for bad in [
            "2.16", "v2.16.1", "2.16.1 ", "2.16.10", "2.17", "", "latest",
        ] {
            assert_eq!(Release::parse(bad), None, "{bad:?}");
        }
        assert!(Release::ALL.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn keys_are_read_where_upstream_reads_them() {
        assert!(!Release::V2_16_1.reads("DEFAULT_SECURITY_CONTEXT_HOST_USERS"));
        assert!(Release::V2_17_0.reads("DEFAULT_SECURITY_CONTEXT_HOST_USERS"));
        assert!(Release::V2_14_4.reads("EXECUTOR_CABUNDLE_CONFIGMAP_NAME"));
        assert!(!Release::V2_15_0.reads("EXECUTOR_CABUNDLE_CONFIGMAP_NAME"));
        assert!(!Release::V2_14_4.reads("COMPILED_PIPELINE_SPEC_PATCH"));
        assert!(!Release::V2_17_0.reads("DBCONFIG_USER"));
    }

    #[test]
    fn every_install_reads_only_its_own_keys() {
        for release in Release::ALL {
            let settings = release.install_settings();
            for key in settings.as_object().unwrap().keys() {
                assert!(release.reads(key), "{release} install sets {key}");
            }
        }
    }
}
