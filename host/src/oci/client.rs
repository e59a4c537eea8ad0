//! Talking to the registry: pull a policy by digest (through the cache), push one, resolve a
//! tag. Built on the `oci-client` crate; every error is mapped to an [`OciError`] naming the
//! reference.

use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use oci_client::Client;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;

use super::cache::{OciCache, sha256};
use super::signature::{self, VerifyKey};
use super::{
    MANIFEST_MEDIA_TYPE, OciError, PolicyRef, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE, auth,
};

#[derive(Debug, Clone, Default)]
pub struct FetchOptions {
    /// Where pulled policies are kept (`<dir>/oci`); none means pull every time.
    pub cache_dir: Option<PathBuf>,
    /// A Docker config file or mounted pull secret.
    pub auth_file: Option<PathBuf>,
    /// Accept a reference with a tag and no digest (resolved at each load).
    pub allow_tag: bool,
    /// The largest wasm layer accepted, checked before and while downloading.
    pub max_layer_bytes: u64,
    /// Refuse the artifact unless a cosign signature by this key names its manifest digest.
    pub verify_key: Option<VerifyKey>,
}

/// The largest signature payload read (a simple signing payload is a few hundred bytes).
const MAX_PAYLOAD_BYTES: u64 = 64 << 10;

/// A policy pulled (or read from the cache) and checked against its digests.
#[derive(Debug)]
pub struct Fetched {
    pub wasm: Vec<u8>,
    /// The reference with the manifest digest it was pulled by.
    pub reference: PolicyRef,
    /// The digest `wasm` must have. Pulled bytes were checked against it; bytes read from
    /// the cache must be checked by whoever uses them (`PolicyArgs` pins the load to it).
    pub layer_digest: String,
    pub from_cache: bool,
}

fn client_for(reference: &PolicyRef) -> Client {
    // reqwest is built without a default TLS provider: ring, as kube uses. A second install
    // (already done) is fine to ignore.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let protocol = if reference.is_loopback() {
        ClientProtocol::HttpsExcept(vec![reference.registry.clone()])
    } else {
        ClientProtocol::Https
    };
    Client::new(ClientConfig {
        protocol,
        connect_timeout: Some(Duration::from_secs(10)),
        read_timeout: Some(Duration::from_secs(60)),
        user_agent: concat!("pipewarden/", env!("CARGO_PKG_VERSION")),
        ..ClientConfig::default()
    })
}

fn auth_for(
    reference: &PolicyRef,
    file: Option<&std::path::Path>,
) -> Result<RegistryAuth, OciError> {
    auth::for_registry(auth::default_file(file).as_deref(), &reference.registry)
}

/// Maps a client error to one naming the reference.
fn classify(reference: &PolicyRef, error: OciDistributionError) -> OciError {
    let reference_text = reference.to_string();
    let missing = |code: &OciErrorCode| {
        matches!(
            code,
            OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown
        )
    };
    match error {
        OciDistributionError::ImageManifestNotFoundError(_) => OciError::ManifestNotFound {
            reference: reference_text,
        },
        OciDistributionError::RegistryError { ref envelope, .. }
            if envelope.errors.iter().any(|e| missing(&e.code)) =>
        {
            OciError::ManifestNotFound {
                reference: reference_text,
            }
        }
        OciDistributionError::ServerError { code: 404, .. } => OciError::ManifestNotFound {
            reference: reference_text,
        },
        OciDistributionError::UnauthorizedError { .. }
        | OciDistributionError::AuthenticationFailure(_) => OciError::Unauthorized {
            reference: reference_text,
            detail: error.to_string(),
        },
        OciDistributionError::RequestError(ref request)
            if request.is_connect() || request.is_timeout() =>
        {
            OciError::Unreachable {
                reference: reference_text,
                registry: reference.registry.clone(),
                cached: NOT_CACHED.to_owned(),
                detail: error_chain(&error),
            }
        }
        other => OciError::Registry {
            reference: reference_text,
            detail: error_chain(&other),
        },
    }
}

