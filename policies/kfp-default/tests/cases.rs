//! `cases/cases.yaml`, run natively against the policy's Rust exports by the same case runner
//! as `pipewarden test` (which runs the file through the compiled component in the host's
//! tests), so both check the same cases with the same expectations.

use std::path::Path;

use kfp_default::KfpDefault;
use pipewarden::cli::policy_test::{self as test, TestOutput};
use pipewarden::engine::Native;

#[test]
fn every_case_holds_natively() {
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/cases.yaml");
    let files = test::load_files(&[cases]).expect("a well-formed case file");
    let native = Native::<KfpDefault>::new("{}");
    let report = test::run_files(&native, &files, None).expect("settings readable");
    test::print(&report, TestOutput::Table).expect("print the table");
    assert!(
        report.rows.len() >= 50,
        "the case file shrank: {} cases",
        report.rows.len()
    );
    let failures: Vec<String> = report
        .rows
        .iter()
        .filter(|row| !row.outcome.pass)
        .map(|row| format!("{}: {}", row.name, row.outcome.detail))
        .collect();
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
