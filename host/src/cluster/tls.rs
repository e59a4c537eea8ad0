//! TLS clients that trust a CA bundle given by flag, for the endpoints the controller calls
//! (KFP's API server, the exit webhook).

use std::path::Path;

use anyhow::{Context as _, bail};

/// A TLS client trusting only the PEM certificates in `path` (a CA bundle, e.g. the `ca.crt`
/// of a cert-manager certificate); `flag` names where the path came from in errors.
pub fn trusting(path: &Path, flag: &str) -> anyhow::Result<rustls::ClientConfig> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;
    let what = || format!("{flag} {}", path.display());
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).with_context(what)? {
        roots.add(cert.with_context(what)?).with_context(what)?;
    }
    if roots.is_empty() {
        bail!("{}: no PEM certificate in it", what());
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS versions")?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