const NOT_CACHED: &str = "the policy is not cached";

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Checks a manifest is a CNCF Wasm artifact with one wasm layer within the size limit;
/// returns that layer.
fn wasm_layer(
    reference: &PolicyRef,
    manifest: &[u8],
    limit: u64,
) -> Result<OciDescriptor, OciError> {
    let reference_text = reference.to_string();
    let manifest: OciImageManifest =
        serde_json::from_slice(manifest).map_err(|e| OciError::Registry {
            reference: reference_text.clone(),
            detail: format!("the manifest is not an OCI image manifest: {e}"),
        })?;
    let wrong = |what: &'static str, found: &str, expected: &str| OciError::WrongMediaType {
        reference: reference_text.clone(),
        what,
        found: found.to_owned(),
        expected: expected.to_owned(),
    };
    if let Some(media_type) = &manifest.media_type
        && media_type != MANIFEST_MEDIA_TYPE
    {
        return Err(wrong("the manifest", media_type, MANIFEST_MEDIA_TYPE));
    }
    if manifest.config.media_type != WASM_CONFIG_MEDIA_TYPE {
        return Err(wrong(
            "the config",
            &manifest.config.media_type,
            WASM_CONFIG_MEDIA_TYPE,
        ));
    }
    let [layer] = manifest.layers.as_slice() else {
        return Err(OciError::Registry {
            reference: reference_text,
            detail: format!(
                "{} layers, a policy artifact has exactly one",
                manifest.layers.len()
            ),
        });
    };
    if layer.media_type != WASM_LAYER_MEDIA_TYPE {
        return Err(wrong("the layer", &layer.media_type, WASM_LAYER_MEDIA_TYPE));
    }
    let size = u64::try_from(layer.size).unwrap_or(u64::MAX);
    if size > limit {
        return Err(OciError::TooLarge {
            reference: reference_text,
            size,
            limit,
        });
    }
    Ok(layer.clone())
}

/// Pulls the policy `reference` names, from the cache when its digest is there.
pub async fn fetch(reference: &PolicyRef, options: &FetchOptions) -> Result<Fetched, OciError> {
    if reference.digest.is_none() && !options.allow_tag {
        return Err(OciError::TagNotPinned {
            reference: reference.to_string(),
        });
    }
    let cache = options.cache_dir.as_deref().map(OciCache::new);
    let mut damaged = None;
    if let (Some(cache), Some(digest)) = (&cache, &reference.digest)
        && let Some(manifest) = cache.get("manifests", digest)
    {
        let layer = wasm_layer(reference, &manifest, options.max_layer_bytes)?;
        let verified = match &options.verify_key {
            None => true,
            Some(key) => verify_cached(cache, reference, digest, key).is_ok(),
        };
        // Checked against its digest here: a damaged blob is a miss and is pulled again,
        // rather than a load that fails on every start.
        if verified && let Some(wasm) = cache.get("blobs", &layer.digest) {
            return Ok(Fetched {
                wasm,
                reference: reference.clone(),
                layer_digest: layer.digest,
                from_cache: true,
            });
        }
        if verified {
            damaged = Some(layer.digest);
        }
    }
    // Offline, the error says the cache held a damaged copy, not that it held nothing.
    let classify = |reference: &PolicyRef, error: OciDistributionError| match (
        classify(reference, error),
        &damaged,
    ) {
        (
            OciError::Unreachable {
                reference,
                registry,
                detail,
                ..
            },
            Some(layer),
        ) => OciError::Unreachable {
            reference,
            registry,
            cached: format!("its cached layer {layer} is missing or damaged, so not loaded"),
            detail,
        },
        (other, _) => other,
    };

    let client = client_for(reference);
    let auth = auth_for(reference, options.auth_file.as_deref())?;
    let target = reference.client_reference();
    let (manifest, _) = client
        .pull_manifest_raw(&target, &auth, &[MANIFEST_MEDIA_TYPE])
        .await
        .map_err(|e| classify(reference, e))?;
    let manifest_digest = sha256(&manifest);
    if let Some(expected) = &reference.digest
        && *expected != manifest_digest
    {
        return Err(OciError::DigestMismatch {
            reference: reference.to_string(),
            what: "manifest",
            expected: expected.clone(),
            found: manifest_digest,
        });
    }
    let pinned = reference.pinned(&manifest_digest);
    let layer = wasm_layer(&pinned, &manifest, options.max_layer_bytes)?;
    if let Some(key) = &options.verify_key {
        verify_remote(
            &client,
            &auth,
            &pinned,
            &manifest_digest,
            key,
            cache.as_ref(),
        )
        .await?;
    }

    let mut sink = Bounded {
        bytes: Vec::new(),
        limit: options.max_layer_bytes,
    };
    let pulled = client
        .pull_blob(&pinned.client_reference(), &layer, &mut sink)
        .await;
    if let Err(error) = pulled {
        if sink.bytes.len() as u64 >= options.max_layer_bytes {
            return Err(OciError::TooLarge {
                reference: pinned.to_string(),
                size: sink.bytes.len() as u64,
                limit: options.max_layer_bytes,
            });
        }
        // The client checks the blob against the layer digest as it streams.
        if matches!(error, OciDistributionError::DigestError(_)) {
            return Err(OciError::DigestMismatch {
                reference: pinned.to_string(),
                what: "wasm layer",
                expected: layer.digest.clone(),
                found: format!("other bytes ({})", error_chain(&error)),
            });
        }
        return Err(classify(&pinned, error));
    }
    let wasm = sink.bytes;
    let found = sha256(&wasm);
    if found != layer.digest {
        return Err(OciError::DigestMismatch {
            reference: pinned.to_string(),
            what: "wasm layer",
            expected: layer.digest,
            found,
        });
    }
    if let Some(cache) = &cache {
        cache.put("blobs", &wasm);
        cache.put("manifests", &manifest);
    }
    Ok(Fetched {
        wasm,
        reference: pinned,
        layer_digest: layer.digest,
        from_cache: false,
    })
}

