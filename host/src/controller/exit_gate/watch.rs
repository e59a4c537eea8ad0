//! The exit loop's inputs: the workflow watch (one for all namespaces, or one per namespace)
//! and, for tests only, injected events merged beside it. Each workflow is read here, once
//! (`SeenWorkflow`); one without a name or uid is counted `malformed` and goes no further.

use futures::stream::{self, BoxStream, StreamExt as _};
use kube::api::{DynamicObject, ListParams};
use kube::runtime::watcher;
use serde_json::Value;
use tokio::sync::mpsc;

use super::gate::{Work, scopes};
use super::{Handled, InjectedEvent};
use crate::controller::context::Context;
use crate::controller::metrics::Metrics;
use crate::controller::watch_health::{WatchReporter, watched};
use crate::engine::EventKind;
use crate::exit::notification::NOTIFICATION_LABEL;
use crate::exit::seen::SeenWorkflow;

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
        watched(api, watcher::Config::default(), reporter)
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
                                let _ = tell.send(Handled::decided("malformed"));
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
pub(super) fn read_or_count(workflow: Value, metrics: &Metrics) -> Option<SeenWorkflow> {
    let seen = SeenWorkflow::read(workflow);
    if seen.is_none() {
        tracing::warn!("workflow without metadata.name or metadata.uid; ignored");
        Metrics::count(&metrics.exit_decisions, "malformed");
    }
    seen
}

/// Every workflow in scope, listed page by page; for a replica that just became the writer,
/// which may have seen completions while it was not allowed to act on them.
pub(super) async fn list_all(ctx: &Context) -> Vec<Work> {
    let mut work = Vec::new();
    for api in scopes(ctx) {
        let mut params = ListParams::default().limit(500);
        loop {
            let page = match api.list(&params).await {
                Ok(page) => page,
                Err(error) => {
                    tracing::warn!(%error, "cannot list workflows to catch up");
                    break;
                }
            };
            work.extend(
                page.items
                    .into_iter()
                    .filter_map(as_seen)
                    .map(|seen| Work::CatchUp { seen }),
            );
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => break,
            }
        }
    }
    work
}

/// Workflows in scope carrying a pending claim (by the mark's label), page by page.
pub(super) async fn list_pending(ctx: &Context) -> kube::Result<Vec<SeenWorkflow>> {
    let selector = format!("{NOTIFICATION_LABEL}=pending");
    let mut found = Vec::new();
    for api in scopes(ctx) {
        let mut params = ListParams::default().labels(&selector).limit(500);
        loop {
            let page = api.list(&params).await?;
            found.extend(page.items.into_iter().filter_map(as_seen));
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => break,
            }
        }
    }
    Ok(found)
}

/// A listed object read as a workflow; one that is not (no name or uid) is left out.
fn as_seen(object: DynamicObject) -> Option<SeenWorkflow> {
    serde_json::to_value(object)
        .ok()
        .and_then(SeenWorkflow::read)
}

fn translate(
    index: usize,
    event: Result<watcher::Event<DynamicObject>, watcher::Error>,
    metrics: &Metrics,
) -> Option<Input> {
    let (kind, object) = match event {
        Ok(watcher::Event::Apply(object)) => (EventKind::Modified, object),
        Ok(watcher::Event::InitApply(object)) => (EventKind::Relisted, object),
        Ok(watcher::Event::Delete(object)) => (EventKind::Deleted, object),
        Ok(watcher::Event::Init) => return None,
        Ok(watcher::Event::InitDone) => return Some(Input::Listed(index)),
        // Logged and told to readiness by the watch itself (`watch_health`).
        Err(_) => return None,
    };
    let workflow = match serde_json::to_value(object) {
        Ok(workflow) => workflow,
        Err(error) => {
            tracing::warn!(%error, "cannot represent a watched workflow as JSON");
            return None;
        }
    };
    let seen = read_or_count(workflow, metrics)?;
    Some(Input::Event(Box::new(Work::Event {
        kind,
        seen,
        requeues: 0,
        handled: None,
    })))
}
