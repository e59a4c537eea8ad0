//! Keyed cosign signatures on a policy artifact (cosign's tag scheme: the signature manifest
//! at `sha256-<hex>.sig` beside the artifact, one layer per signature holding the simple
//! signing payload, the signature in the layer's `dev.cosignproject.cosign/signature`
//! annotation). Verified with the ECDSA P-256 public key `cosign generate-key-pair` writes:
//! the payload must be signed by that key and name the manifest digest being loaded.

use base64::Engine as _;
use oci_client::manifest::OciImageManifest;
use ring::signature::{ECDSA_P256_SHA256_ASN1, UnparsedPublicKey};
use serde_json::Value;

pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
pub const PAYLOAD_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
const PAYLOAD_TYPE: &str = "cosign container image signature";

/// DER prefix of a SubjectPublicKeyInfo holding an uncompressed P-256 point (id-ecPublicKey,
/// prime256v1), the form of a cosign public key.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// A cosign public key (PEM `PUBLIC KEY`, ECDSA P-256).
#[derive(Debug, Clone)]
pub struct VerifyKey {
    point: Vec<u8>,
}

impl VerifyKey {
    pub fn from_pem(pem: &str) -> Result<Self, String> {
        let body: String = pem
            .lines()
            .map(str::trim)
            .skip_while(|line| *line != "-----BEGIN PUBLIC KEY-----")
            .skip(1)
            .take_while(|line| !line.starts_with("-----END"))
            .collect();
        if body.is_empty() {
            return Err("no PEM `PUBLIC KEY` block".to_owned());
        }
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .map_err(|e| format!("the PEM body is not base64: {e}"))?;
        let point = der
            .strip_prefix(&P256_SPKI_PREFIX[..])
            .filter(|point| point.len() == 65 && point[0] == 4)
            .ok_or("not an ECDSA P-256 public key (the kind `cosign generate-key-pair` writes)")?;
        Ok(VerifyKey {
            point: point.to_vec(),
        })
    }

    fn verifies(&self, payload: &[u8], signature: &[u8]) -> bool {
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &self.point)
            .verify(payload, signature)
            .is_ok()
    }
}

/// The tag cosign stores the signatures of `manifest_digest` under.
pub fn signature_tag(manifest_digest: &str) -> String {
    format!("{}.sig", manifest_digest.replacen(':', "-", 1))
}

/// One signature layer: its payload digest and base64 signature.
pub struct SignatureLayer {
    pub payload_digest: String,
    pub signature: String,
}

/// The signature layers a cosign signature manifest lists.
pub fn layers(signature_manifest: &[u8]) -> Result<Vec<SignatureLayer>, String> {
    let manifest: OciImageManifest = serde_json::from_slice(signature_manifest)
        .map_err(|e| format!("the signature manifest is not an image manifest: {e}"))?;
    Ok(manifest
        .layers
        .iter()
        .filter(|layer| layer.media_type == PAYLOAD_MEDIA_TYPE)
        .filter_map(|layer| {
            let signature = layer.annotations.as_ref()?.get(SIGNATURE_ANNOTATION)?;
            Some(SignatureLayer {
                payload_digest: layer.digest.clone(),
                signature: signature.clone(),
            })
        })
        .collect())
}

/// Whether `payload` is signed by `key` with `signature` (base64) and names `manifest_digest`
/// in `repository` (`registry/path`, as cosign records it in `identity.docker-reference`): a
/// signature made for another repository does not carry over to a copy pushed elsewhere.
pub fn verify(
    key: &VerifyKey,
    payload: &[u8],
    signature: &str,
    manifest_digest: &str,
    repository: &str,
) -> Result<(), String> {
    let signature = base64::engine::general_purpose::STANDARD
        .decode(signature.trim())
        .map_err(|_| "the signature is not base64".to_owned())?;
    if !key.verifies(payload, &signature) {
        return Err("the signature does not verify with the key".to_owned());
    }
    let payload: Value = serde_json::from_slice(payload)
        .map_err(|e| format!("the signed payload is not JSON: {e}"))?;
    let critical = &payload["critical"];
    if critical["type"] != PAYLOAD_TYPE {
        return Err(format!("the signed payload's type is {}", critical["type"]));
    }
    let signed = critical["image"]["docker-manifest-digest"]
        .as_str()
        .unwrap_or_default();
    if signed != manifest_digest {
        return Err(format!(
            "the signature is for {signed}, not {manifest_digest}"
        ));
    }
    let identity = critical["identity"]["docker-reference"]
        .as_str()
        .unwrap_or_default();
    if docker_hub(identity) != docker_hub(repository) {
        return Err(format!(
            "the signature was made for {identity:?}, not for {repository}"
        ));
    }
    Ok(())
}

