//! The exit loop's inputs: the workflow watch (one for all namespaces, or one per namespace)
//! and, for tests only, injected events merged beside it. Each workflow is read here, once
//! (`SeenWorkflow`); one without a name or uid is counted `malformed` and goes no further.

use futures::stream::{self, BoxStream, StreamExt as _};
use kube::Api;
use kube::api::ListParams;
use kube::runtime::watcher;
use serde_json::Value;
use tokio::sync::mpsc;

use super::dispatch::Dispatcher;
use super::gate::{Work, scopes};
use super::listed::ListedWorkflow;
use super::{Handled, InjectedEvent};
use crate::controller::context::Context;
use crate::controller::watch_health::{WatchReporter, watched};
use crate::engine::EventKind;
use crate::exit::decision::ExitDecision;
use crate::exit::event::COMPLETED_LABEL;
use crate::exit::seen::Seen;
use crate::metrics::Metrics;

pub(super) enum Input {
    /// Boxed: a workflow's facts are large beside the other variant.
    Event(Box<Work>),
    /// Watch number `n` finished its initial list.
    Listed(usize),
}

/// The merged inputs, and how many watches must list before the loop is ready.
pub(super) fn inputs(
    ctx: &Context,
    injected: Option<mpsc::Receiver<InjectedEvent>>,
) -> (BoxStream<'static, Input>, usize) {
    let apis = scopes(ctx);
    let count = apis.len();
    // Events as delivered, not deduplicated: a stale copy must reach the gate to be rejected.
    let watches = apis.into_iter().enumerate().map(|(index, api)| {
        let reporter = WatchReporter::new(ctx, "exit", api.namespace());
        let metrics = ctx.metrics.clone();
        watched(
            api,
            watcher::Config::default().page_size(PAGE_SIZE),
            reporter,
            ctx.list_turns.clone(),
        )
        .filter_map(move |event| std::future::ready(translate(index, event, &metrics)))
        .boxed()
    });
    let injected = match injected {
        Some(receiver) => {
            let metrics = ctx.metrics.clone();
            stream::unfold(receiver, move |mut receiver| {
                let metrics = metrics.clone();
                async move {
                    loop {
                        let event = receiver.recv().await?;
                        let Some(seen) = read_or_count(event.workflow, &metrics) else {
                            if let Some(tell) = event.handled {
                                let _ = tell.send(Handled::decided(ExitDecision::Malformed));
                            }
                            continue;
                        };
                        let work = Work::Event {
                            kind: event.kind,
                            seen,
                            requeues: 0,
                            handled: event.handled,
                        };
                        return Some((Input::Event(Box::new(work)), receiver));
                    }
                }
            })
            .boxed()
        }
        None => stream::empty().boxed(),
    };
    (
        stream::select(stream::select_all(watches), injected).boxed(),
        count,
    )
}

/// The workflow read once, or counted as malformed.
pub(super) fn read_or_count(workflow: Value, metrics: &Metrics) -> Option<Seen> {
    let seen = Seen::of(&workflow);
    if seen.is_none() {
        tracing::warn!("workflow without metadata.name or metadata.uid; ignored");
        metrics.exit.decided(ExitDecision::Malformed);
    }
    seen
}

/// Objects per page of every listing the exit loop makes (its watch's initial list included):
/// a page is held whole while it is read, and an Argo Workflow with a few hundred nodes is
/// 100-500 KB of JSON (several times that as parsed values).
pub(super) const PAGE_SIZE: u32 = 50;

/// One listing of the workflows in scope, page by page: only one page is held at a time.
pub(super) struct Pages {
    scopes: std::vec::IntoIter<Api<ListedWorkflow>>,
    current: Option<(Api<ListedWorkflow>, ListParams)>,
    selector: String,
}

