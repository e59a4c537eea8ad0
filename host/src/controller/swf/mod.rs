//! The ScheduledWorkflow loop: list and watch SWFs through a reflector, reconcile each on every
//! change, on a periodic resync and when the target version changes; rebuild the ones whose
//! render differs (see `crate::swf::plan`), writing spec and annotations only.

mod adaptive;
mod bodies;
mod decided;
mod event_combine;
mod event_limit;
mod event_queue;
mod own_writes;
pub mod packed;
mod reconcile;
mod report;
pub mod standing;
mod write_budget;

pub use reconcile::MAX_WRITE_ATTEMPTS;

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt as _, TryStreamExt as _};
use kube::api::{Api, ApiResource};
use kube::runtime::controller::{Config, Controller};
use kube::runtime::{WatchStreamExt as _, reflector, watcher};
use tokio::sync::watch;

use super::context::Context;
use super::watch_health::{WatchReporter, watched};
use crate::cluster::kfp_target::HealthPoller;
use crate::cluster::policy_handle::PolicyHandle;
use crate::cluster::resources::swf_resource;
use crate::config::Shard;
use crate::config::{CompileAs, SwfArgs};
use crate::engine::RebuildPolicy;
use crate::swf::healthz::Health;
use crate::swf::serving::Serving;

/// Readiness part: ready once every SWF has been listed.
const READINESS: &str = "swf";
/// The window `--swf-writes-per-hour` counts writes in.
const WRITE_BUDGET_WINDOW: Duration = Duration::from_secs(3600);
/// SWFs per page of the watch's list: a page is held whole (its body, then its objects) while
/// it is read, and a real SWF is 30-300 KB of JSON once it carries a last good render. With
/// client-go's 500, one page of the real fleet held about 100 MB at once.
const LIST_PAGE: u32 = 50;
/// How often to look whether a reload put another policy in force.
const POLICY_CHECK: Duration = Duration::from_secs(5);

/// What every reconcile of the loop shares.
pub(crate) struct SwfLoop {
    ctx: Context,
    resource: ApiResource,
    rebuild_policy: RebuildPolicy,
    target: watch::Receiver<Option<String>>,
    /// What the loop may do on this install now (`standing`).
    serving: watch::Receiver<Serving>,
    resync: Duration,
    /// Decisions in flight across all namespaces, adapted to the API server's answers.
    permits: adaptive::AdaptiveLimit,
    /// Writes whose watch echo needs no new decision.
    own_writes: own_writes::OwnWrites,
    /// Routine per-SWF Events, created off the write path.
    events: event_queue::EventQueue,
    /// Holds back repeated policy-failure Events about one SWF.
    failure_events: std::sync::Mutex<event_limit::EventLimiter>,
    /// SWFs already reported not rebuildable or under an unsupported target, with the reason:
    /// said once.
    not_rebuildable_said: std::sync::Mutex<event_limit::EventLimiter>,
    /// Whether the policy compiles for the target in force.
    target_status: report::TargetStatus,
    /// Writes per SWF per hour.
    write_budget: write_budget::WriteBudget,
    /// What was decided under what is in force: due resyncs wait for the undecided.
    decided: decided::Decided,
    /// The loop's stores (its shard's SWFs), once the controllers exist.
    stores: std::sync::OnceLock<Vec<reflector::Store<packed::PackedSwf>>>,
    /// Told `namespace/name` of each decision, in order (tests).
    decisions: Option<tokio::sync::mpsc::UnboundedSender<String>>,
}

impl SwfLoop {
    /// The loop's shared state, and the task that creates its routine Events.
    fn new(
        ctx: &Context,
        rebuild_policy: RebuildPolicy,
        target: watch::Receiver<Option<String>>,
        serving: watch::Receiver<Serving>,
        resync: Duration,
        writes_per_hour: usize,
    ) -> (SwfLoop, event_queue::EventDrain) {
        let (events, event_drain) = event_queue::channel(ctx, event_queue::QUEUE_CAPACITY);
        let swf_loop = SwfLoop {
            resource: swf_resource(),
            rebuild_policy,
            target,
            serving,
            resync,
            permits: adaptive::AdaptiveLimit::new(
                ctx.concurrency,
                ctx.metrics.scale.swf_concurrency_limit.clone(),
            ),
            own_writes: own_writes::OwnWrites::default(),
            events,
            failure_events: std::sync::Mutex::new(event_limit::EventLimiter::new(
                event_limit::POLICY_FAILURE_EVENT_WINDOW,
            )),
            not_rebuildable_said: std::sync::Mutex::new(event_limit::EventLimiter::new(
                Duration::MAX,
            )),
            target_status: report::TargetStatus::default(),
            write_budget: write_budget::WriteBudget::new(writes_per_hour, WRITE_BUDGET_WINDOW),
            decided: decided::Decided::default(),
            stores: std::sync::OnceLock::new(),
            decisions: None,
            ctx: ctx.clone(),
        };
        (swf_loop, event_drain)
    }
}

