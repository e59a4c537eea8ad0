//! A notification's CloudEvent in structured mode (one JSON object: the context attributes
//! beside `data`), for sinks whose messages carry no `ce-*` headers the way HTTP does. It is
//! the webhook's event: the attributes the webhook sends as `ce-*` headers, and `data` its
//! body, byte for byte.

use bytes::Bytes;

use crate::exit::notification::Notification;

/// The media type of a structured-mode CloudEvent in JSON.
pub const CONTENT_TYPE: &str = "application/cloudevents+json";

/// `{"specversion":…,"id":…,…,"datacontenttype":…,"data":<body>}`, the attributes in the
/// order the webhook sends them. Written by hand so that `data` is the frozen body itself,
/// not a re-serialization of it.
pub fn structured(notification: &Notification) -> Bytes {
    let mut out = String::from("{");
    for (name, value) in &notification.attributes {
        out.push_str(&serde_json::Value::from(*name).to_string());
        out.push(':');
        out.push_str(&serde_json::Value::from(value.as_str()).to_string());
        out.push(',');
    }
    out.push_str("\"data\":");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&notification.body);
    bytes.push(b'}');
    Bytes::from(bytes)
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
}
