//! Everything the Go compiler reads from its options and from the API server's environment.
//!
//! Settings JSON uses the API server's own keys (environment variable names, plus the two
//! `config.json` keys `CacheEnabled` and `workspace`), so they can be copied from the
//! `ml-pipeline` Deployment. A key that is absent behaves like an unset variable in KFP.

use std::fmt;

use serde::de::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::release::{Feature, Release, SETTINGS_KEYS};

/// Images and commands KFP falls back to when the variables are unset.
pub const DEFAULT_DRIVER_IMAGE: &str = "ghcr.io/kubeflow/kfp-driver:latest";
pub const DEFAULT_LAUNCHER_IMAGE: &str = "ghcr.io/kubeflow/kfp-launcher:latest";
/// What the KFP 2.17.0 manifests set.
pub const RELEASE_DRIVER_IMAGE: &str = "ghcr.io/kubeflow/kfp-driver:2.17.0";
pub const RELEASE_LAUNCHER_IMAGE: &str = "ghcr.io/kubeflow/kfp-launcher:2.17.0";

const DEFAULT_POD_NAMESPACE: &str = "kubeflow";
const DEFAULT_CLUSTER_DOMAIN: &str = "cluster.local";
const DEFAULT_ML_PIPELINE_SERVICE: &str = "ml-pipeline";
const DEFAULT_METADATA_SERVICE: &str = "metadata-grpc-service";
const ML_PIPELINE_GRPC_PORT: &str = "8887";
const METADATA_GRPC_PORT: &str = "8080";

/// Proxy settings handed to drivers (flags and environment).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Proxy {
    pub http_proxy: String,
    pub https_proxy: String,
    pub no_proxy: String,
}

/// A gRPC server the driver talks to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server {
    pub address: String,
    pub port: String,
}

/// Where a custom CA bundle comes from; a secret wins over a config map.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaBundle {
    pub secret_name: String,
    pub config_map_name: String,
    /// Key inside the secret or config map; `ca.crt` when empty.
    pub key_name: String,
}

impl CaBundle {
    pub fn is_configured(&self) -> bool {
        !self.secret_name.is_empty() || !self.config_map_name.is_empty()
    }
}

/// 2.14.4's executor CA bundle (`EXECUTOR_CABUNDLE_CONFIGMAP_NAME`, `_KEY`, `_MOUNTPATH`):
/// a config map key mounted into every executor, named by the usual CA variables.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecutorCaBundle {
    pub config_map_name: String,
    pub config_map_key: String,
    pub mount_path: String,
}

/// The compiler's inputs besides the pipeline: `argocompiler.Options` plus the environment.
#[derive(Clone, Debug, PartialEq)]
pub struct CompileOptions {
    /// The KFP release whose compiler this compile reproduces. Derived values (server
    /// addresses, the default `NO_PROXY`) are computed by [`CompileOptions::from_settings_for`]
    /// for its release; set them anew when changing the release of existing options.
    pub release: Release,
    pub driver_image: String,
    pub launcher_image: String,
    pub driver_command: Vec<String>,
    pub launcher_command: Vec<String>,
    pub cache_disabled: bool,
    /// `--log_level` for drivers, launcher and importer; only written when set.
    pub log_level: Option<String>,
    /// `--publish_logs`; only written when set.
    pub publish_logs: Option<String>,
    /// Workflow-level `securityContext.runAsUser`.
    pub pipeline_run_as_user: Option<i64>,
    pub proxy: Proxy,
    pub ca_bundle: CaBundle,
    pub ml_pipeline_tls_enabled: bool,
    pub metadata_tls_enabled: bool,
    pub ml_pipeline_server: Server,
    pub mlmd_server: Server,
    pub service_account: String,
    /// Admin defaults enforced on user containers (and passed to the container driver).
    pub default_run_as_user: Option<i64>,
    pub default_run_as_group: Option<i64>,
    pub default_run_as_non_root: Option<bool>,
    pub default_host_users: Option<bool>,
    /// Base `PersistentVolumeClaimSpec` (JSON) of pipeline workspaces.
    pub default_workspace: Option<Value>,
    /// Overrides the run's pipeline root (`runtimeConfig.gcsOutputDirectory`).
    pub pipeline_root: Option<String>,
    /// Strategic merge patch applied to the compiled workflow's `spec` (2.15.0 on).
    pub spec_patch: Option<String>,
    /// 2.14.4 only: the executor CA bundle config map.
    pub executor_ca_bundle: ExecutorCaBundle,
}

