//! A fleet of ScheduledWorkflows that looks like a real install's, for the benches: made from
//! the per-release data under `tests/data/upstream` (every IR of each release's tree, as that
//! release's own compiler wrote it), spread over namespaces, in a stated mix. The same seed,
//! count and target always give the same fleet, one SWF at a time (nothing holds the whole
//! fleet), so a bench's children can rebuild their jobs without being sent them.
//!
//! The mix, by each SWF's index (a hash of the seed and the index, not a shuffle):
//! - 60% **stale**: an IR as an older release's API server wrote it (2.14.4, 2.15.0, 2.16.0
//!   or 2.16.1, whichever holds the same IR byte for byte), which the target renders anew;
//! - 30% **current**: as the target release's own API server wrote it: nothing to write;
//! - 5% **reference-only**: no embedded workflow (KFP compiles it at run time);
//! - 5% **not rebuildable**: a workflow overwritten as in KFP #11296's reproduction.
//!
//! Sizes are as the data has them: the compiled workflows run from 2 KB to about 500 KB.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use kube::api::DynamicObject;
use serde_json::{Value, json};

use super::{fixture, repo_path};

/// Namespaces a fleet is spread over.
pub const NAMESPACES: usize = 50;
/// The account a recurring run's SWF names (a profile's default editor).
const JOB_ACCOUNT: &str = "default-editor";
/// The releases whose data an SWF may come from, oldest first, and their data folders.
const RELEASES: [(&str, &str); 5] = [
    ("2.14.4", "kfp-2.14.4"),
    ("2.15.0", "kfp-2.15.0"),
    ("2.16.0", "kfp-2.16.0"),
    ("2.16.1", "kfp-2.16.1"),
    ("2.17.0", "kfp-2.17.0-exact"),
];

/// What one SWF of the fleet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Written by an older release; the target renders it anew.
    Stale {
        by: &'static str,
    },
    /// Written by the target release: up to date.
    Current,
    ReferenceOnly,
    NotRebuildable,
}

impl Kind {
    pub fn label(self) -> &'static str {
        match self {
            Kind::Stale { .. } => "stale",
            Kind::Current => "current",
            Kind::ReferenceOnly => "reference-only",
            Kind::NotRebuildable => "not-rebuildable",
        }
    }
}

/// One IR, and what each release compiled from it (compact JSON).
struct Case {
    name: String,
    ir: PathBuf,
    compiled: BTreeMap<&'static str, String>,
}

/// The data a fleet is made from, for one target release.
pub struct Fleet {
    target: &'static str,
    cases: Vec<Case>,
    seed: u64,
    /// The SWF fixtures jobs are made from: as KFP 2.17 writes one, reference-only, corrupted.
    written: DynamicObject,
    reference_only: DynamicObject,
    corrupted: DynamicObject,
}

/// One SWF of the fleet, and the job row KFP's API server keeps for it.
pub struct Job {
    pub namespace: String,
    pub name: String,
    pub kind: Kind,
    /// The pipeline the job row stores (KFP's own reconcile compiles it); None for a
    /// reference-only SWF, whose job stores none.
    pub ir: Option<PathBuf>,
    /// The job row's service account. Before 2.17.0 the API server embedded the compile's
    /// account and wrote it to the SWF; the bench takes the job row to hold the account its SWF
    /// carries, which is all a controller watching SWFs can read.
    pub account: String,
    pub swf: DynamicObject,
}

impl Fleet {
    /// The fleet for `target` (a release with a data folder), with `seed`.
    pub fn load(target: &'static str, seed: u64) -> Result<Fleet> {
        let mut by_ir: BTreeMap<String, Case> = BTreeMap::new();
        let position = RELEASES
            .iter()
            .position(|(release, _)| *release == target)
            .with_context(|| format!("no data folder for KFP {target}"))?;
        for (release, folder) in &RELEASES[..=position] {
            let dir = repo_path(&format!("tests/data/upstream/{folder}"));
            let index = std::fs::read_to_string(dir.join("index.json"))?;
            let entries: Vec<Value> = serde_json::from_str(&index)?;
            for entry in entries {
                let field = |name: &str| entry[name].as_str().unwrap_or_default().to_owned();
                let text = std::fs::read_to_string(dir.join(field("compiled")))?;
                let compact = serde_json::from_str::<Value>(&text)?.to_string();
                let case = by_ir.entry(field("sha256")).or_insert_with(|| Case {
                    name: field("case"),
                    ir: dir.join(field("ir")),
                    compiled: BTreeMap::new(),
                });
                case.compiled.insert(release, compact);
            }
        }
        // Only IRs the target compiled: the others have no target compile to compare with.
        let cases: Vec<Case> = by_ir
            .into_values()
            .filter(|case| case.compiled.contains_key(target))
            .collect();
        anyhow::ensure!(!cases.is_empty(), "no data for KFP {target}");
        Ok(Fleet {
            target,
            cases,
            seed,
            written: fixture("kfp-2.17")?,
            reference_only: fixture("kfp-reference-only")?,
            corrupted: fixture("kfp-2.3-corrupted")?,
        })
    }

