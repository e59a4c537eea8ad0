//! Where the policy's settings come from: a file, and with `--settings-from
//! deployment/NAMESPACE/NAME` the KFP API server's own environment, read live from its running
//! pods (and the ConfigMaps they name; see `api_server_install`), so a render follows the
//! install.

use std::path::PathBuf;

use anyhow::Context as _;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::api_server_install::{self, InstallRead};
use crate::config::{Settings, parse_settings, read_settings};
use crate::swf::api_server_env::{
    API_SERVER_ENV_KEY, API_SERVER_ENV_UNKNOWN_KEY, DeploymentRef, ResolvedEnv,
};

/// A settings file, a live Deployment, or both (the file's keys beside the environment).
#[derive(Clone)]
pub struct SettingsSource {
    pub file: Option<PathBuf>,
    pub live: Option<(kube::Client, DeploymentRef)>,
    /// The digest the settings file must have.
    pub pin: SettingsPin,
}

/// `--settings-sha256` or `--settings-sha256-file` (re-read on every read, so settings and
/// their pin can be updated together).
#[derive(Clone, Debug, Default)]
pub enum SettingsPin {
    #[default]
    None,
    Digest(String),
    File(PathBuf),
}

impl SettingsPin {
    pub fn from_flags(digest: Option<&str>, file: Option<&PathBuf>) -> Self {
        match (digest, file) {
            (Some(digest), _) => SettingsPin::Digest(digest.to_owned()),
            (None, Some(file)) => SettingsPin::File(file.clone()),
            (None, None) => SettingsPin::None,
        }
    }

    /// Refuses `bytes` of the settings file `path` unless they have the pinned digest.
    fn check(&self, path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
        let pinned = match self {
            SettingsPin::None => return Ok(()),
            SettingsPin::Digest(digest) => digest.clone(),
            SettingsPin::File(file) => std::fs::read_to_string(file)
                .with_context(|| format!("cannot read the settings pin {}", file.display()))?,
        };
        // The first word: a pin file may be `sha256sum` output (`<hex>  settings.json`).
        let pinned = pinned
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let pinned = if pinned.starts_with("sha256:") {
            pinned
        } else {
            format!("sha256:{pinned}")
        };
        let found = format!("sha256:{}", hex::encode(Sha256::digest(bytes)));
        if found != pinned {
            return Err(SettingsPinMismatch {
                path: path.display().to_string(),
                found,
                pinned,
            }
            .into());
        }
        Ok(())
    }
}

/// Settings whose file is not what the pin says: refused, never read as settings.
#[derive(Debug, thiserror::Error)]
#[error("settings {path} have digest {found}, not the pinned {pinned} (--settings-sha256)")]
pub struct SettingsPinMismatch {
    path: String,
    found: String,
    pinned: String,
}

impl SettingsSource {
    /// Whether any settings are given (the policy validates them then).
    pub fn is_given(&self) -> bool {
        self.file.is_some() || self.live.is_some()
    }

    /// The settings as the policy gets them now.
    pub async fn read(&self) -> anyhow::Result<Settings> {
        Ok(self.read_with_install().await?.0)
    }

    /// [`read`](Self::read), and what the API server's install said (with `--settings-from`).
    pub async fn read_with_install(&self) -> anyhow::Result<(Settings, Option<InstallRead>)> {
        let settings = self.read_file()?;
        match self.read_install(&settings).await {
            None => Ok((settings, None)),
            Some(read) => read.map(|(settings, install)| (settings, Some(install))),
        }
    }

    /// With `--settings-from`: `file_settings` with the API server's environment, and what the
    /// install said; None without it.
    pub async fn read_install(
        &self,
        file_settings: &Settings,
    ) -> Option<anyhow::Result<(Settings, InstallRead)>> {
        let (client, deployment) = self.live.as_ref()?;
        let read = async {
            let install = api_server_install::read(client, deployment).await?;
            let settings = compose(file_settings.clone(), &install.env)
                .with_context(|| format!("settings with {deployment}"))?;
            Ok((settings, install))
        };
        Some(read.await)
    }

    /// The settings file alone (`{}` without one), its pin checked. Read once: the bytes the
    /// pin is checked against are the bytes parsed (a file replaced between two reads cannot
    /// pass the pin with one content and render with another).
    pub fn read_file(&self) -> anyhow::Result<Settings> {
        let Some(path) = &self.file else {
            return read_settings(None);
        };
        let bytes = std::fs::read(path)
            .with_context(|| format!("cannot read settings {}", path.display()))?;
        self.pin.check(path, &bytes)?;
        parse_settings(&bytes, path)
    }
}

