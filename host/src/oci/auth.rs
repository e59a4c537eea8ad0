//! Registry credentials from a Docker config file: `~/.docker/config.json`, or a Kubernetes
//! pull secret mounted as a file (`.dockerconfigjson`, the same format; the legacy
//! `.dockercfg`, the `auths` map alone, is read too). Credential helpers are run as Docker
//! runs them: `credHelpers` names one per registry, `credsStore` one for every registry whose
//! `auths` entry holds no credentials (Docker leaves an empty entry there); the helper is
//! `docker-credential-<name> get`, given the registry on stdin, answering JSON.

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
    match helper_for(&config, registry) {
        Some(helper) => run_helper(
            std::path::Path::new(&format!("docker-credential-{helper}")),
            registry,
        )
        .map_err(bad),
        None => lookup(&config, registry).map_err(bad),
    }
}

/// The credential helper for `registry`: its `credHelpers` entry, else `credsStore` unless
/// the `auths` entry holds credentials of its own. Pure, for tests.
pub fn helper_for(config: &Value, registry: &str) -> Option<String> {
    fn named<'a>(map: Option<&'a Value>, registry: &str) -> Option<&'a Value> {
        map?.as_object()?
            .iter()
            .find(|(key, _)| normalize(key) == normalize(registry))
            .map(|(_, value)| value)
    }
    if let Some(helper) = named(config.get("credHelpers"), registry).and_then(Value::as_str) {
        return Some(helper.to_owned());
    }
    let store = config.get("credsStore").and_then(Value::as_str)?;
    let inline = named(config.get("auths"), registry)
        .and_then(Value::as_object)
        .is_some_and(|entry| {
            ["auth", "username", "registrytoken", "identitytoken"]
                .iter()
                .any(|key| {
                    entry
                        .get(*key)
                        .and_then(Value::as_str)
                        .is_some_and(|v| !v.is_empty())
                })
        });
    (!inline && !store.is_empty()).then(|| store.to_owned())
}

/// Asks `program` (`docker-credential-<name>`) for `registry`'s credentials. Not found is
/// anonymous, as with Docker; a helper that cannot be run or answers garbage is an error.
pub fn run_helper(program: &Path, registry: &str) -> Result<RegistryAuth, String> {
    let name = program.display();
    let mut child = std::process::Command::new(program)
        .arg("get")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run the credential helper {name}: {e}"))?;
    if let Some(stdin) = child.stdin.take() {
        send_request(stdin, registry).map_err(|e| format!("{name}: {e}"))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|e| format!("{name}: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        if stdout.contains("credentials not found") {
            return Ok(RegistryAuth::Anonymous);
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!(
            "the credential helper {name} failed for {registry}: {}",
            format!("{} {}", stdout.trim(), stderr.trim()).trim()
        ));
    }
    let answer: Value = serde_json::from_str(&stdout)
        .map_err(|e| format!("the credential helper {name} answered no JSON: {e}"))?;
    let field = |key: &str| answer.get(key).and_then(Value::as_str).unwrap_or_default();
    match (field("Username"), field("Secret")) {
        (_, "") => Err(format!(
            "the credential helper {name} gave no secret for {registry}"
        )),
        // Docker's marker for an identity token in place of a password.
        ("<token>", token) => Ok(RegistryAuth::Bearer(token.to_owned())),
        (user, secret) => Ok(RegistryAuth::Basic(user.to_owned(), secret.to_owned())),
    }
}

/// Writes the registry to a helper's stdin. A helper may exit without reading it (a closed
/// pipe); its exit status and output then decide.
fn send_request(mut stdin: impl std::io::Write, registry: &str) -> std::io::Result<()> {
    match stdin.write_all(registry.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
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
    fn credential_helpers_are_chosen_as_docker_chooses_them() {
        let config = json!({
            "credsStore": "desktop",
            "credHelpers": {"gcr.example": "gcloud"},
            "auths": {"registry.example": {}, "inline.example": {"auth": "cm9ib3Q6cw=="}}
        });
        assert_eq!(
            helper_for(&config, "gcr.example").as_deref(),
            Some("gcloud")
        );
        assert_eq!(
            helper_for(&config, "registry.example").as_deref(),
            Some("desktop")
        );
        assert_eq!(
            helper_for(&config, "unlisted.example").as_deref(),
            Some("desktop")
        );
        assert_eq!(
            helper_for(&config, "inline.example"),
            None,
            "its own credentials"
        );
        assert_eq!(helper_for(&json!({"auths": {}}), "registry.example"), None);
    }

    /// A helper speaking Docker's protocol: the registry on stdin, JSON on stdout.
    fn helper(dir: &Path, script: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        let path = dir.join("docker-credential-test");
        std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn a_helper_is_asked_for_the_registry_and_its_answer_used() {
        let dir =
            std::env::temp_dir().join(format!("pipewarden-cred-helper-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let answers = helper(
            &dir,
            r#"[ "$1" = get ] || exit 3
read registry
case "$registry" in
  registry.example) echo '{"ServerURL":"registry.example","Username":"robot","Secret":"s3cret"}' ;;
  token.example) echo '{"Username":"<token>","Secret":"refresh"}' ;;
  *) echo 'credentials not found in native keychain'; exit 1 ;;
esac"#,
        );
        assert_eq!(
            basic(run_helper(&answers, "registry.example").unwrap()),
            Some(("robot".into(), "s3cret".into()))
        );
        assert!(matches!(
            run_helper(&answers, "token.example").unwrap(),
            RegistryAuth::Bearer(token) if token == "refresh"
        ));
        assert!(matches!(
            run_helper(&answers, "other.example").unwrap(),
            RegistryAuth::Anonymous
        ));
        let broken = helper(&dir, "echo 'no keychain here' >&2; exit 1");
        let error = run_helper(&broken, "registry.example").unwrap_err();
        assert!(error.contains("no keychain here"), "{error}");
        let error = run_helper(&dir.join("docker-credential-missing"), "r.example").unwrap_err();
        assert!(
            error.contains("cannot run the credential helper"),
            "{error}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A helper that exited before reading: the write meets a closed pipe (seen in CI as
    /// "Broken pipe" instead of the helper's own error).
    struct ClosedPipe;
    impl std::io::Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_helper_that_does_not_read_its_input_is_judged_by_its_answer() {
        assert!(send_request(ClosedPipe, "registry.example").is_ok());
        let mut written = Vec::new();
        send_request(&mut written, "registry.example").unwrap();
        assert_eq!(written, b"registry.example");
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
