//! The KFP apiserver's health answer (`GET /apis/v2beta1/healthz`), read for the KFP version
//! SWFs should be rendered for.

use serde_json::Value;

/// Path of the health endpoint under the KFP apiserver's base URL.
pub const HEALTHZ_PATH: &str = "/apis/v2beta1/healthz";

/// The target version in a health answer: `tag_name`, or None when it is empty or `unknown`
/// (a development build). An answer without `tag_name` is an error: not a KFP apiserver.
pub fn target_version(body: &[u8]) -> Result<Option<String>, String> {
    let answer: Value =
        serde_json::from_slice(body).map_err(|e| format!("health answer is not JSON: {e}"))?;
    let tag = answer
        .get("tag_name")
        .ok_or("health answer has no tag_name")?
        .as_str()
        .ok_or("health answer's tag_name is not a string")?
        .trim();
    Ok((!tag.is_empty() && !tag.eq_ignore_ascii_case("unknown")).then(|| tag.to_owned()))
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
