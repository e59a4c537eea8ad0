//! `oci://REGISTRY/REPOSITORY[:TAG][@sha256:HEX]`: where a policy artifact lives.

use std::fmt;

use super::OciError;

/// A parsed `oci://` policy reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRef {
    pub registry: String,
    pub repository: String,
    pub tag: Option<String>,
    /// `sha256:<64 hex>`, lower case.
    pub digest: Option<String>,
}

pub const SCHEME: &str = "oci://";

/// Whether a `--policy` value names an OCI artifact rather than a file.
pub fn is_oci(value: &str) -> bool {
    value.starts_with(SCHEME)
}

impl PolicyRef {
    pub fn parse(text: &str) -> Result<Self, OciError> {
        let bad = |why: &str| OciError::BadReference {
            reference: text.to_owned(),
            why: why.to_owned(),
        };
        let rest = text
            .strip_prefix(SCHEME)
            .ok_or_else(|| bad("it does not start with oci://"))?;
        let (name, digest) = match rest.split_once('@') {
            Some((name, digest)) => (name, Some(parse_digest(digest).map_err(|why| bad(&why))?)),
            None => (rest, None),
        };
        let (registry, path) = name
            .split_once('/')
            .ok_or_else(|| bad("it names no repository (oci://REGISTRY/REPOSITORY)"))?;
        // A tag is a colon in the last path segment; a colon before it is the registry's port.
        let (repository, tag) = match path.rsplit_once(':') {
            Some((repository, tag)) if !tag.contains('/') => (repository, Some(tag)),
            _ => (path, None),
        };
        if registry.is_empty() || repository.is_empty() {
            return Err(bad("the registry or the repository is empty"));
        }
        let repository_ok = repository.split('/').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
        });
        if !repository_ok {
            return Err(bad("the repository must be lower-case path components"));
        }
        if let Some(tag) = tag {
            let tag_ok = !tag.is_empty()
                && tag.len() <= 128
                && tag
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
            if !tag_ok {
                return Err(bad("the tag must be 1-128 of [A-Za-z0-9._-]"));
            }
        }
        Ok(PolicyRef {
            registry: registry.to_owned(),
            repository: repository.to_owned(),
            tag: tag.map(str::to_owned),
            digest,
        })
    }

    /// The same artifact addressed by `digest` (what a tag resolved to).
    pub fn pinned(&self, digest: &str) -> PolicyRef {
        PolicyRef {
            digest: Some(digest.to_owned()),
            ..self.clone()
        }
    }

    /// Registries on loopback are spoken to in plain HTTP, as container tools do.
    /// `registry/repository`, as cosign names what it signed (`identity.docker-reference`).
    pub fn repository_name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    pub fn is_loopback(&self) -> bool {
        let host = self
            .registry
            .rsplit_once(':')
            .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
            .map_or(self.registry.as_str(), |(host, _)| host);
        matches!(host, "localhost" | "127.0.0.1" | "[::1]")
    }

    pub(crate) fn client_reference(&self) -> oci_client::Reference {
        let (registry, repository) = (self.registry.clone(), self.repository.clone());
        match (&self.tag, &self.digest) {
            (Some(tag), Some(digest)) => oci_client::Reference::with_tag_and_digest(
                registry,
                repository,
                tag.clone(),
                digest.clone(),
            ),
            (_, Some(digest)) => {
                oci_client::Reference::with_digest(registry, repository, digest.clone())
            }
            (tag, None) => oci_client::Reference::with_tag(
                registry,
                repository,
                tag.clone().unwrap_or_else(|| "latest".to_owned()),
            ),
        }
    }
}

fn parse_digest(text: &str) -> Result<String, String> {
    let hex = text
        .strip_prefix("sha256:")
        .ok_or_else(|| format!("digest {text} is not sha256:<hex>"))?;
    if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "digest {text} is not sha256 followed by 64 hex digits"
        ));
    }
    Ok(format!("sha256:{}", hex.to_ascii_lowercase()))
}

impl fmt::Display for PolicyRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    #[test]
    fn registry_port_tag_and_digest_are_told_apart() {
        let parsed =
            PolicyRef::parse(&format!("oci://127.0.0.1:5000/team/policy:v1@{DIGEST}")).unwrap();
        assert_eq!(parsed.registry, "127.0.0.1:5000");
        assert_eq!(parsed.repository, "team/policy");
        assert_eq!(parsed.tag.as_deref(), Some("v1"));
        assert_eq!(parsed.digest.as_deref(), Some(DIGEST));
        assert!(parsed.is_loopback());

        let untagged = PolicyRef::parse("oci://ghcr.io:443/policy").unwrap();
        assert_eq!(untagged.registry, "ghcr.io:443");
        assert_eq!(untagged.tag, None);
        assert!(!untagged.is_loopback());
    }

    #[test]
    fn display_gives_back_the_reference() {
        let text = format!("oci://ghcr.io/pipewarden/policies/kfp-default:0.1.0@{DIGEST}");
        assert_eq!(PolicyRef::parse(&text).unwrap().to_string(), text);
    }

    #[test]
    fn malformed_references_are_refused_naming_them() {
        for text in [
            "ghcr.io/policy:v1",
            "oci://ghcr.io",
            "oci://ghcr.io/Policy",
            "oci://ghcr.io/policy@sha256:abc",
            "oci://ghcr.io/policy@md5:aaaa",
            "oci://ghcr.io/policy:",
            "oci:///policy",
        ] {
            let error = PolicyRef::parse(text).unwrap_err().to_string();
            assert!(error.contains(text), "{error}");
        }
    }
}
