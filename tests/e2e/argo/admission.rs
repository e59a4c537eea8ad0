//! Argo's own controller (v4.0.7) admits the workflow of every SWF pipewarden rebuilt: each
//! rebuilt SWF is instantiated as KFP's ScheduledWorkflow controller instantiates it and created;
//! Argo accepts it (no validation error, phase Running) and starts it: its first pod is a KFP
//! driver with the rendered image and arguments. The workflow of an SWF corrupted by seed 000's
//! patch is refused by Argo, and admitted again once pipewarden restored the SWF.
//!
//! Every release the compiler supports (`kfp_compiler::Release::ALL`), newest first, with its
//! shipped settings; the newest also runs seed 000's corruption and the restore (which do not
//! depend on the release).

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::core::v1::Pod;
use kfp_compiler::Release;
use kube::api::{Api, DynamicObject, ListParams};
use kube::{Client, ResourceExt as _};
use pipewarden_tests::argo::ArgoStack;
use pipewarden_tests::repo::release_settings;
use pipewarden_tests::{log, shared};
use serde_json::Value;

use crate::support::kfp::{Decoder, instantiate};
use crate::support::{WAIT, create, phase, workflows};
use crate::swf_support::{
    ControllerArgs, DEFAULT_POLICY, KFP_11296_CORRUPTION, embedded_workflow, list, merge_patch,
    seed, stamped_version, wait_for_all,
};

/// `tests/data/swf` fixtures seeded and rebuilt for every release (one SWF each).
const FIXTURES: &[&str] = &["kfp-2.3", "kfp-2.3-parameters", "kfp-legacy-object"];

