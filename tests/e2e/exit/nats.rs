//! The NATS JetStream sink on a real nats-server: each completion is stored in the stream
//! exactly once across a controller restart, the resends of claims the killed controller left
//! pending dropped by JetStream's duplicate window (`Nats-Msg-Id` is the completion key), and
//! each message is the CloudEvent the webhook sends for the same completion, in structured mode.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use kube::api::DynamicObject;
use pipewarden::controller::exit_gate::{Sink as _, Webhook};
use pipewarden::exit::event::WorkflowFacts;
use pipewarden::exit::notification::notification;
use pipewarden_tests::exit_support::*;
use pipewarden_tests::nats::NatsServer;
use pipewarden_tests::shared;
use serde_json::Value;

const STREAM: &str = "EXIT";
const SUBJECT: &str = "pipewarden.exit.completed";
/// Long enough to span the restart and the takeover of the killed controller's claims.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_reach_nats_once_across_a_restart_as_the_webhooks_cloudevent() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let api = workflows(&client, &namespace);
    let nats = NatsServer::start().await?;
    let mut stream = nats.stream(STREAM, SUBJECT, DUPLICATE_WINDOW).await?;
    let flags = [
        format!("--exit-nats-url={}", nats.url),
        format!("--exit-nats-subject={SUBJECT}"),
        "--exit-webhook-timeout=2s".into(),
        "--exit-claim-ttl=10s".into(),
        "--exit-retry-delay=1s".into(),
        "--exit-sweep-interval=1s".into(),
    ];

    // The first controller publishes, but its sent marks never get through: killed with every
    // claim pending and every message stored.
    let faults = Faults::default().fail_when(Step::Mark, |_| true);
    let first =
        Controller::start_with_client(faults.client(control_plane)?, &namespace, &flags).await?;
    let mut completed = Vec::new();
    for n in 0..3 {
        completed.push(complete(&api, &format!("before-{n}")).await?);
    }
    pipewarden_tests::wait::until("3 publishes acknowledged", WAIT, || async {
        Ok((first.deliveries("nats", "ok") >= 3).then_some(()))
    })
    .await?;
    let first_published = Instant::now();
    let published_by_first = first.deliveries("nats", "ok");
    first.stop().await;
    // Two more complete while no controller runs.
    for n in 0..2 {
        completed.push(complete(&api, &format!("after-{n}")).await?);
    }

    let second = Controller::start(control_plane, &namespace, &flags).await?;
    for done in &completed {
        let name = done.metadata.name.as_deref().unwrap_or_default();
        wait_for_sent(&api, name, &completion_key(done)?).await?;
    }
    let resent_within = first_published.elapsed();
    let published_by_second = second.deliveries("nats", "ok");
    second.stop().await;

    // Every completion stored once: the second controller's resends of the first one's pending
    // claims were acknowledged as duplicates, within the window.
    let state = stream.info().await?.state.clone();
    let messages = stored(&stream, state.last_sequence).await?;
    let per_key: BTreeMap<String, usize> = messages.keys().map(|key| (key.clone(), 1)).collect();
    let keys: BTreeMap<String, usize> = completed
        .iter()
        .map(|done| Ok((completion_key(done)?, 1)))
        .collect::<Result<_>>()?;
    ensure!(
        state.messages == 5 && state.last_sequence == 5 && per_key == keys,
        "stored {} messages (last sequence {}) for {keys:?}: {:?}\n{}",
        state.messages,
        state.last_sequence,
        messages.keys(),
        nats.log_tail()
    );
    ensure!(
        published_by_first >= 3 && published_by_second == 5,
        "acknowledged publishes: {published_by_first} then {published_by_second}"
    );
    let duplicates = published_by_first + published_by_second - state.messages;
    ensure!(
        duplicates >= 3,
        "{duplicates} publishes dropped as duplicates"
    );
    ensure!(
        resent_within < DUPLICATE_WINDOW,
        "the resends came {resent_within:?} after the first publishes, past the window"
    );

    // The webhook's CloudEvent for the same completions, sent by the webhook sink.
    let receiver = Receiver::start().await?;
    let webhook = Webhook::new(&receiver.url, &Default::default())?;
    for done in &completed {
        let facts = WorkflowFacts::read(&as_json(done)).context("workflow facts")?;
        let sent = notification(&facts, "/pipewarden/exit-gate");
        webhook.send(&sent, Duration::from_secs(10)).await?;
    }
    for delivery in receiver.accepted() {
        let (headers, payload) = messages
            .get(&delivery.key)
            .with_context(|| format!("no message for {}", delivery.key))?;
        same_cloudevent(&delivery, headers, payload)?;
    }
    ensure!(receiver.per_key() == keys, "{:?}", receiver.per_key());
    Ok(())
}

/// A workflow submitted, run and completed as Argo writes it.
async fn complete(api: &kube::Api<DynamicObject>, name: &str) -> Result<DynamicObject> {
    let running = set_phase(api, &submit(api, name).await?, "Running", None).await?;
    set_phase(api, &running, "Succeeded", Some(&timestamp(0))).await
}

/// The stream's messages by `Nats-Msg-Id`: their `Content-Type` and payload.
async fn stored(
    stream: &async_nats::jetstream::stream::Stream,
    last: u64,
) -> Result<BTreeMap<String, (String, axum::body::Bytes)>> {
    let mut messages = BTreeMap::new();
    for sequence in 1..=last {
        let message = stream.get_raw_message(sequence).await?;
        let header = |name: &str| {
            message
                .headers
                .get(name)
                .map(|value| value.as_str().to_owned())
                .with_context(|| format!("message {sequence} has no {name}"))
        };
        let key = header("Nats-Msg-Id")?;
        let previous = messages.insert(key.clone(), (header("Content-Type")?, message.payload));
        ensure!(previous.is_none(), "{key} stored twice");
    }
    Ok(messages)
}

/// The structured event carries the webhook's `ce-*` headers as attributes and its body, byte
/// for byte, as `data`.
fn same_cloudevent(delivery: &Delivery, content_type: &str, payload: &[u8]) -> Result<()> {
    ensure!(
        content_type == "application/cloudevents+json",
        "{content_type}"
    );
    let event: Value = serde_json::from_slice(payload)?;
    let mut attributes = 0;
    for (name, value) in &delivery.headers {
        let Some(attribute) = name.strip_prefix("ce-") else {
            continue;
        };
        // None of this test's values needs escaping in a header: equal as sent.
        ensure!(!value.contains('%'), "{name}: {value}");
        ensure!(
            event[attribute] == value.as_str(),
            "{attribute}: {} in NATS, {value} by webhook",
            event[attribute]
        );
        attributes += 1;
    }
    ensure!(attributes >= 5, "{:?}", delivery.headers);
    ensure!(event["id"] == delivery.key.as_str());
    ensure!(
        event["datacontenttype"] == delivery.headers["content-type"].as_str(),
        "{event}"
    );
    let tail = [b"\"data\":".as_slice(), &delivery.raw, b"}"].concat();
    ensure!(
        payload.ends_with(&tail),
        "data is not the webhook body:\n{}\n{}",
        String::from_utf8_lossy(payload),
        String::from_utf8_lossy(&delivery.raw)
    );
    ensure!(event.as_object().map(|o| o.len()) == Some(attributes + 2));
    Ok(())
}
