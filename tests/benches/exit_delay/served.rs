//! When the API server first served each workflow complete, on a plain watch of its own opened
//! by the bench straight on the API server (not pipewarden's, not through the stale-copy
//! proxy): the first event in which the workflow is complete as Argo means it (phase
//! Succeeded, Failed or Error with `status.finishedAt`: `support::is_complete`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Result;
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher;
use kube::{Client, ResourceExt as _};

use crate::sightings;
use crate::support::{SHAPE_LABEL, completion_key, is_complete, workflows};

/// A completion as first served: its key (as pipewarden sends it) and when.
#[derive(Clone)]
pub struct Served {
    pub key: String,
    pub at: Instant,
}

/// First complete sightings, by workflow name.
#[derive(Clone, Default)]
pub struct FirstServed(Arc<Mutex<BTreeMap<String, Served>>>);

impl FirstServed {
    /// Watches `namespace` from now on and waits until the watch runs.
    pub async fn watch(client: &Client, namespace: &str) -> Result<FirstServed> {
        let served = FirstServed::default();
        let api: Api<DynamicObject> = workflows(client, namespace);
        let record = served.clone();
        let config = watcher::Config::default().labels(SHAPE_LABEL);
        sightings::watch(api, config, move |w, at| record.note(w, at)).await?;
        Ok(served)
    }

    fn note(&self, workflow: &DynamicObject, at: Instant) {
        if !is_complete(workflow) {
            return;
        }
        let Ok(key) = completion_key(workflow) else {
            return;
        };
        let mut all = self.0.lock().expect("first served");
        all.entry(workflow.name_any()).or_insert(Served { key, at });
    }

    /// Those of `names` served complete so far.
    pub fn of(&self, names: &[String]) -> BTreeMap<String, Served> {
        let all = self.0.lock().expect("first served");
        names
            .iter()
            .filter_map(|name| Some((name.clone(), all.get(name)?.clone())))
            .collect()
    }
}
