//! Registry credentials from a Docker config file: `~/.docker/config.json`, or a Kubernetes
//! pull secret mounted as a file (`.dockerconfigjson`, the same format; the legacy
//! `.dockercfg`, the `auths` map alone, is read too). Credential helpers are not run.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde_json::Value;

use super::OciError;

/// The file to read: the one given, else `$DOCKER_CONFIG/config.json`, else
/// `~/.docker/config.json`, when it exists.
pub fn default_file(given: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = given {
        return Some(path.to_path_buf());
    }
    let dir = std::env::var_os("DOCKER_CONFIG")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".docker")))?;
    Some(dir.join("config.json")).filter(|path| path.is_file())
}

/// The credentials for `registry` in the file, anonymous when it names none.
pub fn for_registry(file: Option<&Path>, registry: &str) -> Result<RegistryAuth, OciError> {
    let Some(file) = file else {
        return Ok(RegistryAuth::Anonymous);
    };
    let bad = |why: String| OciError::Auth {
        file: file.to_path_buf(),
        why,
    };
    let text = std::fs::read_to_string(file).map_err(|e| bad(e.to_string()))?;
    let config: Value = serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    lookup(&config, registry).map_err(bad)
}

/// Finds `registry` in a parsed config; pure, for tests.
pub fn lookup(config: &Value, registry: &str) -> Result<RegistryAuth, String> {
    let auths = config.get("auths").unwrap_or(config);
    let Some(auths) = auths.as_object() else {
        return Err("no `auths` map".to_owned());
    };
    let Some(entry) = auths
        .iter()
        .find(|(key, _)| normalize(key) == normalize(registry))
        .map(|(_, entry)| entry)
    else {
        return Ok(RegistryAuth::Anonymous);
    };
    if let Some(token) = entry.get("registrytoken").and_then(Value::as_str) {
        return Ok(RegistryAuth::Bearer(token.to_owned()));
    }
    let field = |name: &str| {
        entry
            .get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    if let (Some(user), Some(password)) = (field("username"), field("password")) {
        return Ok(RegistryAuth::Basic(user.to_owned(), password.to_owned()));
    }
    let encoded =
        field("auth").ok_or_else(|| format!("the entry for {registry} has no credentials"))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| format!("the `auth` for {registry} is not base64 of user:password"))?;
    let (user, password) = decoded
        .split_once(':')
        .ok_or_else(|| format!("the `auth` for {registry} is not user:password"))?;
    Ok(RegistryAuth::Basic(user.to_owned(), password.to_owned()))
}

/// `https://index.docker.io/v1/` and `index.docker.io` name the same registry.
fn normalize(key: &str) -> &str {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    key.split('/').next().unwrap_or(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn basic(auth: RegistryAuth) -> Option<(String, String)> {
        match auth {
            RegistryAuth::Basic(user, password) => Some((user, password)),
            _ => None,
        }
    }

    #[test]
    fn a_docker_config_and_a_pull_secret_give_the_same_credentials() {
        let encoded = base64::engine::general_purpose::STANDARD.encode("robot:s3cret");
        let docker = json!({"auths": {"https://registry.example:5000/v1/": {"auth": encoded}}});
        let legacy = json!({"registry.example:5000": {"username": "robot", "password": "s3cret"}});
        for config in [docker, legacy] {
            let found = basic(lookup(&config, "registry.example:5000").unwrap());
            assert_eq!(found, Some(("robot".into(), "s3cret".into())));
        }
    }

    #[test]
    fn an_unlisted_registry_is_anonymous_and_garbage_is_an_error() {
        let config = json!({"auths": {"other.example": {"auth": "bm9wZQ=="}}});
        assert!(matches!(
            lookup(&config, "registry.example").unwrap(),
            RegistryAuth::Anonymous
        ));
        let error = lookup(&config, "other.example").unwrap_err();
        assert!(error.contains("user:password"), "{error}");
    }
}
