use serde_json::json;

use super::*;

fn container(env: serde_json::Value) -> Container {
    serde_json::from_value(json!({"name": API_SERVER_CONTAINER, "env": env})).unwrap()
}

fn maps(entries: &[(&str, &[(&str, &str)])]) -> BTreeMap<String, BTreeMap<String, String>> {
    entries
        .iter()
        .map(|(name, data)| {
            let data = data
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            ((*name).to_owned(), data)
        })
        .collect()
}

#[test]
fn values_config_map_keys_and_the_namespace_resolve_and_secrets_are_never_read() {
    let c = container(json!([
        {"name": "V2_DRIVER_IMAGE", "value": "ghcr.io/kubeflow/kfp-driver:2.16.1"},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "DEFAULT_SECURITY_CONTEXT_RUN_AS_USER", "valueFrom": {"configMapKeyRef":
            {"name": "pipeline-install-config", "key": "defaultSecurityContextRunAsUser", "optional": true}}},
        {"name": "DBCONFIG_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "mysql-secret", "key": "password"}}},
        {"name": "MISSING_OPTIONAL", "valueFrom": {"configMapKeyRef":
            {"name": "pipeline-install-config", "key": "nope", "optional": true}}},
    ]));
    let config = maps(&[(
        "pipeline-install-config",
        &[("defaultSecurityContextRunAsUser", "1001")],
    )]);
    let env = resolve(&c, "kubeflow", &config).unwrap();
    assert_eq!(
        env.lookup("V2_DRIVER_IMAGE"),
        Lookup::Known("ghcr.io/kubeflow/kfp-driver:2.16.1")
    );
    assert_eq!(env.lookup("POD_NAMESPACE"), Lookup::Known("kubeflow"));
    assert_eq!(
        env.lookup("DEFAULT_SECURITY_CONTEXT_RUN_AS_USER"),
        Lookup::Known("1001")
    );
    assert!(
        matches!(env.lookup("DBCONFIG_PASSWORD"), Lookup::Unknown(why) if why.contains("mysql-secret")),
        "{env:?}"
    );
    assert!(!env.vars.contains_key("DBCONFIG_PASSWORD"));
    assert_eq!(env.lookup("MISSING_OPTIONAL"), Lookup::Unset);
    assert_eq!(env.unset, ["MISSING_OPTIONAL"]);
    assert_eq!(config_maps_named(&c), ["pipeline-install-config"]);
    assert_eq!(
        env.origin_of("DEFAULT_SECURITY_CONTEXT_RUN_AS_USER"),
        "ConfigMap pipeline-install-config key defaultSecurityContextRunAsUser"
    );
}

#[test]
fn a_required_reference_that_cannot_resolve_is_an_error_naming_it() {
    let c = container(json!([{"name": "X", "valueFrom": {"configMapKeyRef":
        {"name": "pipeline-install-config", "key": "k"}}}]));
    let error = resolve(&c, "kubeflow", &maps(&[])).unwrap_err();
    assert!(
        error.contains("pipeline-install-config") && error.contains('k'),
        "{error}"
    );
}

#[test]
fn env_wins_over_env_from_and_references_expand_in_order() {
    let c: Container = serde_json::from_value(json!({
        "name": "api",
        "envFrom": [{"configMapRef": {"name": "base"}, "prefix": "KFP_"}],
        "env": [
            {"name": "KFP_A", "value": "from-env"},
            {"name": "B", "value": "$(KFP_A)-$(KFP_C)-$$(KFP_A)-$(UNDEFINED)"},
        ]
    }))
    .unwrap();
    let env = resolve(
        &c,
        "ns",
        &maps(&[("base", &[("A", "from-map"), ("C", "c")])]),
    )
    .unwrap();
    assert_eq!(env.vars["KFP_A"], "from-env");
    assert_eq!(env.vars["B"], "from-env-c-$(KFP_A)-$(UNDEFINED)");
}

