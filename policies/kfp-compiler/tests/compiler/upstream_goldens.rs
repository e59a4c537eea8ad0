//! KFP 2.17.0's own compiler test, replayed: every IR of `tests/data/upstream/kfp-2.17.0` compiled
//! in the environments upstream's `argo_ginkgo_test.go` uses, compared with its golden.
//!
//! The comparison is stricter than upstream's matcher: after sorting the workflow arguments
//! by name (and taking out the `--cache_disabled` flags of a cache-disabled compile, as
//! upstream's normalisation does), the whole workflow must be equal, argument JSON strings
//! byte for byte and every list in order. The one exception is the order Go gives implicit
//! task dependencies, which is random in Go itself ([`without_go_map_order`]): a case equal
//! only once those lists are sorted passes, and the table says so.

use std::fmt::Write;

use crate::support::*;

enum Verdict {
    Pass,
    /// Equal once the dependency lists Go builds in random map order are sorted.
    PassModuloGoMapOrder,
    Fail(String),
}

impl Verdict {
    fn word(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::PassModuloGoMapOrder => "pass (implicit dependencies in Go's random order)",
            Verdict::Fail(_) => "FAIL",
        }
    }
}

#[test]
fn every_upstream_golden_compiles_identically() {
    let dir = upstream_dir("kfp-2.17.0");
    let cases = case_names(&dir);
    let mut report = String::new();
    let mut table = String::new();
    let mut passed = 0;
    for case in &cases {
        let ir = load_ir(&ir_path(&dir, case));
        let golden =
            comparable(load_yaml(&golden_path(&dir, case)), false).expect("golden is comparable");
        let mut outcomes = Vec::new();
        for environment in environments(case) {
            let outcome = ir
                .compile(&environment.options())
                .map_err(|e| format!("compile error: {e}"))
                .and_then(|workflow| comparable(workflow, environment.cache_disabled));
            let verdict = match outcome {
                Err(message) => Verdict::Fail(format!("    {message}\n")),
                Ok(workflow) if workflow == golden => Verdict::Pass,
                Ok(workflow) => {
                    let workflow = without_go_map_order(workflow);
                    let golden = without_go_map_order(golden.clone());
                    if workflow == golden {
                        Verdict::PassModuloGoMapOrder
                    } else {
                        Verdict::Fail(render_differences(&diff(&golden, &workflow, 8)))
                    }
                }
            };
            if let Verdict::Fail(details) = &verdict {
                let _ = writeln!(report, "FAIL {case} [{}]\n{details}", environment.label());
            }
            outcomes.push((environment.label(), verdict));
        }
        let ok = outcomes.iter().all(|(_, v)| !matches!(v, Verdict::Fail(_)));
        passed += usize::from(ok);
        let runs: Vec<String> = outcomes
            .iter()
            .map(|(label, verdict)| format!("{label}: {}", verdict.word()))
            .collect();
        let _ = writeln!(table, "  {case:<62} {}", runs.join(", "));
    }
    let failed = cases.len() - passed;
    println!(
        "{report}upstream goldens (KFP 2.17.0):\n{table}passed {passed}/{}, failed {failed}",
        cases.len()
    );
    assert_eq!(
        failed,
        0,
        "{failed} of {} upstream goldens differ (details above)",
        cases.len()
    );
}