impl CompileOptions {
    /// The environment of KFP's compiler test: nothing set, proxies empty, default images.
    pub fn upstream_test() -> Self {
        let namespace = DEFAULT_POD_NAMESPACE;
        let domain = DEFAULT_CLUSTER_DOMAIN;
        CompileOptions {
            release: Release::LATEST,
            driver_image: DEFAULT_DRIVER_IMAGE.to_owned(),
            launcher_image: DEFAULT_LAUNCHER_IMAGE.to_owned(),
            driver_command: vec!["driver".to_owned()],
            launcher_command: vec!["launcher-v2".to_owned()],
            cache_disabled: false,
            log_level: None,
            publish_logs: None,
            pipeline_run_as_user: None,
            proxy: Proxy::default(),
            ca_bundle: CaBundle::default(),
            ml_pipeline_tls_enabled: false,
            metadata_tls_enabled: false,
            ml_pipeline_server: service(
                DEFAULT_ML_PIPELINE_SERVICE,
                namespace,
                domain,
                ML_PIPELINE_GRPC_PORT,
            ),
            mlmd_server: service(
                DEFAULT_METADATA_SERVICE,
                namespace,
                domain,
                METADATA_GRPC_PORT,
            ),
            service_account: "pipeline-runner".to_owned(),
            default_run_as_user: None,
            default_run_as_group: None,
            default_run_as_non_root: None,
            default_host_users: None,
            default_workspace: None,
            pipeline_root: None,
            spec_patch: None,
            executor_ca_bundle: ExecutorCaBundle::default(),
        }
    }

    /// What a default KFP 2.17.0 install's API server compiles with.
    pub fn kfp_2_17_0_install() -> Self {
        CompileOptions {
            driver_image: RELEASE_DRIVER_IMAGE.to_owned(),
            launcher_image: RELEASE_LAUNCHER_IMAGE.to_owned(),
            log_level: Some("1".to_owned()),
            publish_logs: Some("true".to_owned()),
            ..Self::upstream_test()
        }
    }

    /// What the default install of `release` compiles with ([`Release::install_settings`]).
    pub fn install(release: Release) -> Self {
        Self::from_settings_for(release, &release.install_settings())
            .expect("a release's own install settings are valid for it")
    }

    /// [`CompileOptions::from_settings_for`] KFP 2.17.0.
    pub fn from_settings(settings: &Value) -> Result<Self, SettingsError> {
        Self::from_settings_for(Release::V2_17_0, settings)
    }

