//! Canonical JSON and digests.
//!
//! Canonical here means: object keys sorted by their UTF-8 bytes, no whitespace, numbers and
//! strings as `serde_json` writes them. Two values that are equal as JSON give the same text
//! (and digest) however their keys were ordered, and regardless of serde_json's
//! `preserve_order` feature.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// `value` as canonical JSON text.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::with_capacity(256);
    write_canonical(value, &mut out);
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_scalar(key, out);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => write_scalar(scalar, out),
    }
}

fn write_scalar(scalar: &(impl serde::Serialize + ?Sized), out: &mut Vec<u8>) {
    serde_json::to_writer(out, scalar).expect("a JSON scalar always serializes");
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