impl Pages {
    /// Workflows matching the label `selector`, in every namespace in scope.
    pub(super) fn new(ctx: &Context, selector: &str) -> Pages {
        Pages {
            scopes: scopes(ctx).into_iter(),
            current: None,
            selector: selector.to_owned(),
        }
    }

    /// The next page; None once every scope was listed.
    pub(super) async fn next(&mut self) -> Option<kube::Result<Vec<ListedWorkflow>>> {
        loop {
            if self.current.is_none() {
                let api = self.scopes.next()?;
                let params = ListParams::default()
                    .labels(&self.selector)
                    .limit(PAGE_SIZE);
                self.current = Some((api, params));
            }
            let (api, params) = self.current.as_mut().expect("set above");
            let page = match list_retrying(api, params).await {
                Ok(page) => page,
                Err(error) => {
                    self.current = None;
                    return Some(Err(error));
                }
            };
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => *params = params.clone().continue_token(&token),
                _ => self.current = None,
            }
            if !page.items.is_empty() {
                return Some(Ok(page.items));
            }
        }
    }
}

/// Tries a page up to three times, two seconds apart: an API server too busy to answer once
/// does not end a listing early.
async fn list_retrying(
    api: &Api<ListedWorkflow>,
    params: &ListParams,
) -> kube::Result<kube::api::ObjectList<ListedWorkflow>> {
    let mut tries = 0;
    loop {
        match api.list(params).await {
            Ok(page) => return Ok(page),
            Err(error) if tries < 2 => {
                tries += 1;
                tracing::info!(%error, tries, "listing workflows failed; trying the page again");
                tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            }
            Err(error) => return Err(error),
        }
    }
}

/// Completed workflows in scope, page by page, handed to the shards as they are read; for a
/// replica that just became the writer, which may have seen completions while it was not
/// allowed to act on them. Only this replica's shard is kept, and only what the gate keeps
/// of each (never the object); the shards' queues bound how much waits at once.
pub(super) async fn catch_up(ctx: Context, dispatcher: Dispatcher) -> usize {
    let mut pages = Pages::new(&ctx, &format!("{COMPLETED_LABEL}=true"));
    let mut listed = 0;
    while let Some(page) = pages.next().await {
        let items = match page {
            Ok(items) => items,
            Err(error) => {
                tracing::warn!(%error, "cannot list workflows to catch up");
                continue;
            }
        };
        for object in items {
            if !object
                .metadata
                .uid
                .as_deref()
                .is_some_and(|uid| ctx.shard.owns(uid))
            {
                continue;
            }
            let Some(seen) = as_seen(object) else {
                continue;
            };
            listed += 1;
            if dispatcher.send(Work::CatchUp { seen }).await.is_err() {
                return listed;
            }
        }
    }
    listed
}

/// A listed object read as a workflow; one that is not (no name or uid) is left out.
pub(super) fn as_seen(object: ListedWorkflow) -> Option<Seen> {
    Seen::of(&object.into_value())
}

fn translate(
    index: usize,
    event: Result<watcher::Event<ListedWorkflow>, watcher::Error>,
    metrics: &Metrics,
) -> Option<Input> {
    let (kind, object) = match event {
        Ok(watcher::Event::Apply(object)) => (EventKind::Modified, object),
        Ok(watcher::Event::InitApply(object)) => (EventKind::Relisted, object),
        Ok(watcher::Event::Delete(object)) => (EventKind::Deleted, object),
        Ok(watcher::Event::Init) => {
            metrics.completions.listing(index);
            return None;
        }
        Ok(watcher::Event::InitDone) => {
            metrics.completions.relisted(index);
            return Some(Input::Listed(index));
        }
        // Logged and told to readiness by the watch itself (`watch_health`).
        Err(_) => return None,
    };
    let seen = read_or_count(object.into_value(), metrics)?;
    metrics.completions.saw(index, kind, &seen);
    Some(Input::Event(Box::new(Work::Event {
        kind,
        seen,
        requeues: 0,
        handled: None,
    })))
}
