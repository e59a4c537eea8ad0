//! `pipewarden_swfs{state}` (with `swf_namespace` under `--metrics-swf-namespaces`): each
//! SWF of this shard by the state its last decision left it in, kept current by the SWF loop
//! (a decision sets it, a deletion or a fresh list drops it). The facts behind the gauge are
//! kept too, small and capped (keys, uid, a short detail for findings), for the policy
//! reports, which read them by namespace.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::swf::fleet::{SwfState, Tally};

/// Bytes of a finding's detail kept (a reason or the fields a rebuild changes).
pub const DETAIL_MAX: usize = 240;
/// Bytes of a name or namespace kept (Kubernetes allows 253).
const NAME_MAX: usize = 253;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    pub state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NamespaceStateLabels {
    /// Not `namespace`: Prometheus gives every scraped series its target's `namespace`.
    pub swf_namespace: String,
    pub state: String,
}

/// One SWF as the gauge and the reports know it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwfFact {
    pub uid: Box<str>,
    pub state: SwfState,
    /// For findings only: why, in a line.
    pub detail: Option<Box<str>>,
    /// Unix seconds since it has been in this state with this detail.
    pub since: i64,
}

enum Gauges {
    ByState(Family<StateLabel, Gauge>),
    ByNamespace(Family<NamespaceStateLabels, Gauge>),
}

#[derive(Default)]
struct Facts {
    /// namespace -> name -> fact.
    swfs: BTreeMap<Box<str>, BTreeMap<Box<str>, SwfFact>>,
    /// Namespaces whose findings changed since the reports last took them.
    changed: BTreeSet<Box<str>>,
}

pub struct SwfFleet {
    gauges: Gauges,
    facts: Mutex<Facts>,
}

impl SwfFleet {
    /// Registers the gauge; by namespace too when `by_namespace`.
    pub fn register(registry: &mut Registry, by_namespace: bool) -> SwfFleet {
        let help = "ScheduledWorkflows of this shard by the state their last decision left them in";
        let gauges = if by_namespace {
            let family = Family::<NamespaceStateLabels, Gauge>::default();
            registry.register("swfs", help, family.clone());
            Gauges::ByNamespace(family)
        } else {
            let family = Family::<StateLabel, Gauge>::default();
            // Every state exists from the start, at 0: dashboards and alerts read them all.
            for state in SwfState::ALL {
                drop(family.get_or_create(&StateLabel {
                    state: state.label().to_owned(),
                }));
            }
            registry.register("swfs", help, family.clone());
            Gauges::ByState(family)
        };
        SwfFleet {
            gauges,
            facts: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Facts> {
        self.facts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets the state of `namespace/name` after a decision; `state` None forgets it (gone).
    pub fn record(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        state: Option<SwfState>,
        detail: &str,
    ) {
        let mut facts = self.lock();
        let (namespace, name) = (capped(namespace, NAME_MAX), capped(name, NAME_MAX));
        let Some(state) = state else {
            self.forget_locked(&mut facts, &namespace, &name);
            return;
        };
        let detail = state.is_finding().then(|| capped(detail, DETAIL_MAX));
        let in_namespace = facts.swfs.entry(namespace.clone()).or_default();
        let since = match in_namespace.get(&name) {
            Some(before) if before.state == state && before.detail == detail => before.since,
            _ => unix_now(),
        };
        let fact = SwfFact {
            uid: capped(uid, NAME_MAX),
            state,
            detail,
            since,
        };
        let before = in_namespace.insert(name, fact.clone());
        if before.as_ref().map(|b| b.state) != Some(state) {
            if let Some(before) = &before {
                self.add(&namespace, before.state, -1);
            }
            self.add(&namespace, state, 1);
        }
        let finding_changed = match &before {
            Some(before) => {
                (before.state.is_finding() || state.is_finding())
                    && (before.state != state || before.detail != fact.detail)
            }
            None => state.is_finding(),
        };
        if finding_changed {
            facts.changed.insert(namespace);
        }
    }

    /// `namespace/name` was deleted.
    pub fn forget(&self, namespace: &str, name: &str) {
        let mut facts = self.lock();
        self.forget_locked(&mut facts, namespace, name);
    }

    /// After a watch listed again (it failed, or started): forgets what it no longer holds,
    /// deleted while it was not watching. `scope` is the watch's namespace (all when None).
    pub fn prune(&self, scope: Option<&str>, present: impl Fn(&str, &str) -> bool) {
        let mut facts = self.lock();
        let gone: Vec<(Box<str>, Box<str>)> = facts
            .swfs
            .iter()
            .filter(|(namespace, _)| scope.is_none_or(|scope| scope == &***namespace))
            .flat_map(|(namespace, swfs)| {
                swfs.keys()
                    .filter(|name| !present(namespace, name))
                    .map(move |name| (namespace.clone(), name.clone()))
            })
            .collect();
        for (namespace, name) in gone {
            self.forget_locked(&mut facts, &namespace, &name);
        }
    }

    fn forget_locked(&self, facts: &mut Facts, namespace: &str, name: &str) {
        let Some(swfs) = facts.swfs.get_mut(namespace) else {
            return;
        };
        let Some(gone) = swfs.remove(name) else {
            return;
        };
        if swfs.is_empty() {
            facts.swfs.remove(namespace);
        }
        self.add(namespace, gone.state, -1);
        if gone.state.is_finding() {
            facts.changed.insert(namespace.into());
        }
    }

    fn add(&self, namespace: &str, state: SwfState, by: i64) {
        match &self.gauges {
            Gauges::ByState(family) => {
                let label = StateLabel {
                    state: state.label().to_owned(),
                };
                family.get_or_create(&label).inc_by(by);
            }
            Gauges::ByNamespace(family) => {
                let label = NamespaceStateLabels {
                    swf_namespace: namespace.to_owned(),
                    state: state.label().to_owned(),
                };
                let now = family.get_or_create(&label).inc_by(by) + by;
                // A namespace's series go with its last SWF in that state: bounded by what exists.
                if now <= 0 {
                    family.remove(&label);
                }
            }
        }
    }

    /// SWFs by state, over every namespace.
    pub fn tally(&self) -> Tally {
        let facts = self.lock();
        let mut tally = Tally::default();
        for fact in facts.swfs.values().flat_map(BTreeMap::values) {
            tally.add(fact.state);
        }
        tally
    }

    /// Namespaces whose findings changed since the last call.
    pub fn take_changed(&self) -> BTreeSet<Box<str>> {
        std::mem::take(&mut self.lock().changed)
    }

    /// Namespaces with SWFs known now.
    pub fn namespaces(&self) -> BTreeSet<Box<str>> {
        self.lock().swfs.keys().cloned().collect()
    }

    /// The SWFs of `namespace`: their tally, and `(name, fact)` of each finding.
    pub fn findings(&self, namespace: &str) -> (Tally, Vec<(Box<str>, SwfFact)>) {
        let facts = self.lock();
        let mut tally = Tally::default();
        let mut found = Vec::new();
        for (name, fact) in facts.swfs.get(namespace).into_iter().flatten() {
            tally.add(fact.state);
            if fact.state.is_finding() {
                found.push((name.clone(), fact.clone()));
            }
        }
        (tally, found)
    }
}

pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() as i64)
}

/// `text`, cut to at most `max` bytes on a character boundary.
pub fn capped(text: &str, max: usize) -> Box<str> {
    if text.len() <= max {
        return text.into();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrape(registry: &Registry) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, registry).unwrap();
        out
    }

