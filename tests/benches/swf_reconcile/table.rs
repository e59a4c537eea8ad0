//! The bench's rows and its table.

use pipewarden_tests::{ControlPlane, procfs};

use crate::child::Measured;
use pipewarden_tests::swf_support::side::FleetKind;

/// CPU seconds kube-apiserver and etcd used over one run.
#[derive(Default, Clone, Copy)]
pub struct Servers {
    pub apiserver_cpu: f64,
    pub etcd_cpu: f64,
}

/// The servers' CPU time when a run started; [`ServerClock::stop`] gives what the run used.
pub struct ServerClock {
    pids: [Option<String>; 2],
    before: [f64; 2],
}

impl ServerClock {
    pub fn start(control_plane: &ControlPlane) -> ServerClock {
        let pids = control_plane.server_pids().map(|(_, pid)| pid);
        let before = [0, 1].map(|i| cpu(&pids[i]));
        ServerClock { pids, before }
    }

    pub fn stop(self) -> Servers {
        let used = [0, 1].map(|i| cpu(&self.pids[i]) - self.before[i]);
        Servers {
            apiserver_cpu: used[0],
            etcd_cpu: used[1],
        }
    }
}

fn cpu(pid: &Option<String>) -> f64 {
    pid.as_deref().map_or(0.0, procfs::cpu_seconds)
}

pub struct Row {
    pub run: String,
    pub measured: Measured,
    /// The KFP-path run this one is compared with.
    pub baseline: Option<usize>,
    /// The servers' CPU over this run; a shard's own row has none (its shards ran together).
    pub servers: Option<Servers>,
}

impl Row {
    pub fn new(run: &str, measured: Measured, baseline: Option<usize>, servers: Servers) -> Self {
        let servers = (servers.apiserver_cpu + servers.etcd_cpu > 0.0).then_some(servers);
        Row {
            run: run.to_owned(),
            measured,
            baseline,
            servers,
        }
    }

    /// Processes that ran at the same time, as one run: the longest wall time, the sum of CPU
    /// and requests, the largest peak RSS.
    pub fn sum(run: &str, rows: &[Row], servers: Servers) -> Self {
        let of = |f: fn(&Measured) -> usize| rows.iter().map(|r| f(&r.measured)).sum();
        let measured = Measured {
            wall_secs: rows
                .iter()
                .map(|r| r.measured.wall_secs)
                .fold(0.0, f64::max),
            cpu_secs: rows.iter().map(|r| r.measured.cpu_secs).sum(),
            swf_reads: of(|m| m.swf_reads),
            swf_writes: of(|m| m.swf_writes),
            events: of(|m| m.events),
            requests: of(|m| m.requests),
            bytes_written: rows.iter().map(|r| r.measured.bytes_written).sum(),
            peak_rss_kib: rows
                .iter()
                .map(|r| r.measured.peak_rss_kib)
                .max()
                .unwrap_or(0),
            rss_after_pass_kib: Vec::new(),
            cpu_secs_per_pass: Vec::new(),
            written: Vec::new(),
        };
        Row::new(
            run,
            measured,
            rows.first().and_then(|r| r.baseline),
            servers,
        )
    }
}

impl Row {
    /// Controller, kube-apiserver and etcd CPU together: what the whole cluster spent.
    fn cluster_cpu(&self) -> Option<f64> {
        let servers = self.servers.as_ref()?;
        Some(self.measured.cpu_secs + servers.apiserver_cpu + servers.etcd_cpu)
    }
}