/// The multi-user manifests' shape: `MULTIUSER` from an `envFrom` ConfigMap; a later `envFrom`
/// Secret may override it (the kubelet applies sources in order), so it is not known, unless an
/// `env` entry sets it after all of them.
#[test]
fn an_env_from_secret_shadows_what_came_before_it() {
    let spec = |env: serde_json::Value| -> Container {
        serde_json::from_value(json!({
            "name": API_SERVER_CONTAINER,
            "envFrom": [
                {"configMapRef": {"name": "pipeline-api-server-config-5f8k2"}},
                {"secretRef": {"name": "extra-env"}},
                {"configMapRef": {"name": "late"}},
            ],
            "env": env,
        }))
        .unwrap()
    };
    let config = maps(&[
        (
            "pipeline-api-server-config-5f8k2",
            &[("MULTIUSER", "true"), ("V2_DRIVER_IMAGE", "d:2.18.1")],
        ),
        ("late", &[("PUBLISH_LOGS", "true")]),
    ]);
    let env = resolve(&spec(json!([])), "kubeflow", &config).unwrap();
    for shadowed in ["MULTIUSER", "V2_DRIVER_IMAGE", "NEVER_SET"] {
        assert!(
            matches!(env.lookup(shadowed), Lookup::Unknown(why) if why.contains("extra-env")),
            "{shadowed}: {:?}",
            env.lookup(shadowed)
        );
    }
    // A ConfigMap after the Secret, and `env`, are known again.
    assert_eq!(env.lookup("PUBLISH_LOGS"), Lookup::Known("true"));
    let env = resolve(
        &spec(json!([{"name": "MULTIUSER", "value": "false"}])),
        "kubeflow",
        &config,
    )
    .unwrap();
    assert_eq!(env.lookup("MULTIUSER"), Lookup::Known("false"));
    assert_eq!(
        env.unknown_for_policy().keys().collect::<Vec<_>>(),
        ["*", "V2_DRIVER_IMAGE"]
    );
}

#[test]
fn binary_data_and_invalid_names_are_not_variables_and_unknown_values_do_not_expand() {
    // The caller hands `data` only: a key only in `binaryData` is missing, as for the kubelet.
    let c: Container = serde_json::from_value(json!({
        "name": API_SERVER_CONTAINER,
        "envFrom": [{"configMapRef": {"name": "m"}}],
        "env": [
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "t"}}},
            {"name": "URL", "value": "https://$(TOKEN)@host"},
            {"name": "FROM_BINARY", "valueFrom": {"configMapKeyRef": {"name": "m", "key": "blob", "optional": true}}},
        ]
    }))
    .unwrap();
    let config = maps(&[(
        "m",
        &[("1BAD", "x"), ("has space", "x"), ("OK.name-1", "y")],
    )]);
    let env = resolve(&c, "ns", &config).unwrap();
    assert_eq!(
        env.vars.keys().collect::<Vec<_>>(),
        ["OK.name-1"],
        "{env:?}"
    );
    assert!(matches!(env.lookup("URL"), Lookup::Unknown(why) if why.contains("$(TOKEN)")));
    assert_eq!(env.lookup("FROM_BINARY"), Lookup::Unset);
}

#[test]
fn deployment_references_parse_and_the_api_server_container_is_found() {
    assert_eq!(
        DeploymentRef::parse("deployment/kubeflow/ml-pipeline"),
        Ok(DeploymentRef {
            namespace: "kubeflow".into(),
            name: "ml-pipeline".into()
        })
    );
    for bad in [
        "kubeflow/ml-pipeline",
        "deployment/kubeflow",
        "pod/kubeflow/x",
        "deployment//x",
    ] {
        assert!(DeploymentRef::parse(bad).is_err(), "{bad}");
    }
    let pod: PodSpec = serde_json::from_value(json!({"containers": [
        {"name": "sidecar"}, {"name": API_SERVER_CONTAINER}
    ]}))
    .unwrap();
    assert_eq!(
        api_server_container(Some(&pod)).unwrap().name,
        API_SERVER_CONTAINER
    );
    assert!(api_server_container(None).is_err());
}
