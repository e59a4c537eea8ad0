//! Native compile and recover times on IRs of about 10 KB and on the largest one.
//!
//! `cargo test -p kfp-compiler --release --test compiler -- --ignored --nocapture timing::`

use std::time::{Duration, Instant};

use kfp_compiler::{CompileOptions, Release, recover_ir};

use crate::support::*;

const CASES: [&str; 4] = [
    "collected_parameters",
    "pipeline_with_parallelfor_pipeline_param",
    "iris_pipeline_compiled",
    "xgboost_sample_pipeline",
];

#[test]
#[ignore = "timing: run with --release --ignored --nocapture"]
fn compile_and_recover_times() {
    let dir = upstream_dir("kfp-2.17.0");
    let options = CompileOptions::kfp_2_17_0_install();
    let mut worst_ten_kb = Duration::ZERO;
    for case in CASES {
        let path = ir_path(&dir, case);
        let size = std::fs::metadata(&path).expect("IR file").len();
        let ir = load_ir(&path);
        let workflow = ir.compile(&options).expect("compiles");
        let compile = mean(|| {
            std::hint::black_box(ir.compile(&options).unwrap());
        });
        let recover = mean(|| {
            std::hint::black_box(recover_ir(&workflow).unwrap());
        });
        println!(
            "{case:<42} IR {:>5.1} KB  compile {:>7.1} µs  recover {:>7.1} µs",
            size as f64 / 1024.0,
            compile.as_secs_f64() * 1e6,
            recover.as_secs_f64() * 1e6
        );
        if size < 12 * 1024 {
            worst_ten_kb = worst_ten_kb.max(compile);
        }
    }
    if !cfg!(debug_assertions) {
        assert!(
            worst_ten_kb < Duration::from_millis(1),
            "compiling a 10 KB IR took {worst_ten_kb:?}"
        );
    }
}

/// The same IRs compiled for each release under its default install, beside 2.17.0: what the
/// release table and the features it switches cost (IRs a release refuses are marked).
#[test]
#[ignore = "timing: run with --release --ignored --nocapture"]
fn compile_times_per_release() {
    let dir = upstream_dir("kfp-2.17.0");
    let mut header = format!("{:<42} {:>8}", "IR", "size");
    for release in Release::ALL {
        header.push_str(&format!(" {:>10}", release.as_str()));
    }
    println!("{header}   (µs per compile, default install of each release)");
    for case in CASES {
        let path = ir_path(&dir, case);
        let size = std::fs::metadata(&path).expect("IR file").len();
        let ir = load_ir(&path);
        let mut line = format!("{case:<42} {:>5.1} KB", size as f64 / 1024.0);
        for release in Release::ALL {
            let options = CompileOptions::install(release);
            if let Err(e) = ir.compile(&options) {
                line.push_str(&format!(" {:>10}", "refused"));
                eprintln!("{case} for {release}: {e}");
                continue;
            }
            let compile = mean(|| {
                std::hint::black_box(ir.compile(&options).unwrap());
            });
            line.push_str(&format!(" {:>10.1}", compile.as_secs_f64() * 1e6));
        }
        println!("{line}");
    }
}

/// Mean time of `run` over about half a second, after a warm-up.
fn mean(mut run: impl FnMut()) -> Duration {
    for _ in 0..20 {
        run();
    }
    let start = Instant::now();
    let mut iterations = 0u32;
    while start.elapsed() < Duration::from_millis(500) {
        run();
        iterations += 1;
    }
    start.elapsed() / iterations
}
