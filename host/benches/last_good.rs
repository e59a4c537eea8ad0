//! The gzip level of the last-good record: each level over every workflow KFP 2.17.0's own
//! compiler produced for its test pipelines (`tests/data/upstream/kfp-2.17.0-exact/compiled`,
//! the `spec.workflow` a rebuild records), printing encode time, bytes and how many fit the
//! 64 KiB record, beside level 9.
//!
//! `cargo bench -p pipewarden --bench last_good`

use std::time::{Duration, Instant};

use pipewarden::swf::last_good::{MAX_RECORD_BYTES, RECORD_LEVEL, encode_at};
use serde_json::Value;

const LEVELS: [u32; 8] = [1, 2, 3, 4, 5, 6, 7, 9];
/// Rounds over the whole set; the median round is reported.
const ROUNDS: usize = 5;

fn main() -> anyhow::Result<()> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/upstream/kfp-2.17.0-exact/compiled");
    let mut workflows: Vec<Value> = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "json") {
            workflows.push(serde_json::from_slice(&std::fs::read(&path)?)?);
        }
    }
    let json_bytes: usize = workflows.iter().map(|w| w.to_string().len()).sum();
    println!(
        "last-good record over {} KFP 2.17.0 compiles ({:.1} MB of JSON), median of {ROUNDS} rounds:\n",
        workflows.len(),
        json_bytes as f64 / 1e6
    );
    let measured: Vec<(u32, Duration, usize, usize)> = LEVELS
        .iter()
        .map(|&level| {
            let mut rounds: Vec<Duration> = (0..ROUNDS)
                .map(|_| {
                    let started = Instant::now();
                    for workflow in &workflows {
                        std::hint::black_box(encode_at(workflow, level));
                    }
                    started.elapsed()
                })
                .collect();
            rounds.sort();
            let records: Vec<Option<String>> =
                workflows.iter().map(|w| encode_at(w, level)).collect();
            let fit = records.iter().flatten().count();
            let bytes = records.iter().flatten().map(String::len).sum();
            (level, rounds[ROUNDS / 2], bytes, fit)
        })
        .collect();
    let best = measured.iter().find(|m| m.0 == 9).expect("level 9");
    println!(
        "{:<6} {:>12} {:>10} {:>16} {:>14} {:>9}",
        "level", "time/record", "vs 9", "bytes (fitting)", "fit in 64 KiB", "chosen"
    );
    for (level, time, bytes, fit) in &measured {
        println!(
            "{:<6} {:>9.1} us {:>9.2}x {:>16} {:>9} of {} {:>9}",
            level,
            time.as_secs_f64() * 1e6 / workflows.len() as f64,
            time.as_secs_f64() / best.1.as_secs_f64(),
            bytes,
            fit,
            workflows.len(),
            if *level == RECORD_LEVEL { "<-" } else { "" }
        );
    }
    println!("\n(a record is kept only up to {MAX_RECORD_BYTES} bytes of base64)");
    Ok(())
}