    /// Options from a settings JSON object keyed by the API server's variable names, read
    /// as `release` reads them, on top of its defaults for unset variables. A key that some
    /// supported release reads but `release` does not is refused (naming both); keys no
    /// release reads are ignored.
    pub fn from_settings_for(release: Release, settings: &Value) -> Result<Self, SettingsError> {
        let Value::Object(map) = settings else {
            return Err(SettingsError::new("", "settings must be a JSON object"));
        };
        // A null value is an unset variable, as everywhere in settings.
        for (key, _) in map.iter().filter(|(_, value)| !value.is_null()) {
            let Some(readers) = readers(key) else {
                continue;
            };
            if !release.reads(key) {
                return Err(SettingsError::new(
                    key,
                    format!("KFP {release} does not read this key (read by KFP {readers})"),
                ));
            }
        }
        let env = Env(map);
        let mut options = Self::upstream_test();
        options.release = release;
        if let Some(image) = env.string("V2_DRIVER_IMAGE")?.filter(|s| !s.is_empty()) {
            options.driver_image = image;
        }
        if let Some(image) = env.string("V2_LAUNCHER_IMAGE")?.filter(|s| !s.is_empty()) {
            options.launcher_image = image;
        }
        if let Some(command) = env.string("V2_DRIVER_COMMAND")?.filter(|s| !s.is_empty()) {
            options.driver_command = command.split(' ').map(str::to_owned).collect();
        }
        if let Some(command) = env.string("V2_LAUNCHER_COMMAND")?.filter(|s| !s.is_empty()) {
            options.launcher_command = command.split(' ').map(str::to_owned).collect();
        }
        // config.json key; the variable is CACHEENABLED.
        if let Some(enabled) = env.boolean_any(&["CacheEnabled", "CACHEENABLED"])? {
            options.cache_disabled = !enabled;
        }
        options.log_level = env.string("PIPELINE_LOG_LEVEL")?;
        options.publish_logs = env.string("PUBLISH_LOGS")?;
        options.pipeline_run_as_user = env
            .string("PIPELINE_RUN_AS_USER")?
            .and_then(|text| text.parse().ok());

        let http = env.string("HTTP_PROXY")?;
        let https = env.string("HTTPS_PROXY")?;
        let no_proxy = env.string("NO_PROXY")?;
        let domain = env
            .string("CLUSTER_DOMAIN")?
            .unwrap_or_else(|| DEFAULT_CLUSTER_DOMAIN.to_owned());
        // CLUSTER_DOMAIN is read from 2.16.0 on (#12701); before, `cluster.local` is fixed.
        let domain = if release.has(Feature::ClusterDomain) {
            domain
        } else {
            DEFAULT_CLUSTER_DOMAIN.to_owned()
        };
        let no_proxy = match no_proxy {
            None if http.is_some() || https.is_some() => default_no_proxy(release, &domain),
            other => other.unwrap_or_default(),
        };
        options.proxy = Proxy {
            http_proxy: http.unwrap_or_default(),
            https_proxy: https.unwrap_or_default(),
            no_proxy,
        };

        options.ca_bundle = CaBundle {
            secret_name: env.string("CABUNDLE_SECRET_NAME")?.unwrap_or_default(),
            config_map_name: env.string("CABUNDLE_CONFIGMAP_NAME")?.unwrap_or_default(),
            key_name: env.string("CABUNDLE_KEY_NAME")?.unwrap_or_default(),
        };
        options.ml_pipeline_tls_enabled = env
            .boolean_any(&["ML_PIPELINE_TLS_ENABLED"])?
            .unwrap_or(false);
        options.metadata_tls_enabled = env.boolean_any(&["METADATA_TLS_ENABLED"])?.unwrap_or(false);

        let namespace = env
            .string("POD_NAMESPACE")?
            .unwrap_or_else(|| DEFAULT_POD_NAMESPACE.to_owned());
        let ml_pipeline = env
            .string("ML_PIPELINE_SERVICE_NAME")?
            .unwrap_or_else(|| DEFAULT_ML_PIPELINE_SERVICE.to_owned());
        let metadata = env
            .string("METADATA_SERVICE_NAME")?
            .unwrap_or_else(|| DEFAULT_METADATA_SERVICE.to_owned());
        options.ml_pipeline_server =
            service(&ml_pipeline, &namespace, &domain, ML_PIPELINE_GRPC_PORT);
        if !release.has(Feature::ClusterDomain) {
            // 2.15.0's `GetMLPipelineServerConfig`: `<service>.<namespace>`, no domain.
            options.ml_pipeline_server.address = format!("{ml_pipeline}.{namespace}");
        }
        options.mlmd_server = service(&metadata, &namespace, &domain, METADATA_GRPC_PORT);

        if let Some(account) = env.string("DEFAULTPIPELINERUNNERSERVICEACCOUNT")? {
            options.service_account = account;
        }
        options.default_run_as_user = env
            .string("DEFAULT_SECURITY_CONTEXT_RUN_AS_USER")?
            .and_then(|text| parse_non_negative(&text));
        options.default_run_as_group = env
            .string("DEFAULT_SECURITY_CONTEXT_RUN_AS_GROUP")?
            .and_then(|text| parse_non_negative(&text));
        options.default_run_as_non_root = env
            .string("DEFAULT_SECURITY_CONTEXT_RUN_AS_NON_ROOT")?
            .and_then(|text| parse_go_bool(text.trim()));
        options.default_host_users = env
            .string("DEFAULT_SECURITY_CONTEXT_HOST_USERS")?
            .and_then(|text| parse_go_bool(text.trim()));
        options.default_workspace = workspace_spec(map)?;
        options.spec_patch = env
            .string("COMPILED_PIPELINE_SPEC_PATCH")?
            .filter(|patch| !patch.is_empty());
        options.executor_ca_bundle = ExecutorCaBundle {
            config_map_name: env
                .string("EXECUTOR_CABUNDLE_CONFIGMAP_NAME")?
                .unwrap_or_default(),
            config_map_key: env
                .string("EXECUTOR_CABUNDLE_CONFIGMAP_KEY")?
                .unwrap_or_default(),
            mount_path: env
                .string("EXECUTOR_CABUNDLE_MOUNTPATH")?
                .unwrap_or_default(),
        };
        Ok(options)
    }

