//! The settings JSON of the default KFP policy: the KFP API server variables a render compiles
//! with, and which completed workflows get an exit notification.
//!
//! A render compiles with the environment of the target release's API server: the release's
//! default install (the shipped `settings/kfp-<version>.json`), or, when the host reads it live
//! from the API server's Deployment (`--settings-from`), that environment; the variables the
//! settings name go on top. A variable the target release does not read is refused, naming it,
//! so settings meant for one release never shape another's compile.

use kfp_compiler::release::SETTINGS_KEYS;
use kfp_compiler::{CompileOptions, Release};
use pipewarden_guest::canonical::{digest, settings_digest};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::target::{Target, targets};

/// The settings key under which the host hands over the KFP API server's environment, read
/// from its Deployment (`pipewarden run --settings-from deployment/NAMESPACE/NAME`).
pub const API_SERVER_ENV_KEY: &str = "pipewarden.io/api-server-env";
/// The settings key under which the host names the API server's variables whose value it
/// cannot know (set from a Secret, which it never reads), each with why; `PREFIX*` stands for
/// every variable with that prefix that the environment does not hold.
pub const API_SERVER_ENV_UNKNOWN_KEY: &str = "pipewarden.io/api-server-env-unknown";

/// The key of the host's budget, which the host takes out of the settings before the policy
/// sees them: here, it only names what a misspelt key may have meant.
const HOST_BUDGET_KEY: &str = "pipewarden.io/budget";

/// Everything a render needs besides the SWF and the target, and `notify`. Keys KFP does not
/// read are ignored, as the API server ignores unrelated variables, so a Deployment's `env` can
/// be copied as it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The KFP API server variables the settings name: on top of the target's environment.
    pub variables: Map<String, Value>,
    /// The API server's own environment, when the host read it from its Deployment: the base
    /// instead of the target's default install.
    pub api_server_env: Option<Map<String, Value>>,
    /// The API server's variables whose value is not known, with why
    /// ([`API_SERVER_ENV_UNKNOWN_KEY`]).
    pub api_server_env_unknown: Map<String, Value>,
    /// Which completed workflows get an exit notification (`exit-eligibility`); renders do not
    /// read it, and it is left out of [`source_digest`](Self::source_digest).
    pub notify: Notify,
    /// Digest of the settings text this came from ([`render_settings_digest`]); renders stamp
    /// it so `should-rebuild` sees a settings change. A policy whose settings extend these sets
    /// it to the [`render_settings_digest`] of its whole settings text.
    pub source_digest: String,
}

/// Keys of the settings format from before renders compiled (images and driver flags patched
/// into the old compile): refused with a pointer to the variables that replace them.
const PRE_COMPILER_KEYS: [&str; 3] = ["driver", "launcher", "serviceAccount"];

/// `notify`: which completed workflows get an exit notification.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Notify {
    /// Workflows with an exit handler (`spec.onExit` or `spec.hooks.exit`, on the workflow or in
    /// the spec Argo stored from its `workflowTemplateRef`): those whose `onExit` notifier an
    /// Argo user replaces.
    #[default]
    ExitHandler,
    /// Every completed workflow.
    All,
}

impl Notify {
    pub fn as_str(self) -> &'static str {
        match self {
            Notify::ExitHandler => "exit-handler",
            Notify::All => "all",
        }
    }

    /// `notify` from a settings text, reading nothing else: the cheap path `exit-eligibility`
    /// takes (the settings were validated at load). Absent, or text that is not settings,
    /// means the default.
    pub fn from_settings(text: &str) -> Notify {
        #[derive(Deserialize)]
        struct OnlyNotify {
            #[serde(default)]
            notify: Notify,
        }
        if !text.contains("\"notify\"") {
            return Notify::default();
        }
        serde_json::from_str::<OnlyNotify>(text)
            .map(|only| only.notify)
            .unwrap_or_default()
    }
}

/// Digest of the settings as renders use them: [`settings_digest`] of the text without
/// `notify`, which no render reads, so choosing whom to notify never rewrites an SWF. Settings
/// without `notify` digest exactly as before it existed.
pub fn render_settings_digest(text: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(mut fields)) => {
            fields.remove("notify");
            digest(&serde_json::Value::Object(fields))
        }
        _ => settings_digest(text),
    }
}