    #[test]
    fn each_swf_counts_once_under_its_latest_state_and_leaves_with_its_deletion() {
        let mut registry = Registry::with_prefix("pipewarden");
        let fleet = SwfFleet::register(&mut registry, false);
        fleet.record("a", "one", "u1", Some(SwfState::WouldRebuild), "16 fields");
        fleet.record("a", "two", "u2", Some(SwfState::WouldRebuild), "16 fields");
        fleet.record("b", "one", "u3", Some(SwfState::UpToDate), "");
        fleet.record("a", "one", "u1", Some(SwfState::Rebuilt), "");
        let text = scrape(&registry);
        for line in [
            "pipewarden_swfs{state=\"would-rebuild\"} 1",
            "pipewarden_swfs{state=\"rebuilt\"} 1",
            "pipewarden_swfs{state=\"up-to-date\"} 1",
            "pipewarden_swfs{state=\"failed\"} 0",
        ] {
            assert!(text.contains(line), "no {line} in\n{text}");
        }
        assert_eq!(
            fleet.take_changed(),
            BTreeSet::from(["a".into()]),
            "only a's findings changed"
        );
        fleet.forget("a", "two");
        assert!(scrape(&registry).contains("pipewarden_swfs{state=\"would-rebuild\"} 0"));
        assert_eq!(fleet.take_changed(), BTreeSet::from(["a".into()]));
        let (tally, found) = fleet.findings("a");
        assert_eq!((tally.total(), found.len()), (1, 0));
        assert_eq!(fleet.tally().total(), 2);
    }

    #[test]
    fn a_fresh_list_drops_what_was_deleted_while_the_watch_was_down() {
        let mut registry = Registry::with_prefix("pipewarden");
        let fleet = SwfFleet::register(&mut registry, true);
        for (namespace, name) in [("ns", "kept"), ("ns", "deleted"), ("other", "x")] {
            fleet.record(namespace, name, name, Some(SwfState::NotRebuildable), "ref");
        }
        assert_eq!(fleet.tally().total(), 3);
        // The watch of "ns" failed and listed again; "deleted" is no longer there.
        fleet.prune(Some("ns"), |_, name| name == "kept");
        assert_eq!(fleet.tally().get(SwfState::NotRebuildable), 2);
        let text = scrape(&registry);
        assert!(
            text.contains("pipewarden_swfs{swf_namespace=\"ns\",state=\"not-rebuildable\"} 1"),
            "{text}"
        );
        fleet.forget("ns", "kept");
        assert!(
            !scrape(&registry).contains("swf_namespace=\"ns\""),
            "an empty namespace leaves the scrape"
        );
        fleet.prune(None, |_, _| false);
        assert_eq!(fleet.tally().total(), 0);
    }

    #[test]
    fn tenant_strings_are_capped() {
        let mut registry = Registry::default();
        let fleet = SwfFleet::register(&mut registry, false);
        let long = "é".repeat(400);
        fleet.record("ns", "x", "u", Some(SwfState::Failed), &long);
        let (_, found) = fleet.findings("ns");
        let detail = found[0].1.detail.as_deref().unwrap();
        assert!(detail.len() <= DETAIL_MAX && detail.starts_with('é'));
    }
}