/// Checks the signatures kept in the cache at the last pull, again, with `key`.
fn verify_cached(
    cache: &OciCache,
    reference: &PolicyRef,
    manifest_digest: &str,
    key: &VerifyKey,
) -> Result<(), OciError> {
    let missing = || OciError::Registry {
        reference: reference.to_string(),
        detail: "no cached signature".to_owned(),
    };
    let index = cache
        .get_named("signatures", manifest_digest)
        .ok_or_else(missing)?;
    let signature_digest = String::from_utf8(index).map_err(|_| missing())?;
    let signature_manifest = cache
        .get("manifests", &signature_digest)
        .ok_or_else(missing)?;
    let layers = signature::layers(&signature_manifest).map_err(|_| missing())?;
    let verified = layers.iter().any(|layer| {
        cache
            .get("blobs", &layer.payload_digest)
            .is_some_and(|payload| {
                signature::verify(
                    key,
                    &payload,
                    &layer.signature,
                    manifest_digest,
                    &reference.repository_name(),
                )
                .is_ok()
            })
    });
    if verified { Ok(()) } else { Err(missing()) }
}

/// The artifact type of a Sigstore bundle attached as an OCI referrer (cosign v3's default).
const SIGSTORE_BUNDLE_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

/// Referrers looked at for a bundle; a policy carries a handful at most.
const MAX_REFERRERS: usize = 16;

/// When a policy has no classic `.sig` signature: the error saying it carries a Sigstore bundle
/// instead, if one of its OCI referrers is one (None when none is, or the registry cannot say).
/// Each referrer's own manifest is read: the referrers tag schema's index may give the config's
/// media type as the artifact type (cosign 2.6 writes it so).
async fn bundle_only(client: &Client, auth: &RegistryAuth, pinned: &PolicyRef) -> Option<OciError> {
    let referrers = client
        .pull_referrers(&pinned.client_reference(), None)
        .await
        .ok()?;
    for entry in referrers.manifests.iter().take(MAX_REFERRERS) {
        let referrer = PolicyRef {
            tag: None,
            digest: Some(entry.digest.clone()),
            ..pinned.clone()
        };
        let Ok((manifest, _)) = client
            .pull_manifest_raw(&referrer.client_reference(), auth, &[MANIFEST_MEDIA_TYPE])
            .await
        else {
            continue;
        };
        let Ok(manifest) = serde_json::from_slice::<serde_json::Value>(&manifest) else {
            continue;
        };
        let is_bundle = |value: &serde_json::Value| value.as_str() == Some(SIGSTORE_BUNDLE_TYPE);
        let layers = manifest["layers"].as_array().into_iter().flatten();
        if is_bundle(&manifest["artifactType"])
            || layers
                .into_iter()
                .any(|layer| is_bundle(&layer["mediaType"]))
        {
            return Some(OciError::BundleOnly {
                reference: pinned.to_string(),
                artifact_type: SIGSTORE_BUNDLE_TYPE.to_owned(),
            });
        }
    }
    None
}