/// Docker Hub's names for itself, as one.
fn docker_hub(repository: &str) -> &str {
    repository
        .strip_prefix("index.docker.io/")
        .or_else(|| repository.strip_prefix("docker.io/"))
        .unwrap_or(repository)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _};

    fn key_pair() -> (EcdsaKeyPair, VerifyKey) {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(pair.public_key().as_ref());
        let pem = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            base64::engine::general_purpose::STANDARD.encode(spki)
        );
        (pair, VerifyKey::from_pem(&pem).unwrap())
    }

    fn sign(pair: &EcdsaKeyPair, payload: &[u8]) -> String {
        let signature = pair.sign(&SystemRandom::new(), payload).unwrap();
        base64::engine::general_purpose::STANDARD.encode(signature.as_ref())
    }

    fn payload(digest: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({"critical": {
            "identity": {"docker-reference": "registry.example/policy"},
            "image": {"docker-manifest-digest": digest},
            "type": PAYLOAD_TYPE}, "optional": null}))
        .unwrap()
    }

    const REPO: &str = "registry.example/policy";

    #[test]
    fn a_signature_verifies_only_with_its_key_and_for_its_digest() {
        let (pair, key) = key_pair();
        let (_, other_key) = key_pair();
        let signed = payload("sha256:aa");
        let signature = sign(&pair, &signed);
        assert_eq!(verify(&key, &signed, &signature, "sha256:aa", REPO), Ok(()));
        assert!(
            verify(&other_key, &signed, &signature, "sha256:aa", REPO)
                .unwrap_err()
                .contains("key")
        );
        assert!(
            verify(&key, &signed, &signature, "sha256:bb", REPO)
                .unwrap_err()
                .contains("sha256:bb")
        );
        let mut tampered = signed.clone();
        tampered[10] ^= 1;
        assert!(verify(&key, &tampered, &signature, "sha256:aa", REPO).is_err());
    }

    #[test]
    fn a_signature_holds_only_for_the_repository_it_was_made_for() {
        let (pair, key) = key_pair();
        let signed = payload("sha256:aa");
        let signature = sign(&pair, &signed);
        let error = verify(
            &key,
            &signed,
            &signature,
            "sha256:aa",
            "mirror.example/policy",
        )
        .unwrap_err();
        assert!(
            error.contains("made for \"registry.example/policy\", not for mirror.example/policy"),
            "{error}"
        );
        let hub = serde_json::to_vec(&serde_json::json!({"critical": {
            "identity": {"docker-reference": "index.docker.io/team/policy"},
            "image": {"docker-manifest-digest": "sha256:aa"},
            "type": PAYLOAD_TYPE}}))
        .unwrap();
        let signature = sign(&pair, &hub);
        assert_eq!(
            verify(&key, &hub, &signature, "sha256:aa", "docker.io/team/policy"),
            Ok(()),
            "Docker Hub by either of its names"
        );
    }

    #[test]
    fn keys_other_than_p256_public_keys_are_refused() {
        assert!(VerifyKey::from_pem("not a key").is_err());
        let rsa_like =
            "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOC\n-----END PUBLIC KEY-----";
        assert!(VerifyKey::from_pem(rsa_like).unwrap_err().contains("P-256"));
        assert_eq!(signature_tag("sha256:abc"), "sha256-abc.sig");
    }
}
