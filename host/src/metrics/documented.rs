//! Every metric on /metrics is documented: its name and label names are a row of the table in
//! `docs/operate/monitoring.md`, and every metric the dashboards and Prometheus rules under
//! `deploy/` read exists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::Metrics;

type Labelled = BTreeMap<String, BTreeSet<String>>;

/// Each metric as PromQL names it (a counter with `_total`), with its label names.
fn exposed() -> Labelled {
    let metrics = Metrics::new();
    metrics.swf.show_every_series();
    metrics.scale.show_every_series();
    metrics.exit.show_every_series();
    metrics.policy.show_every_series();
    metrics.watch.show_every_series();
    metrics.reports.show_every_series();
    metrics.info.show_every_series();
    let text = metrics.encode();
    // Each family by its `# TYPE` name, as PromQL names it (a counter with `_total`).
    let mut shown = BTreeMap::new();
    for line in text.lines() {
        if let Some(typed) = line.strip_prefix("# TYPE ") {
            let (name, kind) = typed.split_once(' ').expect("# TYPE name kind");
            let promql = match kind {
                "counter" => format!("{name}_total"),
                _ => name.to_owned(),
            };
            shown.insert(name.to_owned(), promql);
        }
    }
    let mut exposed: Labelled = shown
        .values()
        .map(|n| (n.clone(), BTreeSet::new()))
        .collect();
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let sample = line.split(['{', ' ']).next().unwrap_or_default();
        let family = shown
            .keys()
            .filter(|name| sample.starts_with(name.as_str()))
            .max_by_key(|name| name.len())
            .unwrap_or_else(|| panic!("{sample} belongs to no # TYPE"));
        let names = label_names(line).into_iter().filter(|name| name != "le");
        exposed
            .entry(shown[family].clone())
            .or_default()
            .extend(names);
    }
    exposed
}

/// The label names of a sample line, its quoted values skipped.
fn label_names(line: &str) -> Vec<String> {
    let Some(start) = line.find('{') else {
        return Vec::new();
    };
    let (mut names, mut name, mut quoted, mut escaped) = (Vec::new(), String::new(), false, false);
    for ch in line[start + 1..].chars() {
        match (quoted, ch) {
            (true, _) if escaped => escaped = false,
            (true, '\\') => escaped = true,
            (true, '"') => quoted = false,
            (true, _) => {}
            (false, '"') => quoted = true,
            (false, '=') => names.push(std::mem::take(&mut name)),
            (false, ',') => {}
            (false, '}') => break,
            (false, ch) => name.push(ch),
        }
    }
    names
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The rows of the metrics table: `` | `pipewarden_name{label,label}` | what | ``.
fn documented() -> Labelled {
    let path = repo().join("docs/operate/monitoring.md");
    let text = std::fs::read_to_string(&path).expect("docs/operate/monitoring.md");
    let mut rows = Labelled::new();
    for line in text.lines() {
        let Some(cell) = line.strip_prefix("| `pipewarden_") else {
            continue;
        };
        let cell = &cell[..cell.find('`').expect("a closing backtick")];
        let (name, labels) = match cell.split_once('{') {
            Some((name, labels)) => (name, labels.trim_end_matches('}')),
            None => (cell, ""),
        };
        let labels = labels
            .split(',')
            .filter(|l| !l.is_empty())
            .map(str::to_owned);
        let row = rows.entry(format!("pipewarden_{name}")).or_default();
        row.extend(labels);
    }
    rows
}

/// Every `pipewarden_...` metric name in the files under `deploy/`.
fn used_in_deploy() -> BTreeMap<String, PathBuf> {
    let mut used = BTreeMap::new();
    let mut dirs = vec![repo().join("deploy")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("deploy/").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            for (at, _) in text.match_indices("pipewarden_") {
                let name: String = text[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                used.entry(name).or_insert_with(|| path.clone());
            }
        }
    }
    used
}

#[test]
fn every_metric_and_its_labels_are_in_the_monitoring_table() {
    let (exposed, documented) = (exposed(), documented());
    for (name, labels) in &exposed {
        let listed: Vec<_> = labels.iter().map(String::as_str).collect();
        let row = format!("| `{name}{{{}}}` | ... |", listed.join(","));
        match documented.get(name) {
            None => panic!("{name} is not in the table of docs/operate/monitoring.md: add {row}"),
            Some(doc) => assert_eq!(
                doc, labels,
                "{name}: the table of docs/operate/monitoring.md lists other labels; write {row}"
            ),
        }
    }
    for name in documented.keys() {
        assert!(
            exposed.contains_key(name),
            "docs/operate/monitoring.md lists {name}, which /metrics does not have"
        );
    }
}

#[test]
fn every_metric_the_dashboards_and_rules_read_exists() {
    let exposed = exposed();
    let histograms = ["_bucket", "_sum", "_count"];
    let exists = |name: &str| {
        exposed.contains_key(name)
            || histograms.iter().any(|suffix| {
                name.strip_suffix(suffix)
                    .is_some_and(|base| exposed.contains_key(base))
            })
    };
    let used = used_in_deploy();
    assert!(used.contains_key("pipewarden_leader"), "{used:?}");
    for (name, path) in &used {
        assert!(
            exists(name),
            "{} reads {name}, which /metrics does not have",
            path.display()
        );
    }
}

#[test]
fn label_names_skip_quoted_values() {
    let line = r#"x{a="1,b=2",c="\"}"} 1"#;
    assert_eq!(label_names(line), ["a", "c"]);
}