/// Fetches the cosign signatures of `manifest_digest` and requires one to verify with `key`;
/// keeps what verified in the cache, so an offline restart can check it again.
async fn verify_remote(
    client: &Client,
    auth: &RegistryAuth,
    pinned: &PolicyRef,
    manifest_digest: &str,
    key: &VerifyKey,
    cache: Option<&OciCache>,
) -> Result<(), OciError> {
    let tag = signature::signature_tag(manifest_digest);
    let signature_ref = PolicyRef {
        tag: Some(tag.clone()),
        digest: None,
        ..pinned.clone()
    };
    let accepted = [
        MANIFEST_MEDIA_TYPE,
        "application/vnd.docker.distribution.manifest.v2+json",
    ];
    let (signature_manifest, _) = match client
        .pull_manifest_raw(&signature_ref.client_reference(), auth, &accepted)
        .await
        .map_err(|e| classify(pinned, e))
    {
        Err(OciError::ManifestNotFound { .. }) => {
            return Err(bundle_only(client, auth, pinned)
                .await
                .unwrap_or(OciError::Unsigned {
                    reference: pinned.to_string(),
                    signature_tag: tag,
                }));
        }
        other => other?,
    };
    let bad = |why: String| OciError::BadSignature {
        reference: pinned.to_string(),
        why,
    };
    let layers = signature::layers(&signature_manifest).map_err(bad)?;
    if layers.is_empty() {
        return Err(OciError::Unsigned {
            reference: pinned.to_string(),
            signature_tag: tag,
        });
    }
    let mut reasons = Vec::new();
    for layer in &layers {
        let mut sink = Bounded {
            bytes: Vec::new(),
            limit: MAX_PAYLOAD_BYTES,
        };
        let pulled = client
            .pull_blob(
                &signature_ref.client_reference(),
                layer.payload_digest.as_str(),
                &mut sink,
            )
            .await;
        if let Err(error) = pulled {
            reasons.push(format!(
                "payload {}: {}",
                layer.payload_digest,
                error_chain(&error)
            ));
            continue;
        }
        if sha256(&sink.bytes) != layer.payload_digest {
            reasons.push(format!(
                "payload {} does not match its digest",
                layer.payload_digest
            ));
            continue;
        }
        match signature::verify(
            key,
            &sink.bytes,
            &layer.signature,
            manifest_digest,
            &pinned.repository_name(),
        ) {
            Ok(()) => {
                if let Some(cache) = cache {
                    cache.put("blobs", &sink.bytes);
                    cache.put("manifests", &signature_manifest);
                    cache.put_named(
                        "signatures",
                        manifest_digest,
                        sha256(&signature_manifest).as_bytes(),
                    );
                }
                return Ok(());
            }
            Err(why) => reasons.push(why),
        }
    }
    Err(bad(reasons.join("; ")))
}

/// The digest a tag points to now (a HEAD request).
pub async fn resolve_tag(
    reference: &PolicyRef,
    auth_file: Option<&std::path::Path>,
) -> Result<String, OciError> {
    let client = client_for(reference);
    let auth = auth_for(reference, auth_file)?;
    client
        .fetch_manifest_digest(&reference.client_reference(), &auth)
        .await
        .map_err(|e| classify(reference, e))
}