/// What Argo made of one instantiated run.
struct Admitted {
    workflow: String,
    pod: String,
    template: String,
    image: String,
    args: usize,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The main container of `pod`, and the template Argo gave the pod (from its executor env).
fn pod_template(pod: &Pod) -> Result<(k8s_openapi::api::core::v1::Container, Value)> {
    let spec = pod.spec.as_ref().context("pod without spec")?;
    let main = spec
        .containers
        .iter()
        .find(|c| c.name == "main")
        .context("no main container")?
        .clone();
    let template = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .flat_map(|c| c.env.iter().flatten())
        .find(|e| e.name == "ARGO_TEMPLATE")
        .and_then(|e| e.value.as_deref())
        .context("no ARGO_TEMPLATE on the pod")?;
    Ok((main, serde_json::from_str(template)?))
}

/// Creates run `index` of `swf` as KFP's controller would and waits until Argo started it: phase
/// Running without a message, and a first pod running a KFP driver with the rendered image and
/// arguments (placeholders resolved, nothing else changed).
async fn admitted(
    client: &Client,
    decoder: &Decoder,
    swf: &DynamicObject,
    index: i64,
) -> Result<Admitted> {
    let namespace = swf.namespace().unwrap_or_default();
    let run = instantiate(decoder, swf, index, now(), now())?;
    ensure!(
        run.dropped.is_empty(),
        "{}: fields Argo's types do not define (KFP's controller drops them): {:?}",
        swf.name_any(),
        run.dropped
    );
    let submitted = run.workflow.clone();
    let api = workflows(client, &namespace);
    let created = create(&api, &run.workflow).await?;
    let name = created.name_any();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let selector = format!("workflows.argoproj.io/workflow={name}");
    let pod = pipewarden_tests::wait::until(&format!("Argo to start {name}"), WAIT, || async {
        let live = api.get(&name).await?;
        let phase = phase(&live).to_owned();
        ensure!(
            !matches!(phase.as_str(), "Failed" | "Error"),
            "Argo refused {name}: {phase}: {}",
            live.data["status"]["message"]
        );
        let listed = pods.list(&ListParams::default().labels(&selector)).await?;
        Ok((phase == "Running")
            .then(|| listed.items.into_iter().next())
            .flatten())
    })
    .await?;
    let live = api.get(&name).await?;
    ensure!(
        live.data["status"]["message"].is_null(),
        "{name}: {}",
        live.data["status"]["message"]
    );
    let (main, template) = pod_template(&pod)?;
    let template_name = template["name"].as_str().unwrap_or_default().to_owned();
    let rendered = submitted.data["spec"]["templates"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["name"] == template_name.as_str())
        .with_context(|| format!("{name}: the pod's template {template_name} is not in the run"))?;
    let container = &rendered["container"];
    ensure!(
        container["command"][0] == "driver",
        "{name}: the first pod runs {template_name}, not a KFP driver"
    );
    let image = main.image.clone().unwrap_or_default();
    ensure!(
        container["image"] == image.as_str(),
        "{name}: image {image}, rendered {}",
        container["image"]
    );
    let args = main.args.clone().unwrap_or_default();
    let expected: Vec<&str> = container["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    ensure!(
        args.len() == expected.len(),
        "{name}: {} args, rendered {}",
        args.len(),
        expected.len()
    );
    for (arg, rendered) in args.iter().zip(&expected) {
        if rendered.contains("{{") {
            ensure!(!arg.contains("{{"), "{name}: unresolved argument {arg}");
        } else {
            ensure!(
                arg == rendered,
                "{name}: argument {arg}, rendered {rendered}"
            );
        }
    }
    Ok(Admitted {
        workflow: name,
        pod: pod.name_any(),
        template: template_name,
        image,
        args: args.len(),
    })
}

/// Creates the run of an SWF carrying seed 000's patch and waits until Argo refuses it: Failed
/// or Error with a message, and no pod.
async fn refused(
    client: &Client,
    decoder: &Decoder,
    swf: &DynamicObject,
    index: i64,
) -> Result<String> {
    let namespace = swf.namespace().unwrap_or_default();
    let run = instantiate(decoder, swf, index, now(), now())?;
    // KFP's controller decodes the patched object as Argo's WorkflowSpec: both keys go.
    let expected = ["spec.dynamicKey1", "spec.dynamicKey2"];
    ensure!(
        run.dropped == expected,
        "fields dropped in decoding: {:?}",
        run.dropped
    );
    let api = workflows(client, &namespace);
    let name = create(&api, &run.workflow).await?.name_any();
    let live = pipewarden_tests::wait::until(&format!("Argo to decide {name}"), WAIT, || async {
        let live = api.get(&name).await?;
        Ok((!phase(&live).is_empty() && phase(&live) != "Pending").then_some(live))
    })
    .await?;
    let message = live.data["status"]["message"].as_str().unwrap_or_default();
    ensure!(
        matches!(phase(&live), "Failed" | "Error") && !message.is_empty(),
        "Argo did not refuse {name}: {} {message}",
        phase(&live)
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let selector = format!("workflows.argoproj.io/workflow={name}");
    let started = pods.list(&ListParams::default().labels(&selector)).await?;
    ensure!(
        started.items.is_empty(),
        "{name}: refused, yet a pod was created"
    );
    Ok(format!("{name}: {} ({message})", phase(&live)))
}

fn print_table(target: &str, rows: &[(String, Admitted)]) {
    let mut table = format!(
        "argo: SWFs rebuilt for KFP {target} -> Argo v4.0.7\nswf                     workflow                          first pod template   image                                 args\n",
    );
    for (swf, a) in rows {
        table.push_str(&format!(
            "{swf:<23} {:<33} {:<20} {:<37} {}  (pod {})\n",
            a.workflow, a.template, a.image, a.args, a.pod
        ));
    }
    log(format_args!("{table}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argo_v4_admits_every_rebuilt_swf_workflow_and_refuses_the_kfp_11296_corruption()
-> Result<()> {
    let _stack: &ArgoStack = pipewarden_tests::argo::shared_stack().await?;
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let decoder = Decoder::load()?;
    for release in Release::ALL.into_iter().rev() {
        let target = release.as_str();
        let namespace = control_plane.ns().await?;
        let namespaces = [namespace.clone()];
        for fixture in FIXTURES {
            let prefix = format!(
                "swf-{}",
                fixture.trim_start_matches("kfp-").replace('.', "-")
            );
            seed(&client, &namespace, fixture, &prefix, 1).await?;
        }
        let args = ControllerArgs::new(&namespaces)
            .policy(DEFAULT_POLICY, &release_settings(target))
            .set("--target-version", target);
        let running = args.start(control_plane).await?;
        let rebuilt = wait_for_all(&client, &namespaces, "every SWF rebuilt", |swf| {
            stamped_version(swf) == Some(target)
        })
        .await?;
        running.stop().await;

        let mut rows = Vec::new();
        for swf in &rebuilt {
            let admission = admitted(&client, &decoder, swf, 1).await?;
            rows.push((swf.name_any(), admission));
        }
        print_table(target, &rows);
        ensure!(rows.len() == FIXTURES.len(), "{} admitted", rows.len());

        if release != Release::LATEST {
            continue;
        }
        // Seed 000's patch: Argo refuses the run; pipewarden restores the SWF; Argo admits it.
        let victim = rebuilt[0].name_any();
        merge_patch(&client, &namespace, &victim, KFP_11296_CORRUPTION).await?;
        let corrupted = swfs_named(&client, &namespace, &victim).await?;
        let refusal = refused(&client, &decoder, &corrupted, 2).await?;
        log(format_args!(
            "argo: the corrupted SWF's run refused: {refusal}"
        ));
        let running = args.start(control_plane).await?;
        let restored = wait_for_all(&client, &namespaces, "the SWF restored", |swf| {
            embedded_workflow(swf).is_ok()
        })
        .await?;
        running.stop().await;
        let restored = restored
            .into_iter()
            .find(|s| s.name_any() == victim)
            .context("the restored SWF")?;
        let again = admitted(&client, &decoder, &restored, 3).await?;
        log(format_args!(
            "argo: restored by pipewarden, admitted again: {} (first pod {})",
            again.workflow, again.pod
        ));
    }
    Ok(())
}

async fn swfs_named(client: &Client, namespace: &str, name: &str) -> Result<DynamicObject> {
    list(client, namespace)
        .await?
        .into_iter()
        .find(|s| s.name_any() == name)
        .with_context(|| format!("SWF {name}"))
}

#[test]
fn run_names_hash_as_kfp_does() {
    // Go's fnv.New32a: the empty input is the offset basis; "a" hashes to 0xe40c292c.
    assert_eq!(crate::support::kfp::fnv32a(""), 2_166_136_261);
    assert_eq!(crate::support::kfp::fnv32a("a"), 0xe40c_292c);
}