    /// [`CompileOptions::from_settings`] on JSON text.
    pub fn from_settings_json(text: &str) -> Result<Self, SettingsError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| SettingsError::new("", format!("settings are not JSON: {e}")))?;
        Self::from_settings(&value)
    }
}

impl Default for CompileOptions {
    fn default() -> Self {
        Self::upstream_test()
    }
}

impl<'de> Deserialize<'de> for CompileOptions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_settings(&value).map_err(serde::de::Error::custom)
    }
}

/// A settings key whose value cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsError {
    pub key: String,
    pub message: String,
}

impl SettingsError {
    fn new(key: &str, message: impl Into<String>) -> Self {
        SettingsError {
            key: key.to_owned(),
            message: message.into(),
        }
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "settings key {}: {}", self.key, self.message)
        }
    }
}

impl std::error::Error for SettingsError {}

/// Settings read like environment variables: every value is text.
struct Env<'a>(&'a Map<String, Value>);

impl Env<'_> {
    fn string(&self, key: &str) -> Result<Option<String>, SettingsError> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Bool(b)) => Ok(Some(b.to_string())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(_) => Err(SettingsError::new(key, "expected a string")),
        }
    }

    /// The first of `keys` that is set, parsed as Go's `strconv.ParseBool` does.
    fn boolean_any(&self, keys: &[&str]) -> Result<Option<bool>, SettingsError> {
        for key in keys {
            if let Some(text) = self.string(key)? {
                return parse_go_bool(&text)
                    .map(Some)
                    .ok_or_else(|| SettingsError::new(key, format!("{text:?} is not a boolean")));
            }
        }
        Ok(None)
    }
}

/// `workspace.volumeclaimtemplatespec` from the API server's `config.json`.
fn workspace_spec(map: &Map<String, Value>) -> Result<Option<Value>, SettingsError> {
    let Some(workspace) = map.get("workspace").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let spec = workspace
        .as_object()
        .and_then(|w| {
            w.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("volumeclaimtemplatespec"))
        })
        .map(|(_, spec)| spec.clone());
    let Some(spec) = spec else {
        return Ok(None);
    };
    let access_modes = spec.get("accessModes").and_then(Value::as_array);
    let storage_class = spec.get("storageClassName").and_then(Value::as_str);
    if access_modes.is_none_or(|m| m.is_empty()) || storage_class.is_none_or(str::is_empty) {
        return Err(SettingsError::new(
            "workspace",
            "volumeclaimtemplatespec must specify accessModes and storageClassName",
        ));
    }
    Ok(Some(spec))
}

/// The releases that read a settings key, as text (`2.15.0 to 2.16.1`, `2.16.0 on`); `None`
/// for keys no supported release reads.
fn readers(key: &str) -> Option<String> {
    let (_, since, until) = SETTINGS_KEYS.iter().find(|(name, ..)| *name == key)?;
    Some(match until {
        Some(until) if until == since => since.to_string(),
        Some(until) => format!("{since} to {until}"),
        None => format!("{since} on"),
    })
}

fn service(name: &str, namespace: &str, domain: &str, port: &str) -> Server {
    Server {
        address: format!("{name}.{namespace}.svc.{domain}"),
        port: port.to_owned(),
    }
}

/// The proxy config's `NO_PROXY` when a proxy is set without one.
fn default_no_proxy(release: Release, domain: &str) -> String {
    if !release.has(Feature::ServerAddressFlags) {
        // 2.14.4's list (the digits cover IP addresses).
        return "localhost,127.0.0.1,.svc.cluster.local,kubernetes.default.svc,\
                metadata-grpc-service,0,1,2,3,4,5,6,7,8,9"
            .to_owned();
    }
    format!(
        "localhost,127.0.0.1,.svc.{domain},kubernetes.default.svc,minio-service.kubeflow,\
         metadata-grpc-service,metadata-grpc-service.kubeflow,ml-pipeline.kubeflow"
    )
}

fn parse_non_negative(text: &str) -> Option<i64> {
    text.trim().parse().ok().filter(|v: &i64| *v >= 0)
}

