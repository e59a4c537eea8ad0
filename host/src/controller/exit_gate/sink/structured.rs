//! A notification's CloudEvent in structured mode (one JSON object: the context attributes
//! beside `data`), for sinks whose messages carry no `ce-*` headers the way HTTP does. It is
//! the webhook's event: the attributes are its `ce-*` headers decoded, and `data` is its body,
//! byte for byte.

use bytes::Bytes;

use crate::exit::notification::Notification;

/// The media type of a structured-mode CloudEvent in JSON.
pub const CONTENT_TYPE: &str = "application/cloudevents+json";

/// `{"specversion":…,"id":…,…,"datacontenttype":…,"data":<body>}`, the attributes in the
/// order the webhook sends them. Written by hand so that `data` is the frozen body itself,
/// not a re-serialization of it.
pub fn structured(notification: &Notification) -> Bytes {
    let mut out = String::from("{");
    for (header, value) in &notification.headers {
        let name = match *header {
            "content-type" => "datacontenttype",
            other => match other.strip_prefix("ce-") {
                Some(attribute) => attribute,
                None => continue,
            },
        };
        let value = String::from_utf8_lossy(&percent_decoded(value)).into_owned();
        out.push_str(&serde_json::Value::String(name.to_owned()).to_string());
        out.push(':');
        out.push_str(&serde_json::Value::String(value).to_string());
        out.push(',');
    }
    out.push_str("\"data\":");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&notification.body);
    bytes.push(b'}');
    Bytes::from(bytes)
}

/// The inverse of the `%XX` escaping header values get (CloudEvents HTTP binding, 3.1.3.2).
fn percent_decoded(value: &str) -> Vec<u8> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| value.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::exit::event::WorkflowFacts;
    use crate::exit::notification::notification;

    #[test]
    fn the_structured_event_is_the_webhooks_attributes_and_body() {
        let facts = WorkflowFacts::read(&json!({
            "metadata": {"name": "etl", "namespace": "team-a", "uid": "u1",
                         "resourceVersion": "7"},
            "status": {"phase": "Failed", "startedAt": "2026-01-01T00:00:00Z",
                       "finishedAt": "2026-01-01T00:01:00Z", "message": "a \"quoted\" %"},
        }))
        .unwrap();
        let sent = notification(&facts, "/pipewarden/exit gate");
        let event = structured(&sent);
        let parsed: Value = serde_json::from_slice(&event).unwrap();
        assert_eq!(parsed["specversion"], "1.0");
        assert_eq!(parsed["id"], sent.key.as_str());
        assert_eq!(
            parsed["source"], "/pipewarden/exit gate",
            "decoded from %20"
        );
        assert_eq!(parsed["subject"], "team-a/etl");
        assert_eq!(parsed["time"], "2026-01-01T00:01:00Z");
        assert_eq!(parsed["datacontenttype"], "application/json");
        let tail = [b"\"data\":".as_slice(), &sent.body, b"}"].concat();
        assert!(event.ends_with(&tail), "data is the webhook body itself");
        assert_eq!(
            parsed["data"],
            serde_json::from_slice::<Value>(&sent.body).unwrap()
        );
    }

    #[test]
    fn only_whole_escapes_are_decoded() {
        assert_eq!(percent_decoded("a%20b%2"), b"a b%2");
        assert_eq!(percent_decoded("%zz%41"), b"%zzA");
    }
}
