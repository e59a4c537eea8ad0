//! The settings JSON of the default KFP policy: what a render migrates SWFs to, and which
//! completed workflows get an exit notification.

use pipewarden_guest::canonical::{digest, settings_digest};
use serde::{Deserialize, Serialize};

/// Everything a render needs besides the SWF. Unknown fields are rejected so a typo is an
/// error at load, not a silently ignored setting.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Settings {
    pub driver: DriverSettings,
    pub launcher: LauncherSettings,
    /// When set, written to the SWF's `spec.serviceAccount` and the workflow's
    /// `serviceAccountName`; when absent both are left as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<String>,
    /// Which completed workflows get an exit notification (`exit-eligibility`); renders do not
    /// read it, and it is left out of [`source_digest`](Self::source_digest).
    #[serde(default)]
    pub notify: Notify,
    /// Digest of the settings text this came from ([`render_settings_digest`]); renders stamp
    /// it so `should-rebuild` sees a settings change. A policy whose settings extend these sets
    /// it to the [`render_settings_digest`] of its whole settings text.
    #[serde(skip)]
    pub source_digest: String,
}

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

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DriverSettings {
    /// Image of every template whose container runs `driver`.
    pub image: String,
    /// The flags the target version's drivers take, in the order they are written.
    #[serde(default)]
    pub flags: Vec<FlagSpec>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LauncherSettings {
    /// Image of every `kfp-launcher` init container.
    pub image: String,
}

/// One command-line flag a render guarantees.
///
/// With `value`, the flag is set to it (added if missing). With `default`, an existing value is
/// kept and the default is used only when the flag is missing. With neither, the flag's value
/// is per pipeline (e.g. `pipeline_name`): it is kept, and a missing flag is a render error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FlagSpec {
    /// Without leading dashes: `log_level`, written as `--log_level`.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    #[serde(default)]
    pub style: FlagStyle,
    /// Which drivers take the flag; both when absent.
    #[serde(default = "DriverKind::both")]
    pub drivers: Vec<DriverKind>,
    /// A template input parameter the value refers to, declared on the driver template when
    /// missing (e.g. `{{inputs.parameters.task-name}}` needs `task-name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<InputSpec>,
}

/// How a flag and its value are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlagStyle {
    /// `--flag value`: two arguments.
    #[default]
    Separate,
    /// `--flag=value`: one argument; what Go's flag package needs for booleans.
    Equals,
}

/// The two KFP driver templates: `--type CONTAINER` and the DAG driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriverKind {
    Container,
    Dag,
}

impl DriverKind {
    pub fn both() -> Vec<Self> {
        vec![Self::Container, Self::Dag]
    }
}

/// An Argo input parameter: `{"name": ..., "default": ...}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    pub name: String,
    pub default: String,
}

impl Settings {
    /// Parses and validates settings JSON; the error text is meant for the operator.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut settings: Self =
            serde_json::from_str(text).map_err(|e| format!("invalid settings: {e}"))?;
        settings
            .validate()
            .map_err(|e| format!("invalid settings: {e}"))?;
        settings.source_digest = render_settings_digest(text);
        Ok(settings)
    }

    /// Like [`parse`](Self::parse), from an already parsed value.
    pub fn from_value(value: serde_json::Value) -> Result<Self, String> {
        let source_digest = render_settings_digest(&value.to_string());
        let mut settings: Self =
            serde_json::from_value(value).map_err(|e| format!("invalid settings: {e}"))?;
        settings
            .validate()
            .map_err(|e| format!("invalid settings: {e}"))?;
        settings.source_digest = source_digest;
        Ok(settings)
    }

    pub fn validate(&self) -> Result<(), String> {
        check_image("driver.image", &self.driver.image)?;
        check_image("launcher.image", &self.launcher.image)?;
        if let Some(account) = &self.service_account
            && !is_dns_subdomain(account)
        {
            return Err(format!(
                "serviceAccount {account:?} is not a valid ServiceAccount name"
            ));
        }
        for (index, flag) in self.driver.flags.iter().enumerate() {
            flag.validate()
                .map_err(|e| format!("driver.flags[{index}] ({}): {e}", flag.name))?;
            let clash = self.driver.flags[..index].iter().find(|earlier| {
                earlier.name == flag.name
                    && earlier
                        .drivers
                        .iter()
                        .any(|kind| flag.drivers.contains(kind))
            });
            if clash.is_some() {
                return Err(format!(
                    "driver.flags[{index}]: --{} is listed twice for the same driver",
                    flag.name
                ));
            }
        }
        Ok(())
    }

    /// The driver flags that apply to `kind`, in settings order.
    pub fn driver_flags(&self, kind: DriverKind) -> Vec<&FlagSpec> {
        self.driver
            .flags
            .iter()
            .filter(|flag| flag.drivers.contains(&kind))
            .collect()
    }
}

impl FlagSpec {
    /// A flag set to `value` for both drivers, written `--name value`.
    pub fn set(name: &str, value: &str) -> Self {
        Self {
            name: name.to_owned(),
            value: Some(value.to_owned()),
            default: None,
            style: FlagStyle::Separate,
            drivers: DriverKind::both(),
            input: None,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if !is_flag_name(&self.name) {
            return Err(if self.name.starts_with('-') {
                "write the name without dashes (log_level, not --log_level)".to_owned()
            } else {
                "a flag name is letters, digits, '_', '-' or '.'".to_owned()
            });
        }
        if self.value.is_some() && self.default.is_some() {
            return Err("give either value or default, not both".to_owned());
        }
        if self.drivers.is_empty() {
            return Err("drivers is empty; omit it to mean both".to_owned());
        }
        if let Some(input) = &self.input
            && !is_flag_name(&input.name)
        {
            return Err(format!(
                "input name {:?} is not a parameter name",
                input.name
            ));
        }
        Ok(())
    }
}

fn check_image(field: &str, image: &str) -> Result<(), String> {
    if image.is_empty() || image.chars().any(char::is_whitespace) {
        return Err(format!("{field} must be an image reference, got {image:?}"));
    }
    Ok(())
}

fn is_flag_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
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
