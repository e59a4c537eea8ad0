//! The README's install section, run as written on the local control plane: the chart installed
//! from `oci://` (published as `make release` publishes it: image/publish-chart.sh, the policy
//! pushed by `pipewarden policy push`), `pipewarden plan` with `--kubeconfig` and `--context`
//! through the port-forward's local address, then the upgrade to enforce. What differs from a
//! user's cluster is substituted, each substitution named in `SUBSTITUTIONS`; the commands
//! themselves come from README.md, so a changed command is run as changed.

use std::process::Command;

use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, Patch, PatchParams, PostParams};
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::registry::Registry;
use pipewarden_tests::shared;
use pipewarden_tests::swf_support::KfpApi;
use serde_json::json;

const VERSION: &str = env!("CARGO_PKG_VERSION");
const SUBSTITUTIONS: &[&str] = &[
    "ghcr.io/pipewarden: a registry on loopback, where the chart and policy are published as `make release` publishes them (the image is not pulled: no kubelet)",
    "the release name pipewarden and `-n kubeflow`: names of this test's own, so it shares no cluster-wide object with other tests",
    "helm gets --kubeconfig and settings.from=deployment/<namespace>/ml-pipeline; plan gets --namespaces <namespace>",
    "~/.kube/config: a kubeconfig whose current context is a dead server and whose context my-cluster is the control plane",
    "kfp-default.wasm: the default policy `make policies` builds, which is the release's",
    "deployment/kubeflow/ml-pipeline: a KFP 2.17.0 API server Deployment and running pod in the test's namespace",
    "kubectl port-forward: not run; http://127.0.0.1:8888 is a KFP health endpoint on loopback reporting 2.17.0",
];

/// The commands of the README's install section, by the program they start with.
fn install_commands() -> Result<Vec<Vec<String>>> {
    let readme = std::fs::read_to_string(repo_path("README.md"))?;
    let section = readme
        .split("## Install, safely")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .context("no install section in README.md")?;
    let mut found = Vec::new();
    for block in section.split("```sh\n").skip(1) {
        let block = block.split("```").next().unwrap_or_default();
        for line in block.lines().filter(|l| !l.trim().is_empty()) {
            let words = line.trim().trim_end_matches('&').split_whitespace();
            found.push(words.map(str::to_owned).collect());
        }
    }
    Ok(found)
}

fn find<'a>(commands: &'a [Vec<String>], start: &[&str]) -> Result<&'a Vec<String>> {
    commands
        .iter()
        .find(|words| words.iter().zip(start).all(|(w, s)| w == s) && words.len() >= start.len())
        .with_context(|| format!("the README's install section has no `{}`", start.join(" ")))
}

fn run(command: &mut Command) -> Result<String> {
    let output = command.output().with_context(|| format!("{command:?}"))?;
    if !output.status.success() {
        bail!(
            "{command:?}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8(output.stdout)?)
}

/// KFP's API server as the settings source reads it: a Deployment and a running pod.
async fn api_server(client: &kube::Client, namespace: &str) -> Result<()> {
    let container = json!({
        "name": "ml-pipeline-api-server",
        "image": "ghcr.io/kubeflow/kfp-api-server:2.17.0",
        "env": [{"name": "V2_DRIVER_IMAGE", "value": "ghcr.io/kubeflow/kfp-driver:2.17.0"},
                {"name": "V2_LAUNCHER_IMAGE", "value": "ghcr.io/kubeflow/kfp-launcher:2.17.0"}],
    });
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "ml-pipeline", "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": "ml-pipeline"}},
                 "template": {"metadata": {"labels": {"app": "ml-pipeline"}},
                              "spec": {"containers": [container.clone()]}}},
    }))?;
    Api::<Deployment>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &deployment)
        .await?;
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "ml-pipeline-1", "namespace": namespace,
                     "labels": {"app": "ml-pipeline", "pod-template-hash": "1"}},
        "spec": {"containers": [container]},
    }))?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    pods.create(&PostParams::default(), &pod).await?;
    let status = json!({"status": {"phase": "Running", "startTime": "2026-12-01T10:00:00Z"}});
    pods.patch_status(
        "ml-pipeline-1",
        &PatchParams::default(),
        &Patch::Merge(&status),
    )
    .await?;
    Ok(())
}

