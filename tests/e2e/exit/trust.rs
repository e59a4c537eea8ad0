//! What a receiver can check. Each notification carries `X-Pipewarden-Signature: sha256=<hex>`,
//! the HMAC-SHA256 of the body under the key in `--exit-webhook-signing-key-file`, the Standard
//! Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature` over
//! `id.timestamp.body`), and the bearer token in `--exit-webhook-token-file`. The receiver here checks both as a receiver
//! would, with an HMAC written from RFC 2104 over SHA-256 (not the controller's code), and
//! refuses anything else with 401: every completion is accepted on its first request.

use std::collections::BTreeMap;

use anyhow::{Result, ensure};
use pipewarden_tests::exit_support::*;
use pipewarden_tests::shared;
use sha2::{Digest as _, Sha256};

const KEY: &[u8] = b"receiver-shared-key";
const TOKEN: &str = "pipewarden-token-1";
const WORKFLOWS: usize = 3;

/// HMAC-SHA256 per RFC 2104 (a key shorter than the 64-byte block).
fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut block = [0u8; 64];
    block[..key.len()].copy_from_slice(key);
    let pad = |byte: u8| block.iter().map(|k| k ^ byte).collect::<Vec<u8>>();
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .to_vec()
}

fn trusted(delivery: &Delivery) -> bool {
    let signed = delivery
        .headers
        .get("x-pipewarden-signature")
        .and_then(|value| value.strip_prefix("sha256="))
        .and_then(|tag| hex::decode(tag).ok())
        .is_some_and(|tag| tag == hmac_sha256(KEY, &delivery.raw));
    let authorised = delivery.headers.get("authorization") == Some(&format!("Bearer {TOKEN}"));
    signed && authorised && standard_signed(delivery)
}

/// The Standard Webhooks signature: `v1,<base64 HMAC-SHA256 of id.timestamp.body>`, with a
/// timestamp within five minutes of now (what the scheme's receivers allow).
fn standard_signed(delivery: &Delivery) -> bool {
    use base64::Engine as _;
    let header = |name: &str| delivery.headers.get(name).map(String::as_str).unwrap_or("");
    let (id, timestamp) = (header("webhook-id"), header("webhook-timestamp"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let fresh = timestamp
        .parse::<u64>()
        .is_ok_and(|sent| now.abs_diff(sent) <= 300);
    let signed = [
        id.as_bytes(),
        b".",
        timestamp.as_bytes(),
        b".",
        &delivery.raw,
    ]
    .concat();
    let expected = hmac_sha256(KEY, &signed);
    let matches = header("webhook-signature")
        .split(' ')
        .filter_map(|signature| signature.strip_prefix("v1,"))
        .filter_map(|tag| base64::engine::general_purpose::STANDARD.decode(tag).ok())
        .any(|tag| tag == expected);
    !id.is_empty() && id == delivery.key && fresh && matches
}

#[tokio::test]
async fn a_receiver_accepts_every_notification_by_its_signature_and_token() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let dir = std::env::temp_dir().join(format!("pipewarden-trust-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let (key, token) = (dir.join("key"), dir.join("token"));
    std::fs::write(&key, KEY)?;
    // A Secret made with --from-file ends in a newline; it is not part of the token.
    std::fs::write(&token, format!("{TOKEN}\n"))?;
    let receiver = Receiver::with(|delivery, _| {
        if trusted(delivery) {
            Answer::Status(200)
        } else {
            Answer::Status(401)
        }
    })
    .await?;
    let flags = [
        receiver.flag(),
        format!("--exit-webhook-signing-key-file={}", key.display()),
        format!("--exit-webhook-token-file={}", token.display()),
    ];
    let controller = Controller::start(control_plane, &namespace, &flags).await?;
    let api = workflows(&client, &namespace);
    let mut keys = Vec::new();
    for i in 0..WORKFLOWS {
        let workflow = submit(&api, &format!("signed-{i}")).await?;
        let workflow = set_phase(&api, &workflow, "Running", None).await?;
        let done = set_phase(&api, &workflow, "Failed", Some(&timestamp(0))).await?;
        keys.push(completion_key(&done)?);
    }
    pipewarden_tests::wait::until("every completion accepted", WAIT, || async {
        let accepted = receiver.per_key();
        Ok(keys.iter().all(|k| accepted.contains_key(k)).then_some(()))
    })
    .await?;
    controller.stop().await;

    let seen = receiver.seen();
    let refused: Vec<&Delivery> = seen.iter().filter(|d| !trusted(d)).collect();
    let signatures: BTreeMap<&str, &str> = seen
        .iter()
        .filter_map(|d| {
            Some((
                d.key.as_str(),
                d.headers.get("x-pipewarden-signature")?.as_str(),
            ))
        })
        .collect();
    println!(
        "{} requests for {WORKFLOWS} completions, {} refused by the receiver",
        seen.len(),
        refused.len()
    );
    ensure!(refused.is_empty(), "refused: {refused:?}");
    ensure!(
        seen.len() == WORKFLOWS,
        "one request per completion: {seen:?}"
    );
    let distinct: std::collections::BTreeSet<&&str> = signatures.values().collect();
    ensure!(
        distinct.len() == WORKFLOWS,
        "each body has its own signature"
    );
    std::fs::remove_dir_all(dir)?;
    Ok(())
}