/// Pushes `wasm` as a CNCF Wasm artifact to `reference` (which names a tag); returns the
/// reference pinned to the manifest digest.
pub async fn push(
    wasm: &[u8],
    reference: &PolicyRef,
    auth_file: Option<&std::path::Path>,
) -> Result<PolicyRef, OciError> {
    let client = client_for(reference);
    let auth = auth_for(reference, auth_file)?;
    let target = reference.client_reference();
    let fail = |e| classify(reference, e);
    client
        .store_auth_if_needed(&reference.registry, &auth)
        .await;
    client
        .auth(&target, &auth, oci_client::RegistryOperation::Push)
        .await
        .map_err(fail)?;

    let layer_digest = sha256(wasm);
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer_digest],
    }))
    .expect("config serializes");
    let config_digest = sha256(&config);
    client
        .push_blob(&target, wasm.to_vec(), &layer_digest)
        .await
        .map_err(fail)?;
    client
        .push_blob(&target, config.clone(), &config_digest)
        .await
        .map_err(fail)?;
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "artifactType": WASM_CONFIG_MEDIA_TYPE,
        "config": {"mediaType": WASM_CONFIG_MEDIA_TYPE, "digest": config_digest, "size": config.len()},
        "layers": [{"mediaType": WASM_LAYER_MEDIA_TYPE, "digest": layer_digest, "size": wasm.len()}],
    }))
    .expect("manifest serializes");
    let manifest_digest = sha256(&manifest);
    client
        .push_manifest_raw(
            &target,
            manifest,
            http::HeaderValue::from_static(MANIFEST_MEDIA_TYPE),
        )
        .await
        .map_err(fail)?;
    Ok(reference.pinned(&manifest_digest))
}

/// A byte sink that refuses to grow past `limit`: a registry cannot make us hold more than
/// the largest policy we accept, whatever size its manifest announced.
struct Bounded {
    bytes: Vec<u8>,
    limit: u64,
}

impl tokio::io::AsyncWrite for Bounded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if (self.bytes.len() + buf.len()) as u64 > self.limit {
            let limit = self.limit as usize;
            self.bytes.resize(limit, 0);
            return Poll::Ready(Err(std::io::Error::other("layer larger than the limit")));
        }
        self.bytes.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cached manifest whose blob was damaged on disk: the fetch does not hand the damaged
    /// bytes on (which the loader would refuse on every start) but goes to the registry for
    /// them, here one that cannot be reached.
    #[tokio::test]
    async fn a_damaged_cached_blob_is_a_miss_and_is_pulled_again() {
        let dir =
            std::env::temp_dir().join(format!("pipewarden-oci-damaged-{}", std::process::id()));
        let cache = OciCache::new(&dir);
        let wasm = b"\0asm policy bytes".to_vec();
        let layer_digest = sha256(&wasm);
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST_MEDIA_TYPE,
            "config": {"mediaType": WASM_CONFIG_MEDIA_TYPE, "digest": sha256(b"{}"), "size": 2},
            "layers": [{"mediaType": WASM_LAYER_MEDIA_TYPE, "digest": layer_digest,
                        "size": wasm.len()}],
        })
        .to_string()
        .into_bytes();
        cache.put("manifests", &manifest);
        cache.put("blobs", &wasm);
        let reference = PolicyRef::parse(&format!(
            "oci://127.0.0.1:9/policies/p@{}",
            sha256(&manifest)
        ))
        .unwrap();
        let options = FetchOptions {
            cache_dir: Some(dir.clone()),
            max_layer_bytes: 1 << 20,
            ..FetchOptions::default()
        };
        let fetched = fetch(&reference, &options).await.unwrap();
        assert!(
            fetched.from_cache && fetched.wasm == wasm,
            "intact: from the cache"
        );
        let blob = dir
            .join("oci/blobs/sha256")
            .join(layer_digest.trim_start_matches("sha256:"));
        std::fs::write(&blob, b"damaged").unwrap();
        let error = fetch(&reference, &options).await.unwrap_err();
        assert!(
            matches!(error, OciError::Unreachable { .. })
                && error.to_string().contains(&layer_digest)
                && error.to_string().contains("damaged"),
            "pulled again, the damage named: {error}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