    pub fn target(&self) -> &'static str {
        self.target
    }

    /// The namespaces of a fleet whose namespaces start with `prefix`.
    pub fn namespaces(prefix: &str) -> Vec<String> {
        (0..NAMESPACES)
            .map(|n| format!("{prefix}-{n:02}"))
            .collect()
    }

    /// What SWF `index` of the fleet is, and the IR case it carries.
    fn draw(&self, index: usize) -> (Kind, &Case) {
        let draw = |salt: u64| mix(self.seed ^ salt.wrapping_mul(0x9e37_79b9), index as u64);
        let case = &self.cases[(draw(1) % self.cases.len() as u64) as usize];
        let older: Vec<&'static str> = case
            .compiled
            .keys()
            .copied()
            .filter(|release| *release != self.target)
            .collect();
        let kind = match draw(2) % 100 {
            0..60 if !older.is_empty() => Kind::Stale {
                by: older[(draw(3) % older.len() as u64) as usize],
            },
            0..90 => Kind::Current,
            90..95 => Kind::ReferenceOnly,
            _ => Kind::NotRebuildable,
        };
        (kind, case)
    }

    /// What SWF `index` of the fleet is.
    pub fn kind(&self, index: usize) -> Kind {
        self.draw(index).0
    }

    /// SWF `index` of the fleet, in the namespaces named with `prefix`.
    pub fn job(&self, prefix: &str, index: usize) -> Result<Job> {
        let (kind, case) = self.draw(index);
        let namespace = format!("{prefix}-{:02}", index % NAMESPACES);
        let name = format!("{}-{index:05}", dns_name(&case.name));
        let written = |release: &str| {
            let workflow = wrapped(
                serde_json::from_str(&case.compiled[release])?,
                release,
                &namespace,
                JOB_ACCOUNT,
            );
            let mut swf = placed(self.written.clone(), &namespace, &name);
            swf.metadata.annotations = None;
            swf.data["spec"]["serviceAccount"] = workflow["spec"]["serviceAccountName"].clone();
            swf.data["spec"]["workflow"] = json!({"spec": workflow.to_string()});
            anyhow::Ok(swf)
        };
        let swf = match kind {
            Kind::Stale { by } => written(by)?,
            Kind::Current => written(self.target)?,
            Kind::ReferenceOnly => placed(self.reference_only.clone(), &namespace, &name),
            Kind::NotRebuildable => placed(self.corrupted.clone(), &namespace, &name),
        };
        let account = swf.data["spec"]["serviceAccount"]
            .as_str()
            .unwrap_or(JOB_ACCOUNT)
            .to_owned();
        Ok(Job {
            ir: (kind != Kind::ReferenceOnly).then(|| case.ir.clone()),
            account,
            namespace,
            name,
            kind,
            swf,
        })
    }

    /// The target release's compile of the job's IR, as its API server embeds it: what every
    /// stale or current SWF holds after a pass.
    pub fn target_workflow(&self, job: &Job) -> Option<Value> {
        let ir = job.ir.as_ref()?;
        let case = self.cases.iter().find(|case| &case.ir == ir)?;
        let compiled: Value = serde_json::from_str(&case.compiled[self.target]).ok()?;
        Some(wrapped(compiled, self.target, &job.namespace, &job.account))
    }
}

/// The workflow `release`'s API server embeds in an SWF for `compile`: the SWF's namespace, the
/// recurring run's service account from 2.17.0 on (kubeflow/pipelines#13325; before, the
/// compile's), `sidecar.istio.io/inject: "false"` on each template without one
/// (`backend/src/apiserver/template/v2_template.go`).
pub fn wrapped(mut compile: Value, release: &str, namespace: &str, account: &str) -> Value {
    compile["metadata"]["namespace"] = json!(namespace);
    if release >= "2.17.0" {
        compile["spec"]["serviceAccountName"] = json!(account);
    }
    for template in compile["spec"]["templates"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        let annotations = &mut template["metadata"]["annotations"];
        if annotations.get("sidecar.istio.io/inject").is_none() {
            annotations["sidecar.istio.io/inject"] = json!("false");
        }
    }
    compile
}

fn placed(mut swf: DynamicObject, namespace: &str, name: &str) -> DynamicObject {
    swf.metadata.name = Some(name.to_owned());
    swf.metadata.namespace = Some(namespace.to_owned());
    swf
}

/// A case name as an object name: lowercase letters, digits and dashes, at most 40 long.
fn dns_name(case: &str) -> String {
    let tail = case.rsplit("__").next().unwrap_or(case);
    let mut name: String = tail
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .collect();
    name.truncate(40);
    name.trim_matches('-').to_owned()
}

/// splitmix64 of `seed` and `index`: the same draw for the same pair, on every machine.
fn mix(seed: u64, index: u64) -> u64 {
    let mut z = seed.wrapping_add(index.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_fleet_in_the_stated_mix() {
        let fleet = Fleet::load("2.17.0", 7).unwrap();
        let kinds: Vec<Kind> = (0..2000).map(|i| fleet.kind(i)).collect();
        let again: Vec<Kind> = (0..2000).map(|i| fleet.kind(i)).collect();
        assert_eq!(kinds, again);
        let share = |label: &str| {
            kinds.iter().filter(|k| k.label() == label).count() as f64 / kinds.len() as f64
        };
        assert!((0.50..0.65).contains(&share("stale")), "{}", share("stale"));
        assert!(
            (0.25..0.40).contains(&share("current")),
            "{}",
            share("current")
        );
        assert!((0.03..0.07).contains(&share("reference-only")));
        assert!((0.03..0.07).contains(&share("not-rebuildable")));
        let by: std::collections::BTreeSet<&str> = kinds
            .iter()
            .filter_map(|k| match k {
                Kind::Stale { by } => Some(*by),
                _ => None,
            })
            .collect();
        assert_eq!(by.len(), 4, "every older release: {by:?}");
        let namespaces: std::collections::BTreeSet<String> = (0..200)
            .map(|i| fleet.job("t", i).unwrap().namespace)
            .collect();
        assert_eq!(namespaces.len(), NAMESPACES);
        assert_eq!(dns_name("frontend__mock_backend__Data_V2"), "data-v2");
    }
}
