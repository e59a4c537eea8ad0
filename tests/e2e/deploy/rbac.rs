//! Least privilege: the base RBAC lists exactly the verbs the controller uses; a controller
//! running on its ServiceAccount's own token (not admin), with leader election, rebuilds a KFP
//! 2.3 SWF and sends one exit notification; with `patch` on scheduledworkflows taken away, the
//! rebuild fails and says so, naming the verb and the resource.

// Only its receiver and workflow helpers are used here.
#[allow(unused_imports)]
use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context as _, Result, ensure};
use kube::ResourceExt as _;
use kube::api::DynamicObject;
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::{service_account_token, shared};

/// (API group, resource) -> verbs, as the controller's code uses them.
fn expected_cluster_rules() -> BTreeMap<(String, String), BTreeSet<String>> {
    let rules: [(&str, &str, &[&str]); 4] = [
        (
            "kubeflow.org",
            "scheduledworkflows",
            &["get", "list", "watch", "patch"],
        ),
        (
            "argoproj.io",
            "workflows",
            &["get", "list", "watch", "patch"],
        ),
        ("events.k8s.io", "events", &["create", "patch"]),
        (
            "openreports.io",
            "reports",
            &["list", "create", "patch", "delete"],
        ),
    ];
    rules
        .iter()
        .map(|(group, resource, verbs)| {
            let verbs = verbs.iter().map(|v| v.to_string()).collect();
            ((group.to_string(), resource.to_string()), verbs)
        })
        .collect()
}

/// A role's rules flattened to (group, resource) -> verbs; fails on any wildcard.
fn rules_of(role: &DynamicObject) -> Result<BTreeMap<(String, String), BTreeSet<String>>> {
    let strings = |value: &serde_json::Value| -> Vec<String> {
        let items = value.as_array().into_iter().flatten();
        items
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect()
    };
    let mut flat: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for rule in role.data["rules"].as_array().context("no rules")? {
        let (groups, resources) = (strings(&rule["apiGroups"]), strings(&rule["resources"]));
        let verbs = strings(&rule["verbs"]);
        let all = groups.iter().chain(&resources).chain(&verbs);
        ensure!(all.clone().all(|s| !s.contains('*')), "wildcard in {rule}");
        for group in &groups {
            for resource in &resources {
                let key = (group.clone(), resource.clone());
                flat.entry(key).or_default().extend(verbs.iter().cloned());
            }
        }
    }
    Ok(flat)
}