pub fn print(count: usize, fleet: FleetKind, mix: &str, rows: &[Row]) {
    let per_swf = |n: usize| format!("{:.3}", n as f64 / count as f64);
    let per_1k = |secs: f64| format!("{:.2}", secs * 1000.0 / count as f64);
    let mib = |kib: u64| format!("{:.0} MiB", kib as f64 / 1024.0);
    let headers = [
        "run",
        "wall",
        "vs KFP",
        "CPU-s/1k SWFs",
        "CPU vs KFP",
        "apiserver CPU-s/1k",
        "etcd CPU-s/1k",
        "cluster CPU-s/1k",
        "cluster vs KFP",
        "SWF reads",
        "SWF writes",
        "Events",
        "requests/SWF",
        "KB written/SWF",
        "peak RSS",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let m = &row.measured;
            let ratio = |of: fn(&Measured) -> f64| {
                row.baseline.map_or("-".to_owned(), |b| {
                    format!("{:.2}x", of(m) / of(&rows[b].measured))
                })
            };
            let server = |of: fn(&Servers) -> f64| {
                row.servers.as_ref().map_or("-".into(), |s| per_1k(of(s)))
            };
            let cluster_ratio = row
                .baseline
                .and_then(|b| Some(row.cluster_cpu()? / rows[b].cluster_cpu()?))
                .map_or("-".to_owned(), |r| format!("{r:.2}x"));
            vec![
                row.run.clone(),
                format!("{:.2} s", m.wall_secs),
                ratio(|m| m.wall_secs),
                per_1k(m.cpu_secs),
                ratio(|m| m.cpu_secs),
                server(|s| s.apiserver_cpu),
                server(|s| s.etcd_cpu),
                row.cluster_cpu().map_or("-".into(), per_1k),
                cluster_ratio,
                m.swf_reads.to_string(),
                m.swf_writes.to_string(),
                m.events.to_string(),
                per_swf(m.requests),
                format!("{:.1}", m.bytes_written as f64 / 1024.0 / count as f64),
                mib(m.peak_rss_kib),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..headers.len())
        .map(|i| {
            cells
                .iter()
                .map(|c| c[i].len())
                .chain([headers[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[&str]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", padded.join("  ").trim_end());
    };
    println!(
        "\nReconciling {count} SWFs ({} fleet: {mix}):\n",
        fleet.name()
    );
    line(&headers);
    for row in &cells {
        line(&row.iter().map(String::as_str).collect::<Vec<_>>());
    }
    print_rounds(rows);
    if let Some(restart) = rows
        .iter()
        .find(|r| r.measured.rss_after_pass_kib.len() > 1)
    {
        let after: Vec<String> = restart
            .measured
            .rss_after_pass_kib
            .iter()
            .map(|kib| mib(*kib))
            .collect();
        let cpu: Vec<String> = restart
            .measured
            .cpu_secs_per_pass
            .iter()
            .map(|secs| format!("{secs:.2}"))
            .collect();
        println!(
            "\n{}: RSS after each of {} passes: {}; CPU-s of each pass (later ones are resyncs): {}",
            restart.run,
            after.len(),
            after.join(", "),
            cpu.join(", ")
        );
    }
}

/// With more than one round, the median and range of pipewarden's first pass against the KFP
/// path's pass it ran beside: the machine's speed drifts between minutes, so a ratio is only
/// taken within a round.
fn print_rounds(rows: &[Row]) {
    let first_passes: Vec<(&Measured, &Measured)> = rows
        .iter()
        .filter(|row| row.run.starts_with(FIRST_PASS))
        .filter_map(|row| Some((&row.measured, &rows[row.baseline?].measured)))
        .collect();
    if first_passes.len() < 2 {
        return;
    }
    let spread = |of: fn(&Measured) -> f64| {
        let mut ratios: Vec<f64> = first_passes.iter().map(|(m, b)| of(m) / of(b)).collect();
        ratios.sort_by(f64::total_cmp);
        let middle = ratios.len() / 2;
        let median = if ratios.len().is_multiple_of(2) {
            (ratios[middle - 1] + ratios[middle]) / 2.0
        } else {
            ratios[middle]
        };
        let (low, high) = (ratios[0], ratios[ratios.len() - 1]);
        format!("median {median:.2}x ({low:.2}x to {high:.2}x)")
    };
    println!(
        "\npipewarden's first pass over {} rounds, each beside its own KFP-path pass: \
         CPU {}, wall {}",
        first_passes.len(),
        spread(|m| m.cpu_secs),
        spread(|m| m.wall_secs),
    );
}

/// The rows of pipewarden's first passes start so (one per round).
pub const FIRST_PASS: &str = "pipewarden, first pass";
