//! The exit loop's inputs: the workflow watch (one for all namespaces, or one per namespace)
//! and, for tests only, injected events merged beside it.

use futures::stream::{self, BoxStream, StreamExt as _};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::runtime::watcher;
use tokio::sync::mpsc;

use super::InjectedEvent;
use super::worker::Work;
use crate::controller::context::Context;
use crate::controller::watch_health::{WatchReporter, watched};
use crate::engine::EventKind;
use crate::exit::notification::NOTIFICATION_LABEL;

pub(super) enum Input {
    Event(Work),
    /// Watch number `n` finished its initial list.
    Listed(usize),
}

/// `workflows.argoproj.io/v1alpha1`.
pub(super) fn workflow_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("argoproj.io", "v1alpha1", "Workflow");
    ApiResource::from_gvk_with_plural(&gvk, "workflows")
}

pub(super) fn workflows(ctx: &Context, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(ctx.client.clone(), namespace, &workflow_resource())
}

/// One API for all namespaces, or one per configured namespace.
pub(super) fn scopes(ctx: &Context) -> Vec<Api<DynamicObject>> {
    if ctx.namespaces.is_empty() {
        vec![Api::all_with(ctx.client.clone(), &workflow_resource())]
    } else {
        ctx.namespaces
            .iter()
            .map(|namespace| workflows(ctx, namespace))
            .collect()
    }
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
        watched(api, watcher::Config::default(), reporter)
            .filter_map(move |event| std::future::ready(translate(index, event)))
            .boxed()
    });
    let injected = match injected {
        Some(receiver) => stream::unfold(receiver, |mut receiver| async move {
            let event = receiver.recv().await?;
            Some((
                Input::Event(Work::Event {
                    kind: event.kind,
                    workflow: event.workflow,
                    requeues: 0,
                    handled: event.handled,
                }),
                receiver,
            ))
        })
        .boxed(),
        None => stream::empty().boxed(),
    };
    (
        stream::select(stream::select_all(watches), injected).boxed(),
        count,
    )
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
            for object in page.items {
                if let Ok(workflow) = serde_json::to_value(object) {
                    work.push(Work::CatchUp { workflow });
                }
            }
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => break,
            }
        }
    }
    work
}

/// Workflows in scope carrying a pending claim (by the mark's label), page by page.
pub(super) async fn list_pending(ctx: &Context) -> kube::Result<Vec<serde_json::Value>> {
    let selector = format!("{NOTIFICATION_LABEL}=pending");
    let mut found = Vec::new();
    for api in scopes(ctx) {
        let mut params = ListParams::default().labels(&selector).limit(500);
        loop {
            let page = api.list(&params).await?;
            for object in page.items {
                if let Ok(workflow) = serde_json::to_value(object) {
                    found.push(workflow);
                }
            }
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => break,
            }
        }
    }
    Ok(found)
}

fn translate(
    index: usize,
    event: Result<watcher::Event<DynamicObject>, watcher::Error>,
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
    match serde_json::to_value(object) {
        Ok(workflow) => Some(Input::Event(Work::Event {
            kind,
            workflow,
            requeues: 0,
            handled: None,
        })),
        Err(error) => {
            tracing::warn!(%error, "cannot represent a watched workflow as JSON");
            None
        }
    }
}
