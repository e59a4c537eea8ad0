use serde_json::json;

use super::*;
use crate::swf::api_server_env::resolve;

fn deployment() -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": "ml-pipeline", "namespace": "kubeflow"},
        "spec": {"selector": {"matchLabels": {"app": "ml-pipeline"}}, "template": {"spec": {"containers": [
            {"name": API_SERVER_CONTAINER, "env": [{"name": "V2_DRIVER_IMAGE", "value": "d:2.17.1"}]}
        ]}}}
    }))
    .unwrap()
}

fn pod(name: &str, hash: &str, image: &str, phase: &str, started: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "kubeflow", "labels": {"app": "ml-pipeline", "pod-template-hash": hash}},
        "spec": {"containers": [
            {"name": API_SERVER_CONTAINER, "env": [{"name": "V2_DRIVER_IMAGE", "value": image}]}
        ]},
        "status": {"phase": phase, "containerStatuses": [
            {"name": API_SERVER_CONTAINER, "image": "api", "imageID": "", "ready": true, "restartCount": 0,
             "state": {"running": {"startedAt": started}}}
        ]}
    }))
    .unwrap()
}

fn image_of(spec: &PodSpec) -> String {
    spec.containers[0].env.as_ref().unwrap()[0]
        .value
        .clone()
        .unwrap()
}

#[test]
fn the_running_pods_spec_wins_over_a_template_not_rolled_out() {
    let deployment = deployment();
    let pods = [
        pod("a", "h1", "d:2.17.0", "Running", "2026-12-01T10:00:05Z"),
        pod("b", "h1", "d:2.17.0", "Running", "2026-12-01T10:00:01Z"),
        pod("c", "h2", "d:2.17.1", "Pending", "2026-12-01T11:00:00Z"),
    ];
    match running_spec(&deployment, &pods).unwrap() {
        RunningSpec::Pods {
            spec,
            pods,
            started,
        } => {
            assert_eq!(image_of(spec), "d:2.17.0");
            assert_eq!(pods, ["kubeflow/a", "kubeflow/b"]);
            assert_eq!(started.unwrap().0.to_string(), "2026-12-01T10:00:01Z");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn without_a_running_pod_the_template_and_with_two_templates_a_rollout() {
    let deployment = deployment();
    match running_spec(&deployment, &[]).unwrap() {
        RunningSpec::Template(spec) => assert_eq!(image_of(spec), "d:2.17.1"),
        other => panic!("{other:?}"),
    }
    let pods = [
        pod("a", "h1", "d:2.17.0", "Running", "2026-12-01T10:00:00Z"),
        pod("b", "h2", "d:2.17.1", "Running", "2026-12-01T11:00:00Z"),
    ];
    assert!(matches!(
        running_spec(&deployment, &pods).unwrap(),
        RunningSpec::Rollout { templates } if templates == ["h1", "h2"]
    ));
}

#[test]
fn a_config_map_written_after_the_start_makes_the_environment_unknown() {
    let container: k8s_openapi::api::core::v1::Container = serde_json::from_value(json!({
        "name": API_SERVER_CONTAINER,
        "envFrom": [{"configMapRef": {"name": "pipeline-install-config"}}]
    }))
    .unwrap();
    let data = BTreeMap::from([(
        "pipeline-install-config".to_owned(),
        BTreeMap::from([("LOG".to_owned(), "1".to_owned())]),
    )]);
    let env = resolve(&container, "kubeflow", &data).unwrap();
    let time = |text: &str| Time(text.parse().unwrap());
    let started = time("2026-12-01T10:00:00Z");
    let written = |at: &str| BTreeMap::from([("pipeline-install-config".to_owned(), time(at))]);
    assert_eq!(
        changed_since_start(&env, &written("2026-12-01T09:59:59Z"), Some(&started)),
        None
    );
    assert_eq!(
        changed_since_start(&env, &written("2026-12-01T10:00:00Z"), Some(&started)),
        None,
        "the same second is the start's own read"
    );
    let why = changed_since_start(&env, &written("2026-12-01T10:00:01Z"), Some(&started)).unwrap();
    assert!(
        why.contains("pipeline-install-config") && why.contains("restarts"),
        "{why}"
    );
    assert_eq!(
        changed_since_start(&env, &written("2026-12-02T00:00:00Z"), None),
        None
    );
}

#[test]
fn the_writer_annotation_of_a_running_pod_is_found() {
    let mut announcing = pod("api-1", "h1", "d", "Running", "2026-12-01T10:00:00Z");
    announcing.metadata.annotations = Some(
        [(
            SCHEDULE_WRITER_ANNOTATION.to_owned(),
            "api-owned-v1:9f2c".to_owned(),
        )]
        .into(),
    );
    let mut gone = announcing.clone();
    gone.status.as_mut().unwrap().phase = Some("Succeeded".into());
    assert_eq!(writer_protocol(std::slice::from_ref(&gone)), None);
    assert_eq!(
        writer_protocol(&[gone, announcing]),
        Some(("kubeflow/api-1".into(), "api-owned-v1:9f2c".into()))
    );
}

#[test]
fn multi_user_mode_is_read_as_kfp_reads_it() {
    let env = |vars: &[(&str, &str)]| ResolvedEnv {
        vars: vars
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect(),
        origin: vars
            .iter()
            .map(|(k, _)| {
                (
                    (*k).into(),
                    "ConfigMap pipeline-api-server-config (envFrom)".into(),
                )
            })
            .collect(),
        ..ResolvedEnv::default()
    };
    let on = mode_of(&env(&[("MULTIUSER", "true")])).unwrap();
    assert!(
        on.multi_user && on.source.contains("pipeline-api-server-config"),
        "{on:?}"
    );
    assert!(!mode_of(&env(&[("MULTIUSER", "False")])).unwrap().multi_user);
    assert!(!mode_of(&env(&[("MULTIUSER", "")])).unwrap().multi_user);
    assert!(!mode_of(&env(&[])).unwrap().multi_user);
    assert!(
        mode_of(&env(&[("MULTIUSER", "yes")]))
            .unwrap_err()
            .contains("not a boolean")
    );
    let mut secret = env(&[]);
    secret
        .open_prefixes
        .insert(String::new(), "envFrom Secret extra may set it".into());
    assert!(mode_of(&secret).unwrap_err().contains("--kfp-multi-user"));
}