/// A kubeconfig whose current context is a server that is not there, and whose context
/// `my-cluster` is the control plane's.
fn two_contexts(control_plane: &std::path::Path, to: &std::path::Path) -> Result<()> {
    let mut config: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(control_plane)?)?;
    let cluster = config["clusters"][0]["name"].clone();
    let user = config["users"][0]["name"].clone();
    config["clusters"]
        .as_sequence_mut()
        .context("clusters")?
        .push(serde_yaml::from_str(
            "{name: gone, cluster: {server: 'https://127.0.0.1:1'}}",
        )?);
    config["contexts"] = serde_yaml::to_value(json!([
        {"name": "my-cluster", "context": {"cluster": cluster, "user": user}},
        {"name": "gone", "context": {"cluster": "gone", "user": user}},
    ]))?;
    config["current-context"] = "gone".into();
    std::fs::write(to, serde_yaml::to_string(&config)?)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readmes_install_commands_run_as_written() -> Result<()> {
    println!("substitutions:");
    for step in SUBSTITUTIONS {
        println!("  - {step}");
    }
    let commands = install_commands()?;
    let install = find(&commands, &["helm", "install", "pipewarden"])?;
    let plan = find(&commands, &["pipewarden", "plan"])?;
    let upgrade = find(&commands, &["helm", "upgrade", "pipewarden"])?;
    find(
        &commands,
        &[
            "kubectl",
            "-n",
            "kubeflow",
            "port-forward",
            "svc/ml-pipeline",
            "8888:8888",
        ],
    )?;

    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let release = format!("pipewarden-{namespace}");
    let kubeconfig = control_plane.kubeconfig().display().to_string();
    let work = TempDir::new("install-path")?;
    let registry = Registry::start().await?;
    let binary = pipewarden_binary()?;
    let policy = built_policy("kfp-default");

    // The release's chart and policy, published the way `make release` publishes them.
    let policy_ref = run(Command::new(&binary)
        .args(["policy", "push"])
        .arg(&policy)
        .arg(format!(
            "{}:{VERSION}",
            registry.oci("pipewarden/policies/kfp-default")
        )))?;
    let policy_ref = policy_ref.trim();
    let unpulled = format!("sha256:{}", "0".repeat(64));
    run(Command::new(repo_path("image/publish-chart.sh"))
        .env("REGISTRY", format!("{}/pipewarden", registry.host))
        .env("VERSION", VERSION)
        .env("DIST", work.path().join("dist"))
        .env("HELM", helm()?)
        .env("IMAGE_REPOSITORY", "ghcr.io/pipewarden/pipewarden")
        .env("IMAGE_DIGEST", &unpulled)
        .env("POLICY_REF", policy_ref))?;

    let localize = |words: &[String]| -> Vec<String> {
        words
            .iter()
            .map(|w| match w.as_str() {
                "pipewarden" => release.clone(),
                "kubeflow" => namespace.clone(),
                w => w.replace(
                    "ghcr.io/pipewarden",
                    &format!("{}/pipewarden", registry.host),
                ),
            })
            .collect()
    };
    let helm_extra = [
        "--kubeconfig".to_owned(),
        kubeconfig.clone(),
        "--plain-http".to_owned(),
        "--set".to_owned(),
        format!("settings.from=deployment/{namespace}/ml-pipeline"),
    ];
    let helm_args = |words: &[String]| -> Vec<String> {
        let mut args = localize(&words[1..]);
        args.extend(helm_extra.iter().cloned());
        args
    };
    run(Command::new(helm()?).args(helm_args(install)))?;
    let deployments = Api::<Deployment>::namespaced(client.clone(), &namespace);
    let installed = deployments.get(&release).await?;
    let env = |deployment: &Deployment, name: &str| {
        deployment.spec.as_ref()?.template.spec.as_ref()?.containers[0]
            .env
            .as_ref()?
            .iter()
            .find(|v| v.name == name)?
            .value
            .clone()
    };
    ensure!(env(&installed, "PIPEWARDEN_POLICY").as_deref() == Some(policy_ref));
    ensure!(
        env(&installed, "ML_PIPELINE_SCHEDULEDRUNS_REBUILDPOLICY").as_deref() == Some("disable")
    );
    println!("helm install from oci://: {release} report-only, policy {policy_ref}");

    api_server(&client, &namespace).await?;
    let kfp = KfpApi::serve("2.17.0").await?;
    let config = work.path().join("kubeconfig");
    two_contexts(control_plane.kubeconfig(), &config)?;
    let plan_args: Vec<String> = plan[2..]
        .iter()
        .map(|w| match w.as_str() {
            "~/.kube/config" => config.display().to_string(),
            "kfp-default.wasm" => policy.display().to_string(),
            "deployment/kubeflow/ml-pipeline" => format!("deployment/{namespace}/ml-pipeline"),
            "http://127.0.0.1:8888" => kfp.url.clone(),
            w => w.to_owned(),
        })
        .chain(["--namespaces".to_owned(), namespace.clone()])
        .collect();
    let planned = Command::new(&binary)
        .arg("plan")
        .args(&plan_args)
        .env_clear()
        .output()?;
    let text = String::from_utf8_lossy(&planned.stdout);
    ensure!(
        planned.status.code().is_some_and(|c| c < 2) && text.contains("target 2.17.0"),
        "plan: {text}{}",
        String::from_utf8_lossy(&planned.stderr)
    );
    // --context is what reached the cluster: the current context cannot.
    let context_at = plan_args
        .iter()
        .position(|a| a == "--context")
        .context("no --context")?;
    let mut current = plan_args.clone();
    current.drain(context_at..context_at + 2);
    let refused = Command::new(&binary)
        .arg("plan")
        .args(&current)
        .env_clear()
        .output()?;
    ensure!(
        !refused.status.success(),
        "plan reached the cluster through the dead current context"
    );
    println!(
        "pipewarden plan --kubeconfig --context my-cluster: {}; without --context: refused",
        text.lines().next().unwrap_or_default()
    );

    run(Command::new(helm()?).args(helm_args(upgrade)))?;
    let upgraded = deployments.get(&release).await?;
    ensure!(env(&upgraded, "ML_PIPELINE_SCHEDULEDRUNS_REBUILDPOLICY").as_deref() == Some("always"));
    ensure!(env(&upgraded, "PIPEWARDEN_EXIT_MODE").as_deref() == Some("notify"));
    ensure!(env(&upgraded, "PIPEWARDEN_POLICY").as_deref() == Some(policy_ref));
    println!("helm upgrade --reuse-values --set enforce=true: always, notify, the same policy");
    // Helm keeps each revision in a Secret (1 MiB at most): the policy by reference keeps them small.
    let secrets = Api::<Secret>::namespaced(client.clone(), &namespace);
    for revision in [1, 2] {
        let name = format!("sh.helm.release.v1.{release}.v{revision}");
        let secret = secrets.get(&name).await?;
        let bytes: usize = secret.data.iter().flatten().map(|(_, v)| v.0.len()).sum();
        println!("release record {name}: {bytes} bytes");
        ensure!(bytes < 1024 * 1024, "{name} holds {bytes} bytes");
    }
    run(Command::new(helm()?).args([
        "uninstall",
        &release,
        "-n",
        &namespace,
        "--kubeconfig",
        &kubeconfig,
    ]))?;
    Ok(())
}
