//! Exit notifications for completions Argo's own controller (v4.0.7) decided: seed 001's
//! workflows ending in each phase, workflows without an exit handler, one from a
//! WorkflowTemplate, a retry (`argo retry`) and a name deleted and created again.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, ensure};
use kube::ResourceExt as _;
use pipewarden_tests::{log, shared};

use crate::exit_support::{Controller, Receiver, notification_events, wait_for_sent};
use crate::support::*;

/// Seed 001's workflows by how they end, and those without an exit handler.
const SUCCEED: usize = 30;
const FAIL: usize = 12;
const ERROR: usize = 8;
const WITHOUT_EXIT_HANDLER: usize = 6;
const TEMPLATE: &str = "seed-001-template";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argo_v4_exit_notifications_one_per_completion() -> Result<()> {
    let stack = pipewarden_tests::argo::shared_stack().await?;
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let api = workflows(&client, &namespace);
    let exit_pods = ExitPods::watch(&client, &namespace).await?;
    let receiver = Receiver::start().await?;
    let controller = Controller::start(control_plane, &namespace, &[receiver.flag()]).await?;

    // What each workflow is, and how Argo is to end it.
    let mut plan: Vec<(String, bool, Outcome)> = Vec::new();
    for (outcome, count) in [
        (Outcome::Succeed, SUCCEED),
        (Outcome::Fail, FAIL),
        (Outcome::Error, ERROR),
    ] {
        for i in 0..count {
            plan.push((
                format!("{}-{i}", outcome.phase().to_lowercase()),
                true,
                outcome,
            ));
        }
    }
    for i in 0..WITHOUT_EXIT_HANDLER {
        let outcome = if i % 2 == 0 {
            Outcome::Succeed
        } else {
            Outcome::Fail
        };
        plan.push((format!("no-exit-handler-{i}"), false, outcome));
    }
    for (name, exit_handler, outcome) in &plan {
        let spec = seed_001_spec(*exit_handler, *outcome);
        create(&api, &workflow(name, "seed-001", spec)?).await?;
    }
    create_template(&client, &namespace, TEMPLATE).await?;
    let from_template = "from-template".to_owned();
    let spec = serde_json::json!({"workflowTemplateRef": {"name": TEMPLATE}});
    create(&api, &workflow(&from_template, "template", spec)?).await?;
    log(format_args!(
        "argo: submitted {} workflows to Argo {} in {namespace}",
        plan.len() + 1,
        stack.controller().version.tag()
    ));

    let mut names: Vec<String> = plan.iter().map(|(name, ..)| name.clone()).collect();
    names.push(from_template.clone());
    let done = wait_complete(&api, &names).await?;

    // Argo decided every phase, and ran the exit handler's step exactly where it should.
    for (name, exit_handler, outcome) in &plan {
        let workflow = &done[name];
        ensure!(
            phase(workflow) == outcome.phase(),
            "{name}: Argo's phase {} (expected {})",
            phase(workflow),
            outcome.phase()
        );
        if *exit_handler {
            let step = exit_step_phase(workflow)?;
            let expected = if *outcome == Outcome::Succeed {
                "Skipped"
            } else {
                "Succeeded"
            };
            ensure!(step == expected, "{name}: exit step {step}");
            let pods = exit_pods.of(name);
            let expected = usize::from(*outcome != Outcome::Succeed);
            ensure!(pods == expected, "{name}: {pods} exit-handler pods");
        }
    }
    let templated = &done[&from_template];
    ensure!(
        phase(templated) == "Succeeded",
        "from the template: {}",
        phase(templated)
    );
    ensure!(
        nodes_named(templated, "consume")
            .first()
            .is_some_and(|n| n["phase"] == "Succeeded"),
        "the step guarded by the reported output did not run"
    );
    ensure!(stack.executor.reported() >= 1, "no task result reported");

    // One notification per completion of a workflow with an exit handler.
    let mut expected: BTreeMap<String, (String, String)> = BTreeMap::new();
    let notified: Vec<&String> = plan
        .iter()
        .filter(|(_, exit_handler, _)| *exit_handler)
        .map(|(name, ..)| name)
        .chain([&from_template])
        .collect();
    for name in &notified {
        let key = completion_key(&done[*name])?;
        wait_for_sent(&api, name, &key).await?;
        expected.insert(key, ((*name).clone(), phase(&done[*name]).to_owned()));
    }
    log(format_args!(
        "argo: {} completions notified, {} webhook requests",
        expected.len(),
        receiver.requests()
    ));

    // A retry, as `argo retry -p` does it: the same uid runs again and completes again.
    let retried = "failed-0";
    let first = &done[retried];
    let first_started = first.data["status"]["startedAt"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let said = argo_retry(
        control_plane,
        &namespace,
        retried,
        &[("main-exit-code", "0")],
    )
    .await?;
    log(format_args!("argo: {said}"));
    let rerun = wait_next_completion(&api, retried, &first_started).await?;
    ensure!(rerun.uid() == first.uid(), "a retry keeps the uid");
    ensure!(phase(&rerun) == "Succeeded", "retried: {}", phase(&rerun));
    // The gate saw the marked workflow running again under Argo's retry and counted the run;
    // Argo's own writes through the re-run kept the count.
    ensure!(
        run_counted(&rerun) == Some(2),
        "run counted: {:?}",
        run_counted(&rerun)
    );
    let rerun_key = completion_key(&rerun)?;
    wait_for_sent(&api, retried, &rerun_key).await?;
    expected.insert(rerun_key, (retried.to_owned(), "Succeeded".to_owned()));

    // Deleted right after completing, and created again under the same name.
    let recreated = "succeeded-0";
    let old_uid = done[recreated].uid().unwrap_or_default();
    delete(&api, recreated).await?;
    let spec = seed_001_spec(true, Outcome::Fail);
    create(&api, &workflow(recreated, "seed-001", spec)?).await?;
    let names = [recreated.to_owned()];
    let again = wait_complete(&api, &names)
        .await?
        .remove(recreated)
        .expect("waited");
    ensure!(again.uid() != Some(old_uid.clone()), "a new uid");
    let again_key = completion_key(&again)?;
    wait_for_sent(&api, recreated, &again_key).await?;
    expected.insert(again_key, (recreated.to_owned(), "Failed".to_owned()));

    // Exactly one delivery per completion, with Argo's final phase; nothing else.
    let per_key = receiver.per_key();
    let extra: Vec<&String> = per_key
        .keys()
        .filter(|k| !expected.contains_key(*k))
        .collect();
    ensure!(extra.is_empty(), "deliveries for no completion: {extra:?}");
    for (key, (name, _)) in &expected {
        ensure!(
            per_key.get(key) == Some(&1),
            "{name} ({key}): {:?} deliveries",
            per_key.get(key)
        );
    }
    ensure!(
        receiver.requests() == expected.len(),
        "{} webhook requests for {} completions",
        receiver.requests(),
        expected.len()
    );
    for delivery in receiver.accepted() {
        let (name, phase) = &expected[&delivery.key];
        ensure!(
            delivery.body["phase"] == *phase
                && delivery.body["name"] == *name
                && delivery.subject == format!("{namespace}/{name}"),
            "{name}: payload {}",
            delivery.body
        );
    }
    let subjects: BTreeSet<String> = receiver.accepted().into_iter().map(|d| d.subject).collect();
    for (name, exit_handler, _) in &plan {
        if !*exit_handler {
            ensure!(
                !subjects.contains(&format!("{namespace}/{name}")),
                "{name} has no exit handler but was notified"
            );
        }
    }
    // The old uid of the re-created name: its one notification, nothing after.
    let events = notification_events(&client, &namespace).await?;
    ensure!(
        events.get(&old_uid) == Some(&1),
        "old uid: {:?} ExitNotification Events",
        events.get(&old_uid)
    );
    ensure!(
        events.get(&first.uid().unwrap_or_default()) == Some(&2),
        "retried uid: {:?} Events",
        events.get(&first.uid().unwrap_or_default())
    );
    ensure!(
        events.values().sum::<usize>() == expected.len(),
        "{events:?}"
    );
    controller
        .wait_for_notifications("sent", expected.len() as u64)
        .await?;
    let sent = controller.notifications("sent");
    ensure!(sent == expected.len() as u64, "sent: {sent}");
    stack.controller().ensure_running()?;
    controller.stop().await;
    Ok(())
}
