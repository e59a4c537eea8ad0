//! Policy reports on the local control plane with OpenReports' own `Report` CRD
//! (github.com/openreports/reports-api v0.2.1, copied by tests/control-plane/build.sh): a
//! report-only controller (rebuild policy `disable`, exit mode `observe`), on the base RBAC's
//! ServiceAccount, keeps one report in
//! the namespace, validated strictly by the real API server; it appears with a result per SWF
//! that differs or cannot be served and per observed completion, follows a deletion, and goes
//! when nothing is left to say.

use anyhow::{Context as _, Result, ensure};
use kube::api::DynamicObject;
use kube::{Api, ResourceExt as _};
use pipewarden::controller::reports::report_resource;
use pipewarden_tests::exit_support::{set_phase, submit, timestamp, workflows};
use pipewarden_tests::swf_support::*;
use serde_json::Value;

/// `(rule, result, name)` of each result, and the summary.
fn read(report: &DynamicObject) -> (Vec<(String, String, String)>, Value) {
    let results = report.data["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (
                text(&r["rule"]),
                text(&r["result"]),
                text(&r["resources"][0]["name"]),
            )
        })
        .collect();
    (results, report.data["summary"].clone())
}

/// Waits until the namespace's report reads `wanted` (None: until it is gone).
async fn report_reads(
    reports: &Api<DynamicObject>,
    wanted: Option<&[(&str, &str, &str)]>,
) -> Result<Option<DynamicObject>> {
    let last = std::sync::Mutex::new(None);
    let found = pipewarden_tests::wait::until("the policy report", WAIT, || async {
        let report = reports.get_opt("pipewarden").await?;
        let seen = report.as_ref().map(read);
        *last.lock().unwrap() = seen.clone();
        let matches = match (wanted, &seen) {
            (None, None) => true,
            (Some(wanted), Some((results, _))) => {
                let wanted: Vec<(String, String, String)> = wanted
                    .iter()
                    .map(|(a, b, c)| ((*a).into(), (*b).into(), (*c).into()))
                    .collect();
                *results == wanted
            }
            _ => false,
        };
        Ok(matches.then_some(report))
    })
    .await;
    found.with_context(|| format!("last seen: {:?}", last.lock().unwrap()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespaces_report_appears_follows_the_swfs_and_goes() -> Result<()> {
    let control_plane = pipewarden_tests::shared().await?;
    let client = control_plane.client()?;
    pipewarden_tests::crds::install_openreports(&client).await?;
    let namespace = control_plane.ns().await?;
    seed(&client, &namespace, "kfp-2.3", "stale", 2).await?;
    seed(&client, &namespace, "kfp-reference-only", "reference", 1).await?;
    let api = workflows(&client, &namespace);
    let running = set_phase(&api, &submit(&api, "etl").await?, "Running", None).await?;
    set_phase(&api, &running, "Succeeded", Some(&timestamp(0))).await?;
    // On the base RBAC's ServiceAccount: the verbs it grants are all the reports need.
    pipewarden_tests::deploy_support::apply(
        &client,
        &pipewarden_tests::deploy_support::base_rbac(&namespace)?,
        false,
    )
    .await?;
    let token = pipewarden_tests::service_account_token(&client, &namespace, "pipewarden").await?;
    let account = control_plane.client_for_token("pipewarden", &token).await?;
    let args = ControllerArgs::new(std::slice::from_ref(&namespace))
        .set("--rebuild-policy", "disable")
        .set("--exit-mode", "observe")
        .set("--reports-interval", "1s")
        .parse()?;
    init_logs();
    let controller = pipewarden::controller::start(args, account).await?;
    let reports: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &namespace, &report_resource());

    let report = report_reads(
        &reports,
        Some(&[
            ("would-rebuild", "fail", "stale-0"),
            ("would-rebuild", "fail", "stale-1"),
            ("not-rebuildable", "skip", "reference-0"),
            ("observed", "warn", "etl"),
        ]),
    )
    .await?
    .context("no report")?;
    let (_, summary) = read(&report);
    ensure!(
        summary == serde_json::json!({"pass": 0, "fail": 2, "warn": 1, "error": 0, "skip": 1}),
        "{summary}"
    );
    ensure!(report.data["source"] == "pipewarden");
    ensure!(report.labels()["app.kubernetes.io/managed-by"] == "pipewarden");
    println!(
        "report: {}",
        serde_json::to_string(&report.data["results"][0])?
    );

    swfs(&client, &namespace)
        .delete("stale-0", &Default::default())
        .await?;
    report_reads(
        &reports,
        Some(&[
            ("would-rebuild", "fail", "stale-1"),
            ("not-rebuildable", "skip", "reference-0"),
            ("observed", "warn", "etl"),
        ]),
    )
    .await?;

    for name in ["stale-1", "reference-0"] {
        swfs(&client, &namespace)
            .delete(name, &Default::default())
            .await?;
    }
    api.delete("etl", &Default::default()).await?;
    report_reads(&reports, None).await?;
    let errors = controller
        .metrics()
        .reports
        .writes
        .get_or_create(&pipewarden::metrics::OutcomeLabel {
            outcome: "error".into(),
        })
        .get();
    ensure!(errors == 0, "{errors} report writes failed");
    controller.stop().await;
    Ok(())
}
