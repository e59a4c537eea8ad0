//! The settings JSON of the default KFP policy: the KFP API server variables a render compiles
//! with, and which completed workflows get an exit notification.

use kfp_compiler::CompileOptions;
use pipewarden_guest::canonical::{digest, settings_digest};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Everything a render needs besides the SWF: the KFP API server's own variables, read as
/// [`CompileOptions`], and `notify`. Keys KFP does not read are ignored, as the API server
/// ignores unrelated variables, so a Deployment's `env` can be copied as it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// What the render compiles with (`V2_DRIVER_IMAGE`, `PIPELINE_LOG_LEVEL`, ...).
    pub compile: CompileOptions,
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
        let compile = CompileOptions::from_settings(value).map_err(|e| invalid(e.to_string()))?;
        check_image("V2_DRIVER_IMAGE", &compile.driver_image).map_err(invalid)?;
        check_image("V2_LAUNCHER_IMAGE", &compile.launcher_image).map_err(invalid)?;
        if !is_dns_subdomain(&compile.service_account) {
            return Err(invalid(format!(
                "DEFAULTPIPELINERUNNERSERVICEACCOUNT {:?} is not a valid ServiceAccount name",
                compile.service_account
            )));
        }
        Ok(Settings {
            compile,
            notify,
            source_digest,
        })
    }
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
