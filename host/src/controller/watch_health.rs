//! A loop's watch, reporting its health. After a failure the watch starts over from a fresh
//! list (after a backoff), so the loop is known good again only once a list has gone through:
//! kube's watcher resumes a broken watch silently, and nothing would say when it recovered.
//! Lists take turns (`list_turns`): a page is held whole while it is read, and fifty namespace
//! watches listing at once held fifty pages.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::stream::{BoxStream, Stream, StreamExt as _};
use kube::Resource;
use kube::api::Api;
use kube::runtime::utils::Backoff as _;
use kube::runtime::watcher::{self, DefaultBackoff, Event};
use serde::de::DeserializeOwned;

use super::context::Context;
use super::health::Readiness;
use super::list_turns::ListTurns;
use crate::cluster::api_error::describe_watch;
use crate::metrics::{Metrics, WatchLabel};

/// Tells readiness, metrics and the log how one watch is doing.
#[derive(Clone)]
pub struct WatchReporter {
    /// `swf`, `exit`, or `swf/<namespace>` when a loop watches namespaces one by one.
    watch: Arc<str>,
    readiness: Arc<Readiness>,
    metrics: Arc<Metrics>,
    api_server: Arc<str>,
}

impl WatchReporter {
    pub fn new(ctx: &Context, loop_name: &str, namespace: Option<&str>) -> Self {
        let watch = match namespace {
            Some(namespace) => format!("{loop_name}/{namespace}"),
            None => loop_name.to_owned(),
        };
        // At 0 from the start, so the first error shows in `increase()` and a healthy watch
        // is exported as not failing.
        let label = WatchLabel {
            watch: watch.clone(),
        };
        drop(ctx.metrics.watch.errors.get_or_create(&label));
        ctx.metrics.watch.failing.get_or_create(&label).set(0);
        WatchReporter {
            watch: watch.into(),
            readiness: ctx.readiness.clone(),
            metrics: ctx.metrics.clone(),
            api_server: ctx.api_server.clone(),
        }
    }

    fn label(&self) -> WatchLabel {
        WatchLabel {
            watch: self.watch.to_string(),
        }
    }

    fn succeeded(&self) {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        let gauge = self.metrics.watch.last_success.get_or_create(&self.label());
        gauge.set(now.as_secs() as i64);
        self.metrics
            .watch
            .failing
            .get_or_create(&self.label())
            .set(0);
        if let Some(failed_for) = self.readiness.watch_ok(&self.watch) {
            tracing::info!(watch = %self.watch, failed_for = ?failed_for, "watch listed again; recovered");
        }
    }

    fn failed(&self, error: &watcher::Error, retry_in: Duration) {
        let error = describe_watch(error, &self.api_server);
        tracing::warn!(watch = %self.watch, %error, ?retry_in, "watch failed; listing again after a pause");
        self.metrics.watch.errors.get_or_create(&self.label()).inc();
        self.metrics
            .watch
            .failing
            .get_or_create(&self.label())
            .set(1);
        self.readiness.watch_failed(&self.watch, error);
    }
}

type Events<K> = BoxStream<'static, Result<Event<K>, watcher::Error>>;

struct State<K: Resource + Clone + 'static> {
    api: Api<K>,
    config: watcher::Config,
    reporter: WatchReporter,
    backoff: DefaultBackoff,
    events: Events<K>,
    /// Set after a failure: wait this long, then start over with a fresh list.
    pause: Option<Duration>,
    turns: ListTurns,
    /// Held from the start of a list to its end (or failure).
    listing: Option<tokio::sync::OwnedSemaphorePermit>,
}

/// The events of `api` as `watcher` delivers them, errors included; each error is reported and
/// followed by a pause and a fresh list, each completed list or delivered change by a success.
/// Each list waits for its turn among `turns`.
pub fn watched<K>(
    api: Api<K>,
    config: watcher::Config,
    reporter: WatchReporter,
    turns: ListTurns,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let events = watcher::watcher(api.clone(), config.clone()).boxed();
    let state = State {
        api,
        config,
        reporter,
        backoff: DefaultBackoff::default(),
        events,
        pause: None,
        turns,
        listing: None,
    };
    futures::stream::unfold(state, |mut state| async move {
        if let Some(pause) = state.pause.take() {
            tokio::time::sleep(pause).await;
            state.events = watcher::watcher(state.api.clone(), state.config.clone()).boxed();
        }
        let item = state.events.next().await?;
        match &item {
            // kube's watcher says Init before it requests the first page, and requests it
            // when next polled: after the turn is taken. The semaphore is never closed.
            Ok(Event::Init) => state.listing = state.turns.clone().acquire_owned().await.ok(),
            Ok(Event::InitDone) => {
                state.listing = None;
                state.backoff.reset();
                state.reporter.succeeded();
            }
            Ok(Event::Apply(_) | Event::Delete(_)) => state.reporter.succeeded(),
            Ok(Event::InitApply(_)) => {}
            Err(error) => {
                state.listing = None;
                let pause = state.backoff.next().unwrap_or(Duration::from_secs(30));
                state.reporter.failed(error, pause);
                state.pause = Some(pause);
            }
        }
        Some((item, state))
    })
}