/// Checks the arguments and marks the loop as not ready yet; the returned future runs it.
/// None when the loop is turned off.
pub fn prepare(
    ctx: &Context,
    args: SwfArgs,
    decisions: Option<tokio::sync::mpsc::UnboundedSender<String>>,
) -> anyhow::Result<Option<impl Future<Output = anyhow::Result<()>> + use<>>> {
    if !args.enabled {
        return Ok(None);
    }
    let poller = args
        .kfp_api_url
        .as_deref()
        .map(|url| HealthPoller::new(url, args.kfp_api_ca_file.as_deref()))
        .transpose()?;
    ctx.readiness.expect(READINESS);
    Ok(Some(run(ctx.clone(), args, poller, decisions)))
}

async fn run(
    ctx: Context,
    args: SwfArgs,
    poller: Option<HealthPoller>,
    decisions: Option<tokio::sync::mpsc::UnboundedSender<String>>,
) -> anyhow::Result<()> {
    // Learn the target before the first pass, so SWFs are not rendered twice on start-up.
    let health = match &poller {
        Some(poller) => poller.fetch().await.unwrap_or_else(|error| {
            tracing::warn!(error = %format!("{error:#}"), "target version unknown for now");
            Health::default()
        }),
        None => Health {
            version: args.target_version.clone().filter(|v| !v.trim().is_empty()),
            multi_user: None,
        },
    };
    ctx.install.send_modify(|facts| {
        facts.reported = health.version.clone();
        facts.healthz_multi_user = health.multi_user;
    });
    let initial = CompileAs::apply(&args.compile_as, health.version);
    tracing::info!(
        rebuild_policy = crate::swf::rebuild_policy_name(args.rebuild_policy),
        target = initial.as_deref().unwrap_or("unknown"),
        namespaces = ?ctx.namespaces,
        "starting the SWF loop"
    );
    let (target_tx, target_rx) = watch::channel(initial);
    // What the loop may do, settled before the first SWF is decided.
    let standing_inputs = standing::Inputs {
        ctx: ctx.clone(),
        target: target_rx.clone(),
        install: ctx.install.subscribe(),
        multi_user_flag: args.kfp_multi_user,
        rebuild_policy: args.rebuild_policy,
    };
    let reporter = standing::Reporter::new(&ctx);
    let (first, facts) = standing::standing(&standing_inputs).await;
    reporter.report(&first, &facts).await;
    let (serving_tx, serving_rx) = watch::channel(first);
    let (mut swf_loop, event_drain) = SwfLoop::new(
        &ctx,
        args.rebuild_policy,
        target_rx.clone(),
        serving_rx.clone(),
        args.swf_resync,
        args.swf_writes_per_hour,
    );
    swf_loop.decisions = decisions;
    let swf_loop = Arc::new(swf_loop);
    let apis: Vec<Api<packed::WatchedSwf>> = if ctx.namespaces.is_empty() {
        vec![Api::all_with(ctx.client.clone(), &swf_loop.resource)]
    } else {
        ctx.namespaces
            .iter()
            .map(|ns| Api::namespaced_with(ctx.client.clone(), ns, &swf_loop.resource))
            .collect()
    };
    let bodies = bodies::Bodies::new(
        args.swf_bodies_mib.saturating_mul(1 << 20),
        ctx.metrics.scale.swf_body_bytes.clone(),
    );
    let mut stores = Vec::new();
    let mut controllers = Vec::new();
    for api in apis {
        // The default list+watch: a consistent list, then a watch from its resourceVersion;
        // a failed watch lists again, reporting its health to readiness.
        let reporter = WatchReporter::new(&ctx, READINESS, api.namespace());
        let writer = reflector::store::Writer::new(swf_loop.resource.clone());
        let reader = writer.as_reader();
        // Packed before the store: it holds keys and compressed objects (see `packed`).
        let (shard, bodies) = (ctx.shard, bodies.clone());
        let (metrics, scope, store) = (
            ctx.metrics.clone(),
            api.namespace().map(str::to_owned),
            reader.clone(),
        );
        let config = watcher::Config::default().page_size(LIST_PAGE);
        let changed = watched(api, config, reporter, ctx.list_turns.clone())
            .try_filter(move |event| std::future::ready(in_shard(event, shard)))
            .map_ok(move |event| packed::pack_event(event, &bodies))
            .reflect(writer)
            .inspect_ok(move |event| follow_fleet(&metrics, scope.as_deref(), &store, event))
            .applied_objects();
        let controller = Controller::for_stream_with(changed, reader, swf_loop.resource.clone())
            .with_config(Config::default().concurrency(ctx.concurrency.min(512) as u16))
            .reconcile_all_on(changes(target_rx.clone()))
            .reconcile_all_on(changes(serving_rx.clone()))
            .reconcile_all_on(policy_changes(ctx.policy.clone()))
            .reconcile_all_on(became_writer(ctx.may_write.clone()));
        stores.push(controller.store());
        controllers.push(
            controller
                .run(
                    reconcile::reconcile,
                    reconcile::error_policy,
                    swf_loop.clone(),
                )
                .for_each(|result| {
                    reconcile::log_failure(result, &ctx.api_server);
                    std::future::ready(())
                }),
        );
    }
    let _ = swf_loop.stores.set(stores.clone());
    let synced = async {
        for store in stores {
            // Only fails if the reflector is gone, and then the loop is gone too.
            let _ = store.wait_until_ready().await;
        }
        ctx.readiness.ready(READINESS);
    };
    let install = ctx.install.clone();
    let poll = async move {
        if let Some(poller) = poller {
            let mapped = move |version| CompileAs::apply(&args.compile_as, version);
            poller
                .run(args.kfp_api_poll, target_tx, install, mapped)
                .await;
        }
    };
    tokio::join!(
        synced,
        poll,
        standing::run(standing_inputs, serving_tx, reporter),
        event_drain.run(),
        futures::future::join_all(controllers)
    );
    Ok(())
}