/// The API server container's environment, as resolved from its running pods now.
pub async fn fetch(client: &kube::Client, at: &DeploymentRef) -> anyhow::Result<ResolvedEnv> {
    Ok(api_server_install::read(client, at).await?.env)
}

/// `settings` with the environment's known values under [`API_SERVER_ENV_KEY`] and the
/// variables whose value is not known under [`API_SERVER_ENV_UNKNOWN_KEY`].
pub fn compose(settings: Settings, env: &ResolvedEnv) -> anyhow::Result<Settings> {
    let mut value: Value = serde_json::from_str(&settings.text)?;
    let Some(fields) = value.as_object_mut() else {
        anyhow::bail!("settings must be a JSON object to carry the API server's environment");
    };
    for key in [API_SERVER_ENV_KEY, API_SERVER_ENV_UNKNOWN_KEY] {
        if fields.contains_key(key) {
            anyhow::bail!("{key} is written by --settings-from, not by a settings file");
        }
    }
    fields.insert(
        API_SERVER_ENV_KEY.to_owned(),
        serde_json::to_value(&env.vars)?,
    );
    let unknown = env.unknown_for_policy();
    if !unknown.is_empty() {
        fields.insert(
            API_SERVER_ENV_UNKNOWN_KEY.to_owned(),
            serde_json::to_value(unknown)?,
        );
    }
    Ok(Settings {
        text: value.to_string(),
        budget: settings.budget,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_goes_beside_the_files_keys_and_a_file_cannot_forge_it() {
        let env = ResolvedEnv {
            vars: [("V2_DRIVER_IMAGE".to_owned(), "d:2.16.1".to_owned())].into(),
            ..ResolvedEnv::default()
        };
        let file = Settings {
            text: r#"{"notify":"all"}"#.into(),
            budget: Default::default(),
        };
        let composed = compose(file, &env).unwrap();
        assert_eq!(
            composed.text,
            r#"{"notify":"all","pipewarden.io/api-server-env":{"V2_DRIVER_IMAGE":"d:2.16.1"}}"#
        );
        let secret = ResolvedEnv {
            unknown: [("DBCONFIG_PASSWORD".to_owned(), "from Secret s".to_owned())].into(),
            ..env.clone()
        };
        let composed = compose(
            Settings {
                text: "{}".into(),
                budget: Default::default(),
            },
            &secret,
        )
        .unwrap();
        assert!(
            composed.text.contains(
                r#""pipewarden.io/api-server-env-unknown":{"DBCONFIG_PASSWORD":"from Secret s"}"#
            ),
            "{}",
            composed.text
        );
        for key in [API_SERVER_ENV_KEY, API_SERVER_ENV_UNKNOWN_KEY] {
            let forged = Settings {
                text: format!(r#"{{"{key}":{{}}}}"#),
                budget: Default::default(),
            };
            assert!(compose(forged, &env).is_err(), "{key}");
        }
    }

    #[test]
    fn pinned_settings_are_read_only_with_their_digest() {
        let dir =
            std::env::temp_dir().join(format!("pipewarden-settings-pin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (path, pin_file) = (dir.join("settings.json"), dir.join("settings.sha256"));
        std::fs::write(&path, r#"{"notify":"all"}"#).unwrap();
        // What `sha256sum settings.json` prints for these bytes.
        let digest = format!("{:x}", Sha256::digest(br#"{"notify":"all"}"#));
        let check = |pin: SettingsPin| pin.check(&path, &std::fs::read(&path).unwrap());
        assert!(check(SettingsPin::None).is_ok());
        assert!(check(SettingsPin::Digest(format!("sha256:{digest}"))).is_ok());
        assert!(
            check(SettingsPin::Digest(digest.to_uppercase())).is_ok(),
            "bare hex, any case"
        );
        std::fs::write(&pin_file, format!("{digest}  settings.json\n")).unwrap();
        assert!(
            check(SettingsPin::File(pin_file.clone())).is_ok(),
            "sha256sum's output"
        );
        std::fs::write(&pin_file, "sha256:0123\n").unwrap();
        let error = check(SettingsPin::File(pin_file.clone())).unwrap_err();
        assert!(
            error.downcast_ref::<SettingsPinMismatch>().is_some(),
            "re-read: {error:#}"
        );
        let error = check(SettingsPin::Digest("sha256:00".into())).unwrap_err();
        assert!(
            format!("{error}").contains(&format!("have digest sha256:{digest}")),
            "{error}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