impl Settings {
    /// Parses and validates settings JSON; the error text is meant for the operator.
    pub fn parse(text: &str) -> Result<Self, String> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("invalid settings: {e}"))?;
        Self::build(&value, render_settings_digest(text))
    }

    /// Like [`parse`](Self::parse), from an already parsed value.
    pub fn from_value(value: Value) -> Result<Self, String> {
        let source_digest = render_settings_digest(&value.to_string());
        Self::build(&value, source_digest)
    }

    fn build(value: &Value, source_digest: String) -> Result<Self, String> {
        let invalid = |message: String| format!("invalid settings: {message}");
        let Value::Object(fields) = value else {
            return Err(invalid(format!(
                "expected a JSON object keyed by KFP API server variables (V2_DRIVER_IMAGE, ...), \
                 got {}",
                pipewarden_guest::swf::json_type(value)
            )));
        };
        if let Some(key) = PRE_COMPILER_KEYS
            .iter()
            .find(|key| fields.contains_key(**key))
        {
            return Err(invalid(format!(
                "{key:?} belongs to the format before renders compiled; name the KFP API \
                 server's variables instead (V2_DRIVER_IMAGE, V2_LAUNCHER_IMAGE, \
                 PIPELINE_LOG_LEVEL, PUBLISH_LOGS, DEFAULTPIPELINERUNNERSERVICEACCOUNT, ...; \
                 see the policy README)"
            )));
        }
        let notify = match fields.get("notify") {
            None => Notify::default(),
            Some(notify) => serde_json::from_value(notify.clone())
                .map_err(|e| invalid(format!("notify: {e}")))?,
        };
        let api_server_env = match fields.get(API_SERVER_ENV_KEY) {
            None => None,
            Some(Value::Object(env)) => Some(env.clone()),
            Some(other) => {
                return Err(invalid(format!(
                    "{API_SERVER_ENV_KEY} must be an object of variables, got {}",
                    pipewarden_guest::swf::json_type(other)
                )));
            }
        };
        let api_server_env_unknown = match fields.get(API_SERVER_ENV_UNKNOWN_KEY) {
            None => Map::new(),
            Some(Value::Object(unknown)) => unknown.clone(),
            Some(other) => {
                return Err(invalid(format!(
                    "{API_SERVER_ENV_UNKNOWN_KEY} must be an object of variables, got {}",
                    pipewarden_guest::swf::json_type(other)
                )));
            }
        };
        let host_keys = ["notify", API_SERVER_ENV_KEY, API_SERVER_ENV_UNKNOWN_KEY];
        let variables: Map<String, Value> = fields
            .iter()
            .filter(|(key, _)| !host_keys.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        Ok(Settings {
            variables,
            api_server_env,
            api_server_env_unknown,
            notify,
            source_digest,
        })
    }

    /// Keys these settings name that nothing reads but that are one or two edits from a key
    /// something does (a KFP API server variable, `notify`, a key the host hands over or
    /// reads), each with the likely key: ignored as every unread key is, so a misspelt one
    /// would silently change nothing. `validate-settings` warns of each.
    pub fn misspelt_keys(&self) -> Vec<(String, &'static str)> {
        let known = || {
            SETTINGS_KEYS.iter().map(|(key, _, _)| *key).chain([
                "notify",
                API_SERVER_ENV_KEY,
                API_SERVER_ENV_UNKNOWN_KEY,
                HOST_BUDGET_KEY,
            ])
        };
        self.variables
            .keys()
            .filter(|key| !SETTINGS_KEYS.iter().any(|(known, _, _)| known == key))
            .filter_map(|key| {
                pipewarden_guest::settings::likely_key(key, known()).map(|k| (key.clone(), k))
            })
            .collect()
    }

    /// Whether these settings can be used at all (`validate-settings`): their shape, `notify`,
    /// and the variables they name holding values KFP accepts (a boolean that is not one, an
    /// image with spaces is refused, naming the key) for some release that reads them.
    ///
    /// Whether a target compiles with them is the render's to say, per target: settings that
    /// fit no served release (an image tagged for a release not served, a variable only
    /// another release reads), and the API server's own environment, make the target
    /// unsupported, which stops the SWF loop's writes and reports it; they never stop the
    /// controller.
    pub fn validate(&self) -> Result<(), String> {
        let named = Settings {
            api_server_env: None,
            ..self.clone()
        };
        let mut invalid = None;
        for target in targets() {
            match named.compile_options(&target) {
                Ok(_) => return Ok(()),
                Err(SettingsProblem::Invalid(why)) => invalid = Some(why),
                Err(SettingsProblem::NotForTarget(_)) => {}
            }
        }
        // Refused only for a value no release that fits them accepts; settings that fit no
        // served release at all are the render's to report, per target.
        match invalid {
            Some(why) => Err(format!("invalid settings: {why}")),
            None => Ok(()),
        }
    }

    /// What a render for `target` compiles with: the target's environment (the API server's
    /// own, or its release's default install) with these settings' variables on top, read as
    /// that release reads them. A variable the release does not read, or an image tagged for
    /// another release, does not fit the target; a value KFP would refuse is invalid.
    pub fn compile_options(&self, target: &Target) -> Result<CompileOptions, SettingsProblem> {
        let release = target.release;
        let foreign =
            |key: &String| Release::ALL.iter().any(|other| other.reads(key)) && !release.reads(key);
        if let Some(key) = self
            .variables
            .iter()
            .find(|(key, value)| !value.is_null() && foreign(key))
            .map(|(key, _)| key)
        {
            let readers: Vec<&str> = Release::ALL
                .iter()
                .filter(|other| other.reads(key))
                .map(|other| other.as_str())
                .collect();
            return Err(SettingsProblem::NotForTarget(format!(
                "KFP {} does not read {key} (read by KFP {})",
                target.version,
                readers.join(", ")
            )));
        }
        if let Some(env) = &self.api_server_env
            && let Some(problem) = self.unknown_read_by(release, env)
        {
            return Err(problem);
        }
        let mut environment = match &self.api_server_env {
            // The API server ignores what it does not read, and so does its compile here.
            Some(env) => env
                .iter()
                .filter(|(key, _)| release.reads(key))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
            None => match target.install_settings() {
                Value::Object(install) => install,
                _ => Map::new(),
            },
        };
        // A variable set to null is unset: the API server without it.
        for (key, value) in &self.variables {
            if value.is_null() {
                environment.remove(key);
            } else {
                environment.insert(key.clone(), value.clone());
            }
        }
        let compile = CompileOptions::from_settings_for(release, &Value::Object(environment))
            .map_err(|e| SettingsProblem::Invalid(e.to_string()))?;
        for (field, image) in [
            ("V2_DRIVER_IMAGE", &compile.driver_image),
            ("V2_LAUNCHER_IMAGE", &compile.launcher_image),
        ] {
            check_image(field, image).map_err(SettingsProblem::Invalid)?;
            check_image_release(field, image, target.version)
                .map_err(SettingsProblem::NotForTarget)?;
        }
        if !is_dns_subdomain(&compile.service_account) {
            return Err(SettingsProblem::Invalid(format!(
                "DEFAULTPIPELINERUNNERSERVICEACCOUNT {:?} is not a valid ServiceAccount name",
                compile.service_account
            )));
        }
        Ok(compile)
    }
}

