//! PromQL as the alert rules and the dashboard write it, read closely enough to check it
//! against a live scrape: brackets balance, durations and functions are PromQL's, and the
//! metrics, the labels grouped or joined on and the label values matched are ones the
//! controller exports (or Prometheus adds to every target). Not a full parser: the rules use
//! selectors, matchers, functions, aggregations with by/on/group_left, comparisons and sets.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, bail, ensure};

/// Labels Prometheus (the Operator's ServiceMonitor scrape) puts on every series of a target.
pub const TARGET_LABELS: [&str; 7] = [
    "namespace",
    "pod",
    "instance",
    "job",
    "service",
    "endpoint",
    "container",
];

const FUNCTIONS: [&str; 22] = [
    "sum",
    "max",
    "min",
    "avg",
    "count",
    "topk",
    "bottomk",
    "rate",
    "irate",
    "increase",
    "delta",
    "changes",
    "resets",
    "absent",
    "absent_over_time",
    "max_over_time",
    "min_over_time",
    "avg_over_time",
    "histogram_quantile",
    "time",
    "clamp_min",
    "vector",
];
const GROUPING: [&str; 6] = [
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];
const OPERATORS: [&str; 4] = ["and", "or", "unless", "bool"];

/// What one expression names.
#[derive(Debug, Default)]
pub struct Query {
    pub metrics: BTreeSet<String>,
    /// Labels in by/without/on/ignoring/group_left/group_right lists.
    pub grouped: BTreeSet<String>,
    /// `label="value"` equality matchers, by metric.
    pub matched: Vec<(String, String, String)>,
    /// Range durations, e.g. `10m`.
    pub ranges: Vec<String>,
}

#[derive(Debug, PartialEq)]
enum Token {
    Ident(String),
    Number,
    Text(String),
    Range(String),
    Punct(char),
    Op,
}

fn tokens(expr: &str) -> Result<Vec<Token>> {
    let chars: Vec<char> = expr.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || "_:".contains(chars[i])) {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
        } else if c.is_ascii_digit() || c == '.' {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            out.push(Token::Number);
        } else if c == '"' || c == '\'' {
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            ensure!(i < chars.len(), "unterminated string in {expr}");
            out.push(Token::Text(chars[start + 1..i].iter().collect()));
            i += 1;
        } else if c == '[' {
            let end = chars[i..].iter().position(|&c| c == ']');
            let Some(end) = end else {
                bail!("unclosed [ in {expr}")
            };
            out.push(Token::Range(chars[i + 1..i + end].iter().collect()));
            i += end + 1;
        } else if "=!<>".contains(c) {
            i += 1;
            if i < chars.len() && "=~".contains(chars[i]) {
                i += 1;
            }
            let op: String = chars[start..i].iter().collect();
            out.push(if op == "=" {
                Token::Punct('=')
            } else {
                Token::Op
            });
        } else if "(){},".contains(c) {
            out.push(Token::Punct(c));
            i += 1;
        } else if "+-*/%^".contains(c) {
            out.push(Token::Op);
            i += 1;
        } else {
            bail!("unexpected {c:?} in {expr}");
        }
    }
    Ok(out)
}

/// Reads `expr`; fails on unbalanced brackets, an unknown function, a bad range or matcher.
pub fn read(expr: &str) -> Result<Query> {
    let tokens = tokens(expr)?;
    let mut query = Query::default();
    let mut depth: Vec<char> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let next = tokens.get(i + 1);
        match &tokens[i] {
            Token::Ident(word)
                if GROUPING.contains(&word.as_str()) && next == Some(&Token::Punct('(')) =>
            {
                i += 2;
                while let Some(Token::Ident(_) | Token::Punct(',')) = tokens.get(i) {
                    if let Token::Ident(label) = &tokens[i] {
                        query.grouped.insert(label.clone());
                    }
                    i += 1;
                }
                ensure!(
                    tokens.get(i) == Some(&Token::Punct(')')),
                    "{word}(...: {expr}"
                );
            }
            // `group_left` with no labels to copy.
            Token::Ident(word) if GROUPING.contains(&word.as_str()) => {}
            Token::Ident(word) if OPERATORS.contains(&word.as_str()) => {}
            Token::Ident(word) if next == Some(&Token::Punct('(')) => {
                ensure!(
                    FUNCTIONS.contains(&word.as_str()),
                    "unknown function {word}"
                );
            }
            // An aggregation with its grouping first: `sum by (watch) (...)`.
            Token::Ident(word) if FUNCTIONS.contains(&word.as_str()) => {
                let grouped = matches!(next, Some(Token::Ident(g)) if g == "by" || g == "without");
                ensure!(grouped, "{word} without its arguments in {expr}");
            }
            Token::Ident(metric) => {
                query.metrics.insert(metric.clone());
                if next == Some(&Token::Punct('{')) {
                    i += 2;
                    while tokens.get(i) != Some(&Token::Punct('}')) {
                        let (Some(Token::Ident(label)), Some(op), Some(Token::Text(value))) =
                            (tokens.get(i), tokens.get(i + 1), tokens.get(i + 2))
                        else {
                            bail!("a matcher in {metric}{{...}}: {expr}");
                        };
                        if *op == Token::Punct('=') {
                            query
                                .matched
                                .push((metric.clone(), label.clone(), value.clone()));
                        }
                        i += 3;
                        if tokens.get(i) == Some(&Token::Punct(',')) {
                            i += 1;
                        }
                    }
                }
            }
            Token::Range(range) => {
                let unit = range.trim_start_matches(|c: char| c.is_ascii_digit());
                ensure!(
                    unit.len() < range.len() && ["ms", "s", "m", "h", "d", "w"].contains(&unit),
                    "range [{range}] in {expr}"
                );
                query.ranges.push(range.clone());
            }
            Token::Punct(open @ ('(' | '{')) => depth.push(*open),
            Token::Punct(close @ (')' | '}')) => {
                let open = if *close == ')' { '(' } else { '{' };
                ensure!(depth.pop() == Some(open), "unbalanced {close} in {expr}");
            }
            _ => {}
        }
        i += 1;
    }
    ensure!(depth.is_empty(), "unclosed {depth:?} in {expr}");
    Ok(query)
}

