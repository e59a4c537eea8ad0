//! Canonical JSON and digests.
//!
//! Canonical JSON is RFC 8785, the JSON Canonicalization Scheme (JCS), written by the
//! `serde_json_canonicalizer` crate: object keys sorted by their UTF-16 code units, no
//! whitespace, strings escaped only where JSON requires it, numbers as ECMAScript writes them.
//! The Python and JavaScript SDKs write the same bytes (`tests/data/jcs/vectors.json` holds the
//! vectors all three check), so a render or settings digest is the same in every language. For
//! ASCII keys and integers, the common case in Kubernetes objects, the text is what sorted-key
//! compact `serde_json` writes.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// `value` as RFC 8785 canonical JSON text.
pub fn canonical_json(value: &Value) -> String {
    // A `Value` holds no NaN or infinity, the only numbers JCS cannot write.
    serde_json_canonicalizer::to_string(value).expect("a JSON value always canonicalizes")
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `sha256:<hex>` of the canonical JSON of `value`.
pub fn digest(value: &Value) -> String {
    format!("sha256:{}", sha256_hex(canonical_json(value).as_bytes()))
}

/// `sha256:` of settings text: of its canonical JSON, so reformatting a settings file is not a
/// change; of the bytes if it is not JSON.
pub fn settings_digest(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(value) => digest(&value),
        Err(_) => format!("sha256:{}", sha256_hex(text.as_bytes())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_at_every_level_and_output_is_compact() {
        let value: Value =
            serde_json::from_str(r#"{ "b": 1, "a": { "d": [ true, null ], "c": "x\"y" } }"#)
                .unwrap();
        assert_eq!(
            canonical_json(&value),
            r#"{"a":{"c":"x\"y","d":[true,null]},"b":1}"#
        );
    }

    #[test]
    fn settings_digests_ignore_formatting_but_not_values() {
        let compact = r#"{"driver":{"image":"a:1"},"launcher":{"image":"b:1"}}"#;
        let pretty =
            "{\n  \"launcher\": {\"image\": \"b:1\"},\n  \"driver\": {\"image\": \"a:1\"}\n}";
        assert_eq!(settings_digest(compact), settings_digest(pretty));
        assert_ne!(
            settings_digest(compact),
            settings_digest(&compact.replace("a:1", "a:2"))
        );
        assert!(settings_digest("not json").starts_with("sha256:"));
    }

    #[test]
    fn the_shared_rfc_8785_vectors_hold() {
        let text = include_str!("../../tests/data/jcs/vectors.json");
        let vectors: Value = serde_json::from_str(text).unwrap();
        let vectors = vectors["vectors"].as_array().unwrap();
        assert!(vectors.len() >= 5);
        for vector in vectors {
            let name = vector["name"].as_str().unwrap();
            let input: Value = serde_json::from_str(vector["input"].as_str().unwrap()).unwrap();
            let canonical = canonical_json(&input);
            assert_eq!(canonical, vector["canonical"].as_str().unwrap(), "{name}");
            assert_eq!(
                sha256_hex(canonical.as_bytes()),
                vector["sha256"].as_str().unwrap(),
                "{name}"
            );
        }
    }

    #[test]
    fn numbers_are_written_as_ecmascript_does() {
        let value: Value =
            serde_json::from_str("[1E30, 4.50, 2e-3, 1e-7, 1e21, 1e20, -0.0]").unwrap();
        assert_eq!(
            canonical_json(&value),
            "[1e+30,4.5,0.002,1e-7,1e+21,100000000000000000000,0]"
        );
    }

    #[test]
    fn array_order_is_kept() {
        assert_eq!(canonical_json(&json!([3, 1, 2])), "[3,1,2]");
    }

    #[test]
    fn canonical_text_parses_back_to_the_same_value() {
        let value = json!({"z": [1.5, -2, "é\n"], "a": {}, "m": []});
        let text = canonical_json(&value);
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
    }

    #[test]
    fn digest_ignores_key_order_but_not_content() {
        let one: Value = serde_json::from_str(r#"{"a":1,"b":2}"#).unwrap();
        let two: Value = serde_json::from_str(r#"{"b":2,"a":1}"#).unwrap();
        assert_eq!(digest(&one), digest(&two));
        assert_ne!(digest(&one), digest(&json!({"a": 1, "b": 3})));
        assert!(digest(&one).starts_with("sha256:"));
        assert_eq!(digest(&one).len(), "sha256:".len() + 64);
    }

    #[test]
    fn sha256_of_empty_input_is_the_known_vector() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
