//! The KFP apiserver's health answer (`GET /apis/v2beta1/healthz`), read for the KFP version
//! SWFs should be rendered for.

use serde_json::Value;

/// Path of the health endpoint under the KFP apiserver's base URL.
pub const HEALTHZ_PATH: &str = "/apis/v2beta1/healthz";

/// What a health answer says: the version, and whether the API server runs in multi-user mode.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Health {
    /// `tag_name`; None when it is empty or `unknown` (a development build).
    pub version: Option<String>,
    /// `multi_user` (`IsMultiUserMode()` of the API server, `backend/src/apiserver/main.go` at
    /// 2.17.0); None when the answer has no boolean there.
    pub multi_user: Option<bool>,
}

/// The health answer in `body`. An answer without `tag_name` is an error: not a KFP apiserver.
pub fn health(body: &[u8]) -> Result<Health, String> {
    let answer: Value =
        serde_json::from_slice(body).map_err(|e| format!("health answer is not JSON: {e}"))?;
    let tag = answer
        .get("tag_name")
        .ok_or("health answer has no tag_name")?
        .as_str()
        .ok_or("health answer's tag_name is not a string")?
        .trim();
    Ok(Health {
        version: (!tag.is_empty() && !tag.eq_ignore_ascii_case("unknown")).then(|| tag.to_owned()),
        multi_user: answer.get("multi_user").and_then(Value::as_bool),
    })
}

/// The target version in a health answer ([`Health::version`]).
pub fn target_version(body: &[u8]) -> Result<Option<String>, String> {
    health(body).map(|health| health.version)
}

#[cfg(test)]
mod tests {
    use super::target_version;

    #[test]
    fn tag_name_is_the_target() {
        let body = br#"{"commit_sha":"abc","tag_name":"2.17.0","multi_user":true}"#;
        assert_eq!(target_version(body), Ok(Some("2.17.0".into())));
    }

    #[test]
    fn multi_user_is_read_beside_the_version() {
        let body = br#"{"commit_sha":"abc","tag_name":"2.18.1","multi_user":true}"#;
        assert_eq!(
            super::health(body),
            Ok(super::Health {
                version: Some("2.18.1".into()),
                multi_user: Some(true)
            })
        );
        let single = super::health(br#"{"tag_name":"2.18.1","multi_user":false}"#).unwrap();
        assert_eq!(single.multi_user, Some(false));
        assert_eq!(
            super::health(br#"{"tag_name":"2.3.0"}"#)
                .unwrap()
                .multi_user,
            None
        );
    }

    #[test]
    fn unknown_or_empty_tag_means_no_target() {
        assert_eq!(target_version(br#"{"tag_name":"unknown"}"#), Ok(None));
        assert_eq!(target_version(br#"{"tag_name":" "}"#), Ok(None));
    }

    #[test]
    fn other_answers_are_errors() {
        assert!(target_version(b"<html>").is_err());
        assert!(target_version(br#"{"status":"ok"}"#).is_err());
        assert!(target_version(br#"{"tag_name":2}"#).is_err());
    }
}