impl Settings {
    /// A variable `release` reads whose value the host could not know (and the settings do
    /// not set): its compile cannot be made exactly.
    fn unknown_read_by(
        &self,
        release: Release,
        env: &Map<String, Value>,
    ) -> Option<SettingsProblem> {
        self.api_server_env_unknown.iter().find_map(|(key, why)| {
            let why = why.as_str().unwrap_or("unknown");
            let unknown = |name: &str| release.reads(name) && !self.variables.contains_key(name);
            let name = match key.strip_suffix('*') {
                None => unknown(key).then(|| key.clone())?,
                Some(prefix) => SETTINGS_KEYS
                    .iter()
                    .map(|(name, ..)| *name)
                    .find(|name| {
                        name.starts_with(prefix) && !env.contains_key(*name) && unknown(name)
                    })?
                    .to_owned(),
            };
            Some(SettingsProblem::NotForTarget(format!(
                "the KFP API server's {name} cannot be known: {why}; set it in the settings to \
                 say what it is"
            )))
        })
    }
}

/// Why settings give no compile for a target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SettingsProblem {
    /// They are meant for another release (a variable this one does not read, an image tagged
    /// for another): the target cannot be compiled for with them.
    NotForTarget(String),
    /// A value KFP would refuse.
    Invalid(String),
}

impl std::fmt::Display for SettingsProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingsProblem::NotForTarget(why) | SettingsProblem::Invalid(why) => f.write_str(why),
        }
    }
}

/// An image tagged with a KFP release (`...:2.16.1`) must be the target's: a driver or
/// launcher of another release rejects flags (or lacks ones) this compile passes. Digests,
/// `latest` and a distribution's own tags are the operator's to vouch for.
fn check_image_release(field: &str, image: &str, version: &str) -> Result<(), String> {
    let without_digest = image.split('@').next().unwrap_or(image);
    let name = without_digest.rsplit('/').next().unwrap_or(without_digest);
    let Some((_, tag)) = name.rsplit_once(':') else {
        return Ok(());
    };
    let tag = tag.strip_prefix('v').unwrap_or(tag);
    let is_release = tag.split('.').count() == 3
        && tag
            .split('.')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
    if is_release && tag != version {
        return Err(format!(
            "{field} {image:?} is tagged for KFP {tag}, not the target {version}: a driver or \
             launcher of one release cannot run another release's compile"
        ));
    }
    Ok(())
}

fn check_image(field: &str, image: &str) -> Result<(), String> {
    if image.is_empty() || image.chars().any(char::is_whitespace) {
        return Err(format!("{field} must be an image reference, got {image:?}"));
    }
    Ok(())
}

/// RFC 1123 subdomain, as Kubernetes requires of ServiceAccount names.
fn is_dns_subdomain(name: &str) -> bool {
    let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    name.len() <= 253
        && edge_ok(name.chars().next())
        && edge_ok(name.chars().last())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
}

#[cfg(test)]
mod tests;
