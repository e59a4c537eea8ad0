use std::sync::{Arc, Mutex};

use futures::StreamExt as _;

use super::*;

fn refused(url: &str, options: &WebhookOptions) -> String {
    match Webhook::new(url, options) {
        Ok(_) => panic!("{url} with {options:?} was accepted"),
        Err(error) => format!("{error:#}"),
    }
}

/// A file for one test, removed when the test is done with it (a run leaves nothing in /tmp).
struct TempFile(PathBuf);

impl TempFile {
    fn path(&self) -> PathBuf {
        self.0.clone()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn file(name: &str, contents: &str) -> TempFile {
    let path =
        std::env::temp_dir().join(format!("pipewarden-webhook-{name}-{}", std::process::id()));
    std::fs::write(&path, contents).unwrap();
    TempFile(path)
}

#[test]
fn plain_http_is_refused_off_loopback_unless_allowed() {
    let none = WebhookOptions::default();
    let error = refused("http://receiver.team-a.svc:8080/", &none);
    assert!(error.contains("--exit-webhook-allow-http"), "{error}");
    for loopback in [
        "http://127.0.0.1:9/",
        "http://localhost/",
        "http://[::1]:80/",
    ] {
        Webhook::new(loopback, &none).unwrap();
    }
    let allowed = WebhookOptions {
        allow_http: true,
        ..WebhookOptions::default()
    };
    Webhook::new("http://receiver.team-a.svc:8080/", &allowed).unwrap();
    let ca = file("ca", "not a certificate");
    let with_ca = WebhookOptions {
        ca_file: Some(ca.path()),
        ..WebhookOptions::default()
    };
    let error = refused("http://127.0.0.1/", &with_ca);
    assert!(error.contains("is not https://"), "{error}");
    let error = refused("https://receiver/", &with_ca);
    assert!(error.contains("no PEM certificate"), "{error}");
}

#[test]
fn an_empty_or_missing_key_or_token_file_is_a_configuration_error() {
    let empty_key = file("empty-key", "\n");
    let empty = WebhookOptions {
        signing_key_file: Some(empty_key.path()),
        ..WebhookOptions::default()
    };
    let error = refused("http://127.0.0.1/", &empty);
    assert!(
        error.contains("--exit-webhook-signing-key-file") && error.contains("empty"),
        "{error}"
    );
    let missing = WebhookOptions {
        token_file: Some("/nonexistent/token".into()),
        ..WebhookOptions::default()
    };
    let error = refused("http://127.0.0.1/", &missing);
    assert!(error.contains("--exit-webhook-token-file"), "{error}");
}

type Seen = Arc<Mutex<Vec<(http::HeaderMap, Bytes)>>>;

async fn receiver() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let kept = seen.clone();
    let app = axum::Router::new().route(
        "/",
        axum::routing::post(move |headers: http::HeaderMap, body: Bytes| {
            kept.lock().unwrap().push((headers, body));
            async { http::StatusCode::NO_CONTENT }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

fn notification() -> Notification {
    Notification {
        key: "uid/1".into(),
        attributes: vec![("id", "uid/1".into())],
        headers: vec![("ce-id", "uid/1".into()), ("webhook-id", "uid/1".into())],
        body: serde_json::json!({"phase": "Failed"}).to_string().into(),
    }
}

#[tokio::test]
async fn a_signed_request_verifies_under_the_key_and_carries_the_token_read_per_request() {
    let (url, seen) = receiver().await;
    let key = file("key", "s3cret-key\n");
    let token = file("token", "token-one");
    let options = WebhookOptions {
        signing_key_file: Some(key.path()),
        token_file: Some(token.path()),
        ..WebhookOptions::default()
    };
    let webhook = Webhook::new(&url, &options).unwrap();
    webhook
        .post(&notification(), Duration::from_secs(5))
        .await
        .unwrap();
    std::fs::write(token.path(), "token-two").unwrap();
    webhook
        .post(&notification(), Duration::from_secs(5))
        .await
        .unwrap();

    let seen = seen.lock().unwrap();
    let (headers, body) = &seen[0];
    let header = headers[SIGNATURE_HEADER].to_str().unwrap();
    let tag = hex::decode(header.strip_prefix("sha256=").unwrap()).unwrap();
    // Checked as a receiver would, with ring's own verify over the bytes received.
    let verifier = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"s3cret-key");
    ring::hmac::verify(&verifier, body, &tag).expect("the signature verifies");
    assert!(
        ring::hmac::verify(&verifier, b"{\"phase\":\"Succeeded\"}", &tag).is_err(),
        "and only for this body"
    );
    assert_eq!(headers["authorization"], "Bearer token-one");
    assert_eq!(
        seen[1].0["authorization"], "Bearer token-two",
        "a rotated token is used"
    );
}

#[tokio::test]
async fn an_answer_of_any_size_is_read_only_up_to_the_bound() {
    // 2xx with a 256 MiB body, streamed and counted: delivered, and the connection dropped
    // long before the receiver could send it all (socket buffers hold a few MiB).
    let sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = sent.clone();
    let app = axum::Router::new().route(
        "/",
        axum::routing::post(move || {
            let counter = counter.clone();
            async move {
                let chunks = futures::stream::iter(0..4096).map(move |_| {
                    counter.fetch_add(64 << 10, std::sync::atomic::Ordering::SeqCst);
                    Ok::<_, std::io::Error>(Bytes::from(vec![b'x'; 64 << 10]))
                });
                (http::StatusCode::OK, axum::body::Body::from_stream(chunks))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let webhook = Webhook::new(&url, &WebhookOptions::default()).unwrap();
    let answered = webhook.post(&notification(), Duration::from_secs(30)).await;
    assert_eq!(answered, Ok(()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sent = sent.load(std::sync::atomic::Ordering::SeqCst) >> 20;
    assert!(sent < 64, "the receiver got to send {sent} MiB");
}

/// The Standard Webhooks headers: a receiver holding the `whsec_` secret verifies the
/// signature over id, timestamp and body (HMAC-SHA256 computed here with ring over the
/// decoded secret, as the scheme says), so a request replayed later than its tolerance, or
/// with another timestamp, is refused.
#[tokio::test]
async fn the_standard_webhooks_signature_covers_id_timestamp_and_body() {
    use base64::Engine as _;
    let (url, seen) = receiver().await;
    let secret = base64::engine::general_purpose::STANDARD.encode(b"a standard webhooks secret");
    let key = file("standard-key", &format!("whsec_{secret}\n"));
    let options = WebhookOptions {
        signing_key_file: Some(key.path()),
        ..WebhookOptions::default()
    };
    let webhook = Webhook::new(&url, &options).unwrap();
    webhook
        .post(&notification(), Duration::from_secs(5))
        .await
        .unwrap();
    let seen = seen.lock().unwrap();
    let (headers, body) = &seen[0];
    let id = headers["webhook-id"].to_str().unwrap();
    let timestamp = headers[TIMESTAMP_HEADER].to_str().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(now.abs_diff(timestamp.parse().unwrap()) < 60, "{timestamp}");
    let signature = headers[STANDARD_SIGNATURE_HEADER].to_str().unwrap();
    let tag = base64::engine::general_purpose::STANDARD
        .decode(signature.strip_prefix("v1,").unwrap())
        .unwrap();
    let verifier = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"a standard webhooks secret");
    let signed = [id.as_bytes(), b".", timestamp.as_bytes(), b".", body].concat();
    ring::hmac::verify(&verifier, &signed, &tag).expect("verifies over id.timestamp.body");
    let replayed = [id.as_bytes(), b".1.", body].concat();
    assert!(ring::hmac::verify(&verifier, &replayed, &tag).is_err());
}