/// Go's `strconv.ParseBool`.
pub fn parse_go_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_settings_are_the_upstream_test_environment() {
        assert_eq!(
            CompileOptions::from_settings(&json!({})).unwrap(),
            CompileOptions::upstream_test()
        );
    }

    #[test]
    fn install_settings_match_the_release_constructor() {
        let settings = json!({
            "V2_DRIVER_IMAGE": "ghcr.io/kubeflow/kfp-driver:2.17.0",
            "V2_LAUNCHER_IMAGE": "ghcr.io/kubeflow/kfp-launcher:2.17.0",
            "PIPELINE_LOG_LEVEL": "1",
            "PUBLISH_LOGS": "true",
            "DBCONFIG_USER": "ignored"
        });
        assert_eq!(
            CompileOptions::from_settings(&settings).unwrap(),
            CompileOptions::kfp_2_17_0_install()
        );
    }

    #[test]
    fn a_key_of_another_release_is_refused_naming_key_and_release() {
        let settings = json!({"DEFAULT_SECURITY_CONTEXT_HOST_USERS": "false"});
        let err = CompileOptions::from_settings_for(Release::V2_16_1, &settings).unwrap_err();
        assert_eq!(err.key, "DEFAULT_SECURITY_CONTEXT_HOST_USERS");
        assert!(err.to_string().contains("KFP 2.16.1"), "{err}");
        assert!(CompileOptions::from_settings_for(Release::V2_17_0, &settings).is_ok());
        let err = CompileOptions::from_settings_for(
            Release::V2_15_0,
            &json!({"EXECUTOR_CABUNDLE_CONFIGMAP_NAME": "ca"}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("read by KFP 2.14.4"), "{err}");
        // A null value is unset; keys no release reads stay ignored.
        assert!(
            CompileOptions::from_settings_for(
                Release::V2_16_1,
                &json!({"DEFAULT_SECURITY_CONTEXT_HOST_USERS": null})
            )
            .is_ok()
        );
        assert!(
            CompileOptions::from_settings_for(Release::V2_14_4, &json!({"DBCONFIG_USER": "x"}))
                .is_ok()
        );
    }

    #[test]
    fn every_install_is_its_release() {
        for release in Release::ALL {
            let options = CompileOptions::install(release);
            assert_eq!(options.release, release);
            assert!(options.driver_image.ends_with(release.as_str()));
        }
        assert_eq!(
            CompileOptions::install(Release::V2_17_0),
            CompileOptions {
                spec_patch: Some("{}".to_owned()),
                ..CompileOptions::kfp_2_17_0_install()
            }
        );
    }

    #[test]
    fn proxy_without_no_proxy_gets_kfp_default_list() {
        let options = CompileOptions::from_settings(&json!({
            "HTTP_PROXY": "http://proxy:3128",
            "CLUSTER_DOMAIN": "cluster.test",
            "POD_NAMESPACE": "kfp"
        }))
        .unwrap();
        assert_eq!(options.proxy.http_proxy, "http://proxy:3128");
        assert!(
            options
                .proxy
                .no_proxy
                .starts_with("localhost,127.0.0.1,.svc.cluster.test,")
        );
        assert_eq!(
            options.ml_pipeline_server.address,
            "ml-pipeline.kfp.svc.cluster.test"
        );
        assert_eq!(options.mlmd_server.port, "8080");
    }

    #[test]
    fn booleans_and_numbers_parse_like_kfp() {
        let options = CompileOptions::from_settings(&json!({
            "CacheEnabled": "false",
            "METADATA_TLS_ENABLED": "True",
            "PIPELINE_RUN_AS_USER": "not-a-number",
            "DEFAULT_SECURITY_CONTEXT_RUN_AS_USER": "-5",
            "DEFAULT_SECURITY_CONTEXT_RUN_AS_GROUP": " 100 ",
            "DEFAULT_SECURITY_CONTEXT_HOST_USERS": "f"
        }))
        .unwrap();
        assert!(options.cache_disabled);
        assert!(options.metadata_tls_enabled);
        assert_eq!(options.pipeline_run_as_user, None);
        assert_eq!(options.default_run_as_user, None);
        assert_eq!(options.default_run_as_group, Some(100));
        assert_eq!(options.default_host_users, Some(false));
        let err =
            CompileOptions::from_settings(&json!({"METADATA_TLS_ENABLED": "yes"})).unwrap_err();
        assert_eq!(err.key, "METADATA_TLS_ENABLED");
    }
}