#[test]
fn the_roles_grant_exactly_the_verbs_the_controller_uses() -> Result<()> {
    let rbac = base_file("rbac.yaml")?;
    ensure!(rules_of(one_of(&rbac, "ClusterRole")?)? == expected_cluster_rules());
    let role = one_of(&rbac, "Role")?;
    let leases = rules_of(role)?;
    let key = ("coordination.k8s.io".to_string(), "leases".to_string());
    let verbs: BTreeSet<String> = ["get", "create", "update"].map(String::from).into();
    ensure!(leases == BTreeMap::from([(key, verbs)]), "{leases:?}");
    // Only its own Lease is read and renewed (create cannot be limited by name).
    let rules = role.data["rules"].as_array().context("rules")?;
    ensure!(
        rules[0]["resourceNames"] == serde_json::json!(["pipewarden"])
            && rules[0]["verbs"] == serde_json::json!(["get", "update"])
            && rules[1]["verbs"] == serde_json::json!(["create"])
            && rules[1].get("resourceNames").is_none(),
        "{rules:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_account_runs_both_loops_and_a_missing_verb_is_named() -> Result<()> {
    let control_plane = shared().await?;
    let admin = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let rbac = base_rbac(&namespace)?;
    apply(&admin, &rbac, false).await?;
    let token = service_account_token(&admin, &namespace, "pipewarden").await?;
    let account = control_plane.client_for_token("pipewarden", &token).await?;
    check_access(&account, &namespace).await?;

    let receiver = pipewarden_tests::exit_support::Receiver::start().await?;
    let mut flags = base_flags(&namespace);
    flags.extend(leader_flags(&namespace, "pipewarden", "only", 15));
    flags.push(receiver.flag());
    let replica = start_replica(account.clone(), &flags).await?;
    wait_for("the replica to lead", || leads(&replica)).await?;

    // SWF loop: a KFP 2.3 SWF is rebuilt for the target and stamped.
    pipewarden_tests::swf_support::seed(&admin, &namespace, "kfp-2.3", "daily", 1).await?;
    let namespaces = [namespace.clone()];
    pipewarden_tests::swf_support::wait_for_all(&admin, &namespaces, "the SWF stamped", |swf| {
        pipewarden_tests::swf_support::stamped_version(swf) == Some(TARGET)
            && pipewarden_tests::swf_support::driver_images(swf)
                .is_ok_and(|images| images.iter().all(|i| i.ends_with(":2.17.0")))
    })
    .await?;

    // Exit gate: a workflow completes; one Event and one webhook delivery.
    let api = pipewarden_tests::exit_support::workflows(&admin, &namespace);
    let submitted = pipewarden_tests::exit_support::submit(&api, "nightly").await?;
    let running =
        pipewarden_tests::exit_support::set_phase(&api, &submitted, "Running", None).await?;
    let finished = pipewarden_tests::exit_support::timestamp(0);
    let done =
        pipewarden_tests::exit_support::set_phase(&api, &running, "Succeeded", Some(&finished))
            .await?;
    let key = pipewarden_tests::exit_support::completion_key(&done)?;
    pipewarden_tests::exit_support::wait_for_sent(&api, "nightly", &key).await?;
    ensure!(
        receiver.per_key() == BTreeMap::from([(key, 1)]),
        "{:?}",
        receiver.per_key()
    );
    let events = pipewarden_tests::exit_support::notification_events(&admin, &namespace).await?;
    let uid = done.uid().unwrap_or_default();
    ensure!(events == BTreeMap::from([(uid, 1)]), "{events:?}");

    // Take `patch` on scheduledworkflows away; wait until the authorizer says so.
    let role = one_of(&rbac, "ClusterRole")?;
    let reduced = without_verb(role, "scheduledworkflows", "patch")?;
    apply(&admin, &[reduced], false).await?;
    let patch_swfs = Access {
        group: "kubeflow.org",
        resource: "scheduledworkflows",
        verb: "patch",
        namespace: &namespace,
        name: "",
    };
    pipewarden_tests::wait::until("patch to be denied", WAIT, || async {
        Ok((!allowed(&account, patch_swfs).await?).then_some(()))
    })
    .await?;

    pipewarden_tests::swf_support::seed(&admin, &namespace, "kfp-2.3", "weekly", 1).await?;
    let note =
        pipewarden_tests::swf_support::event_note(&admin, &namespace, "weekly-0", "WriteFailed")
            .await?;
    println!("WriteFailed Event: {note}");
    ensure!(note.contains("forbidden"), "{note}");
    ensure!(
        note.contains(r#"cannot patch resource "scheduledworkflows""#),
        "{note}"
    );
    let weekly = pipewarden_tests::swf_support::list(&admin, &namespace).await?;
    let weekly = weekly
        .iter()
        .find(|s| s.name_any() == "weekly-0")
        .context("weekly-0")?;
    ensure!(
        pipewarden_tests::swf_support::stamped_version(weekly).is_none(),
        "written anyway"
    );
    let failed = scrape(
        replica.http_addr,
        r#"pipewarden_swf_decisions_total{outcome="write-failed"}"#,
    )
    .await?;
    ensure!(failed >= 1.0, "write-failed decisions: {failed}");
    replica.shutdown().await;
    Ok(())
}

/// The ServiceAccount may do what its roles list, in the controller's namespace, and nothing
/// beyond it.
async fn check_access(account: &kube::Client, namespace: &str) -> Result<()> {
    let mut granted = expected_cluster_rules();
    let leases = ("coordination.k8s.io".to_string(), "leases".to_string());
    granted.insert(leases, ["get", "create", "update"].map(String::from).into());
    for ((group, resource), verbs) in &granted {
        for verb in verbs {
            // The Lease is read and renewed by name; it is created before it has one.
            let name = if resource == "leases" && verb != "create" {
                "pipewarden"
            } else {
                ""
            };
            let access = Access {
                group,
                resource,
                verb,
                namespace,
                name,
            };
            ensure!(allowed(account, access).await?, "denied {access:?}");
        }
    }
    let denied = [
        ("kubeflow.org", "scheduledworkflows", "create", namespace),
        ("kubeflow.org", "scheduledworkflows", "update", namespace),
        ("kubeflow.org", "scheduledworkflows", "delete", namespace),
        ("argoproj.io", "workflows", "create", namespace),
        ("argoproj.io", "workflows", "delete", namespace),
        ("events.k8s.io", "events", "delete", namespace),
        ("coordination.k8s.io", "leases", "delete", namespace),
        ("coordination.k8s.io", "leases", "get", "default"),
        ("coordination.k8s.io", "leases", "update", namespace),
        ("", "secrets", "get", namespace),
        ("", "configmaps", "list", namespace),
        ("", "pods", "list", namespace),
        ("", "namespaces", "list", ""),
    ];
    for (group, resource, verb, namespace) in denied {
        // Argo's controller keeps its Lease beside ours: never ours to renew.
        let name = if resource == "leases" {
            "workflow-controller"
        } else {
            ""
        };
        let access = Access {
            group,
            resource,
            verb,
            namespace,
            name,
        };
        ensure!(!allowed(account, access).await?, "allowed {access:?}");
    }
    Ok(())
}

/// The Kubeflow overlay's Role (`--settings-from deployment/kubeflow/ml-pipeline`): the
/// ServiceAccount reads the API server's Deployment, lists pods and reads ConfigMaps (the
/// multi-user manifests' is named with a content hash), and no other Deployment and no Secret.
#[tokio::test]
async fn the_kubeflow_overlay_reads_the_api_servers_environment_and_nothing_else() -> Result<()> {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    use kube::api::Api;
    use pipewarden::swf::api_server_env::DeploymentRef;

    let control_plane = shared().await?;
    let admin = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let path = repo_path("deploy/overlays/kubeflow/api-server-env-rbac.yaml");
    let mut objects = base_rbac(&namespace)?;
    for mut object in documents(&std::fs::read_to_string(&path)?)? {
        object.metadata.namespace = Some(namespace.clone());
        if let Some(subjects) = object
            .data
            .get_mut("subjects")
            .and_then(|s| s.as_array_mut())
        {
            for subject in subjects {
                subject["namespace"] = serde_json::json!(namespace);
            }
        }
        objects.push(object);
    }
    apply(&admin, &objects, false).await?;
    let object = |kind: &str, name: &str, extra: serde_json::Value| -> Result<DynamicObject> {
        let mut value = serde_json::json!({
            "apiVersion": if kind == "Deployment" { "apps/v1" } else { "v1" },
            "kind": kind,
            "metadata": {"name": name, "namespace": namespace},
        });
        value
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        Ok(serde_json::from_value(value)?)
    };
    let deployment = |name: &str| {
        object(
            "Deployment",
            name,
            serde_json::json!({"spec": {
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{
                    "name": "ml-pipeline-api-server", "image": "api-server",
                    "env": [{"name": "PIPELINE_LOG_LEVEL", "valueFrom": {"configMapKeyRef":
                        {"name": "pipeline-install-config", "key": "logLevel"}}},
                            {"name": "DBCONFIG_PASSWORD", "valueFrom": {"secretKeyRef":
                        {"name": "mysql-secret", "key": "password"}}}]}]}}}}),
        )
    };
    apply(
        &admin,
        &[
            deployment("ml-pipeline")?,
            deployment("other")?,
            object(
                "ConfigMap",
                "pipeline-install-config",
                serde_json::json!({"data": {"logLevel": "3"}}),
            )?,
            object("ConfigMap", "other", serde_json::json!({"data": {}}))?,
            object(
                "Secret",
                "mysql-secret",
                serde_json::json!({"stringData": {"password": "x"}}),
            )?,
        ],
        false,
    )
    .await?;
    let token = service_account_token(&admin, &namespace, "pipewarden").await?;
    let account = control_plane.client_for_token("pipewarden", &token).await?;
    let at = DeploymentRef {
        namespace: namespace.clone(),
        name: "ml-pipeline".into(),
    };
    // The RoleBinding reaches the authorizer shortly after it is applied.
    let env = pipewarden_tests::wait::until("the API server env readable", WAIT, || async {
        Ok(pipewarden::cluster::settings_source::fetch(&account, &at)
            .await
            .ok())
    })
    .await?;
    ensure!(env.vars.get("PIPELINE_LOG_LEVEL").map(String::as_str) == Some("3"));
    ensure!(
        env.unknown.keys().collect::<Vec<_>>() == ["DBCONFIG_PASSWORD"],
        "{:?}",
        env.unknown
    );
    let forbidden = |result: kube::Result<()>| matches!(result, Err(kube::Error::Api(status)) if status.code == 403);
    let deployments: Api<Deployment> = Api::namespaced(account.clone(), &namespace);
    let config_maps: Api<ConfigMap> = Api::namespaced(account.clone(), &namespace);
    let secrets: Api<Secret> = Api::namespaced(account.clone(), &namespace);
    ensure!(forbidden(deployments.get("other").await.map(drop)));
    ensure!(
        config_maps.get("other").await.is_ok(),
        "ConfigMaps by any name"
    );
    ensure!(forbidden(secrets.get("mysql-secret").await.map(drop)));
    ensure!(forbidden(
        deployments.list(&Default::default()).await.map(drop)
    ));
    Ok(())
}