/// A scrape's series: metric name -> label name -> the values seen.
pub type Series = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// The series of a Prometheus text scrape, with each metric also under its `# TYPE` family's
/// query names (a counter's `_total`, a histogram's `_bucket`, `_sum`, `_count`).
pub fn series(scrape: &str) -> Series {
    let mut found = Series::new();
    for line in scrape.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut words = rest.split_whitespace();
            if let (Some(name), Some(kind)) = (words.next(), words.next()) {
                let suffixes: &[&str] = match kind {
                    "counter" => &["_total"],
                    "histogram" => &["_bucket", "_sum", "_count"],
                    _ => &[""],
                };
                for suffix in suffixes {
                    found.entry(format!("{name}{suffix}")).or_default();
                }
            }
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        let labels = found.entry(line[..name_end].to_owned()).or_default();
        if let Some(body) = line[name_end..]
            .strip_prefix('{')
            .and_then(|b| b.split_once('}'))
        {
            for pair in body.0.split(',').filter(|p| !p.is_empty()) {
                if let Some((label, value)) = pair.split_once('=') {
                    let value = value.trim_matches('"').to_owned();
                    labels.entry(label.to_owned()).or_default().insert(value);
                }
            }
        }
    }
    found
}

/// What in `query` the scrape does not back: metrics not exported, labels grouped on that none
/// of its metrics carry (nor a target), matched values no series has.
pub fn unbacked(query: &Query, exported: &Series) -> Vec<String> {
    let mut missing = Vec::new();
    let mut labels: BTreeSet<&str> = TARGET_LABELS.into_iter().collect();
    for metric in &query.metrics {
        match exported.get(metric) {
            Some(seen) => labels.extend(seen.keys().map(String::as_str)),
            None => missing.push(format!("metric {metric}")),
        }
    }
    for label in &query.grouped {
        if !labels.contains(label.as_str()) {
            missing.push(format!("label {label}"));
        }
    }
    for (metric, label, value) in &query.matched {
        let seen = exported.get(metric).and_then(|labels| labels.get(label));
        if !seen.is_some_and(|values| values.contains(value)) {
            missing.push(format!("series {metric}{{{label}=\"{value}\"}}"));
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_metrics_groupings_and_matchers_and_refuses_what_promql_would() {
        let query = read(
            "max by (shard) (a_leader * on (instance) group_left (shard) a_info) == 1 \
             unless increase(a_loads_total{outcome=\"refused\"}[10m]) > 0 or absent(a_leader)",
        )
        .unwrap();
        let metrics: Vec<&str> = query.metrics.iter().map(String::as_str).collect();
        assert_eq!(metrics, ["a_info", "a_leader", "a_loads_total"]);
        let grouped: Vec<&str> = query.grouped.iter().map(String::as_str).collect();
        assert_eq!(grouped, ["instance", "shard"]);
        assert_eq!(
            query.matched,
            [("a_loads_total".into(), "outcome".into(), "refused".into())]
        );
        for bad in [
            "sum(a",
            "rate(a[10 minutes])",
            "increse(a[5m])",
            "a{outcome}",
            "sum a",
        ] {
            assert!(read(bad).is_err(), "{bad} was read");
        }
    }

    #[test]
    fn a_scrape_backs_what_it_exports_and_names_what_it_does_not() {
        let scrape = "# TYPE a_loads counter\na_loads_total{outcome=\"loaded\"} 1\n\
                      # TYPE a_info gauge\na_info{shard=\"0\"} 1\n";
        let exported = series(scrape);
        let query =
            read("sum by (shard, pod) (a_info) + a_loads_total{outcome=\"refused\"}").unwrap();
        assert_eq!(
            unbacked(&query, &exported),
            ["series a_loads_total{outcome=\"refused\"}"]
        );
        let query = read("max by (watch) (a_gone)").unwrap();
        assert_eq!(
            unbacked(&query, &exported),
            ["metric a_gone", "label watch"]
        );
    }
}
