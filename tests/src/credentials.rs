//! Files the apiserver and its clients authenticate with: tokens, the service-account key, kubeconfigs.

use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde_json::json;

/// A random bearer token (128 bits, hex).
pub fn random_token() -> Result<String> {
    let mut bytes = [0u8; 16];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading /dev/urandom")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Static token file giving `token` to user `admin` in `system:masters`.
pub fn write_admin_token_file(dir: &Path, token: &str) -> Result<PathBuf> {
    let path = dir.join("tokens.csv");
    fs::write(&path, format!("{token},admin,admin,system:masters\n"))?;
    Ok(path)
}

/// An EC P-256 key for signing service-account tokens: (private key PKCS#8, public key PKIX).
/// Two files because the apiserver reads public keys only from SEC1 or PKIX blocks.
pub fn write_service_account_keys(dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
    let private = dir.join("sa.key");
    let public = dir.join("sa.pub");
    fs::write(&private, key.serialize_pem())?;
    fs::write(&public, key.public_key_pem())?;
    Ok((private, public))
}

/// Writes a kubeconfig for `server` that trusts the PEM file `ca` and sends `token` as `user`.
pub fn write_kubeconfig(
    path: &Path,
    server: &str,
    ca: &Path,
    user: &str,
    token: &str,
) -> Result<()> {
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{ "name": "pipewarden", "cluster": {
            "server": server,
            "certificate-authority": ca,
        }}],
        "users": [{ "name": user, "user": { "token": token } }],
        "contexts": [{ "name": user, "context": {
            "cluster": "pipewarden",
            "user": user,
            "namespace": "default",
        }}],
        "current-context": user,
    });
    fs::write(path, serde_yaml::to_string(&config)?)
        .with_context(|| format!("writing {}", path.display()))
}
