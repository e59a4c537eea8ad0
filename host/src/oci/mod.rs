//! Policies as OCI artifacts (the CNCF Wasm OCI layout: one `application/wasm` layer, config
//! `application/vnd.wasm.config.v0+json`): pushed by `pipewarden policy push`, pulled by
//! digest for `--policy oci://...`, verified, and cached on disk so a restart needs no
//! registry.

pub mod auth;
pub mod cache;
mod client;
pub mod reference;
pub mod signature;

use std::path::PathBuf;

pub use client::{FetchOptions, Fetched, fetch, push, resolve_tag};
pub use reference::{PolicyRef, is_oci};
pub use signature::VerifyKey;

pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";

/// Why a policy reference could not be used; every message names the reference.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    #[error("policy reference {reference} is malformed: {why}")]
    BadReference { reference: String, why: String },
    #[error(
        "policy reference {reference} has a tag but no digest: pin it (@sha256:...) or allow tags with --policy-allow-tag"
    )]
    TagNotPinned { reference: String },
    #[error("registry credentials {file}: {why}")]
    Auth { file: PathBuf, why: String },
    #[error("policy {reference}: registry {registry} cannot be reached (and {cached}): {detail}")]
    Unreachable {
        reference: String,
        registry: String,
        /// What the cache held instead: nothing, or a layer that failed its digest.
        cached: String,
        detail: String,
    },
    #[error("policy {reference}: no such manifest in the registry")]
    ManifestNotFound { reference: String },
    #[error("policy {reference}: the registry refused the credentials: {detail}")]
    Unauthorized { reference: String, detail: String },
    #[error("policy {reference}: {what} has media type {found}, expected {expected}")]
    WrongMediaType {
        reference: String,
        what: &'static str,
        found: String,
        expected: String,
    },
    #[error("policy {reference}: {what} digest mismatch: expected {expected}, got {found}")]
    DigestMismatch {
        reference: String,
        what: &'static str,
        expected: String,
        found: String,
    },
    #[error("policy {reference}: the wasm layer is {size} bytes, over the {limit}-byte limit")]
    TooLarge {
        reference: String,
        size: u64,
        limit: u64,
    },
    #[error("policy {reference}: {detail}")]
    Registry { reference: String, detail: String },
    #[error("policy {reference} is not signed: no cosign signature at {signature_tag}")]
    Unsigned {
        reference: String,
        signature_tag: String,
    },
    #[error(
        "policy {reference} is signed only in cosign's bundle format (an OCI referrer of type \
         {artifact_type}, cosign v3's default), which pipewarden does not verify; sign it in \
         the classic format as well: cosign sign --new-bundle-format=false \
         --use-signing-config=false --key cosign.key <reference>"
    )]
    BundleOnly {
        reference: String,
        artifact_type: String,
    },
    #[error("policy {reference}: no signature verifies with the key: {why}")]
    BadSignature { reference: String, why: String },
}

/// Runs a registry call to completion from synchronous code, on a thread of its own (so it
/// works both inside and outside a tokio runtime; policy loads are rare).
pub fn blocking<T: Send>(work: impl std::future::Future<Output = T> + Send) -> T {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a current-thread runtime builds")
                    .block_on(work)
            })
            .join()
            .expect("the registry call does not panic")
    })
}