/// Keeps `pipewarden_swfs` to the SWFs that exist: a deletion forgets one, and a list (after a
/// failed watch) forgets those deleted meanwhile, once the store holds the new list.
fn follow_fleet(
    metrics: &crate::metrics::Metrics,
    scope: Option<&str>,
    store: &reflector::Store<packed::PackedSwf>,
    event: &watcher::Event<packed::PackedSwf>,
) {
    match event {
        watcher::Event::Delete(swf) => metrics.swfs.forget(
            swf.metadata.namespace.as_deref().unwrap_or_default(),
            swf.metadata.name.as_deref().unwrap_or_default(),
        ),
        watcher::Event::InitDone => metrics.swfs.prune(scope, |namespace, name| {
            let object = reflector::ObjectRef::new_with(name, swf_resource()).within(namespace);
            store.get(&object).is_some()
        }),
        _ => {}
    }
}

/// Whether an event is about an SWF of this shard (list markers always are).
fn in_shard(event: &watcher::Event<packed::WatchedSwf>, shard: Shard) -> bool {
    match event {
        watcher::Event::Apply(swf)
        | watcher::Event::Delete(swf)
        | watcher::Event::InitApply(swf) => {
            shard.owns(swf.metadata.uid.as_deref().unwrap_or_default())
        }
        watcher::Event::Init | watcher::Event::InitDone => true,
    }
}

/// One item per change of the watched value.
pub(crate) fn changes<T: Send + Sync + 'static>(
    rx: watch::Receiver<T>,
) -> impl Stream<Item = ()> + Send {
    futures::stream::unfold(rx, |mut rx| async move {
        rx.changed().await.ok().map(|()| ((), rx))
    })
}

/// One item each time another policy or other settings are put in force (a reload).
fn policy_changes(policy: PolicyHandle) -> impl Stream<Item = ()> + Send {
    let in_force = |policy: &PolicyHandle| {
        let loaded = policy.current();
        (loaded.policy.digest().to_owned(), loaded.settings.clone())
    };
    let first = in_force(&policy);
    futures::stream::unfold((policy, first), move |(policy, last)| async move {
        loop {
            tokio::time::sleep(POLICY_CHECK).await;
            let now = in_force(&policy);
            if now != last {
                tracing::info!(
                    digest = now.0,
                    "policy or settings changed; every SWF is reconciled again"
                );
                return Some(((), (policy, now)));
            }
        }
    })
}

/// One item each time this replica may write again (everything is reconciled then).
fn became_writer(rx: watch::Receiver<bool>) -> impl Stream<Item = ()> + Send {
    futures::stream::unfold(rx, |mut rx| async move {
        loop {
            rx.changed().await.ok()?;
            if *rx.borrow_and_update() {
                return Some(((), rx));
            }
        }
    })
}
