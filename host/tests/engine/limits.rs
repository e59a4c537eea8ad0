//! The engine against hostile guests: every failure is its own error variant, costs one
//! decision, and leaves the process able to evaluate a good policy right after.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pipewarden::engine::{
    Eligibility, EventKind, Export, LoadError, Policy, PolicyError, PolicyErrorKind, PolicyOptions,
    RebuildInput, RebuildPolicy, RenderContext, RetryObserver, Stamps, WorkflowEvent,
};
use pipewarden_test_support::{built_policy, cached_options, read, swf_fixture};
use serde_json::json;

const PANIC_MESSAGE: &str = "hostile policy panicked on purpose";

fn hostile(options: PolicyOptions) -> Policy {
    let policy =
        Policy::load(&built_policy("hostile-policy"), options).expect("load hostile policy");
    policy.validate_settings("{}").expect("ok mode validates");
    policy
}

fn render_with(policy: &Policy, settings: serde_json::Value) -> Result<String, PolicyError> {
    let context = RenderContext {
        target_version: Some("2.17.0".into()),
        settings: settings.to_string(),
    };
    policy.render_swf(&swf_fixture("kfp-2.3.yaml"), &context)
}

/// The good policy still decides correctly in this process.
fn good_policy_still_works() {
    let policy =
        Policy::load(&built_policy("kfp-default"), cached_options()).expect("load kfp-default");
    let settings = read("policies/kfp-default/settings/kfp-2.17.0.json");
    policy.validate_settings(&settings).expect("settings");
    let rendered = policy
        .render_swf(
            &swf_fixture("kfp-2.3.yaml"),
            &RenderContext {
                target_version: Some("2.17.0".into()),
                settings,
            },
        )
        .expect("render");
    assert!(rendered.contains("kfp-driver:2.17.0"));
}

#[test]
fn an_infinite_loop_times_out_at_the_deadline() {
    let policy = hostile(PolicyOptions {
        render_timeout: Duration::from_millis(50),
        ..cached_options()
    });
    let started = Instant::now();
    let error = render_with(&policy, json!({"mode": "spin"})).unwrap_err();
    let elapsed = started.elapsed();
    eprintln!("spin stopped after {elapsed:?} (deadline 50 ms)");
    assert!(
        matches!(error, PolicyError::Timeout { limit, .. } if limit == Duration::from_millis(50)),
        "{error:?}"
    );
    assert_eq!(error.kind(), PolicyErrorKind::Timeout);
    // A hang guard, not a speed target: a broken deadline would never return at all.
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    good_policy_still_works();
}

#[test]
fn a_guest_that_tries_to_wait_is_stopped_at_once() {
    let policy = hostile(cached_options());
    let started = Instant::now();
    let error = render_with(&policy, json!({"mode": "sleep", "bytes": 60_000})).unwrap_err();
    eprintln!(
        "a one-minute sleep was refused after {:?}",
        started.elapsed()
    );
    let PolicyError::Trap { message, .. } = &error else {
        panic!("expected a trap, got {error:?}");
    };
    assert!(message.contains("may not wait"), "{message}");
    good_policy_still_works();
}

#[test]
fn an_allocation_bomb_hits_the_memory_cap() {
    let policy = hostile(PolicyOptions {
        memory_limit: 16 << 20,
        ..cached_options()
    });
    let error = render_with(&policy, json!({"mode": "alloc-bomb"})).unwrap_err();
    assert!(
        matches!(error, PolicyError::OutOfMemory { limit, .. } if limit == 16 << 20),
        "{error:?}"
    );
    assert_eq!(error.kind(), PolicyErrorKind::OutOfMemory);
    good_policy_still_works();
}

#[test]
fn a_panic_is_a_trap_carrying_the_panic_message() {
    let policy = hostile(cached_options());
    let error = render_with(&policy, json!({"mode": "panic"})).unwrap_err();
    let PolicyError::Trap { message, .. } = &error else {
        panic!("expected a trap, got {error:?}");
    };
    assert!(message.contains(PANIC_MESSAGE), "{message}");
    assert_eq!(error.kind(), PolicyErrorKind::Trap);
    good_policy_still_works();
}

#[test]
fn a_stack_overflow_and_an_abort_are_traps() {
    let policy = hostile(cached_options());
    for mode in ["stack-overflow", "abort"] {
        let error = render_with(&policy, json!({"mode": mode})).unwrap_err();
        assert!(
            matches!(error, PolicyError::Trap { .. }),
            "{mode}: {error:?}"
        );
    }
    good_policy_still_works();
}

#[test]
fn a_100_mb_output_is_rejected() {
    let policy = hostile(cached_options());
    let error = render_with(
        &policy,
        json!({"mode": "huge-output", "bytes": 100_000_000}),
    )
    .unwrap_err();
    // Building 100 MB already breaks the 64 MiB memory cap inside the guest.
    assert!(
        matches!(error, PolicyError::OutOfMemory { .. }),
        "{error:?}"
    );
    good_policy_still_works();
}

#[test]
fn an_output_over_the_output_cap_is_bad_output() {
    let policy = hostile(PolicyOptions {
        max_output_bytes: 1 << 20,
        ..cached_options()
    });
    let error = render_with(&policy, json!({"mode": "huge-output", "bytes": 8 << 20})).unwrap_err();
    let PolicyError::BadOutput { reason, .. } = &error else {
        panic!("expected bad output, got {error:?}");
    };
    assert!(reason.contains("over the 1048576-byte limit"), "{reason}");

    // The same cap holds for a reason string from a decision export.
    let mut swf: serde_json::Value = serde_json::from_str(&swf_fixture("kfp-2.3.yaml")).unwrap();
    swf["metadata"]["annotations"] = json!({"hostile.pipewarden.io/mode": "huge-output", "hostile.pipewarden.io/bytes": "2000000"});
    let input = RebuildInput {
        policy: RebuildPolicy::Always,
        swf: swf.to_string(),
        target_version: None,
        stamps: Stamps {
            version: None,
            render_hash: None,
        },
        settings: "{}".into(),
    };
    let error = policy.should_rebuild(&input).unwrap_err();
    assert!(matches!(error, PolicyError::BadOutput { .. }), "{error:?}");
    good_policy_still_works();
}

#[test]
fn a_render_that_is_not_json_or_renames_the_object_is_bad_output() {
    let policy = hostile(cached_options());
    let error = render_with(&policy, json!({"mode": "bad-json"})).unwrap_err();
    assert!(matches!(error, PolicyError::BadOutput { .. }), "{error:?}");
    assert_eq!(error.kind(), PolicyErrorKind::BadOutput);
}

#[test]
fn a_guest_error_is_its_own_variant() {
    let policy = hostile(cached_options());
    let error = render_with(&policy, json!({"mode": "error"})).unwrap_err();
    assert!(
        matches!(&error, PolicyError::Guest { message, .. } if message.contains("on purpose")),
        "{error:?}"
    );
    assert_eq!(error.kind(), PolicyErrorKind::Guest);
    let error = policy
        .validate_settings(r#"{"validate": "error"}"#)
        .unwrap_err();
    assert!(matches!(error, PolicyError::Guest { .. }), "{error:?}");
}

#[test]
fn an_input_over_the_input_cap_is_refused_before_the_call() {
    let policy = hostile(PolicyOptions {
        max_input_bytes: 1024,
        ..cached_options()
    });
    let error = render_with(&policy, json!({"mode": "ok"})).unwrap_err();
    assert!(
        matches!(error, PolicyError::InputTooLarge { limit: 1024, .. }),
        "{error:?}"
    );
}

#[test]
fn log_and_stdio_floods_are_bounded_and_the_call_succeeds() {
    let policy = hostile(cached_options());
    for mode in ["log-flood", "print-flood"] {
        let rendered = render_with(&policy, json!({"mode": mode, "bytes": 1_000_000})).expect(mode);
        assert!(rendered.contains("ScheduledWorkflow"));
    }
}

#[test]
fn each_export_fails_alone_and_the_next_call_is_fresh() {
    let policy = hostile(cached_options());
    let workflow = |mode: &str| {
        json!({"metadata": {"name": "w", "namespace": "n", "uid": "u", "resourceVersion": "5",
                            "annotations": {"hostile.pipewarden.io/mode": mode}}})
    };
    let event = |mode: &str| WorkflowEvent {
        kind: EventKind::Modified,
        namespace: "n".into(),
        name: "w".into(),
        uid: "u".into(),
        resource_version: "5".into(),
        phase: "Running".into(),
        labels: vec![],
        workflow: workflow(mode).to_string(),
    };
    let error = policy.exit_eligibility(&event("panic"), None).unwrap_err();
    assert!(matches!(error, PolicyError::Trap { .. }), "{error:?}");
    let error = policy.exit_eligibility(&event("spin"), None).unwrap_err();
    assert!(
        matches!(error, PolicyError::Timeout { limit, .. } if limit == Duration::from_millis(10)),
        "{error:?}"
    );
    // The next decision runs in a fresh instance and succeeds.
    assert!(matches!(
        policy.exit_eligibility(&event("ok"), None).unwrap(),
        Eligibility::Process
    ));
}

#[test]
fn a_decision_that_times_out_is_tried_once_more_before_it_is_an_error() {
    let retried = Arc::new(Mutex::new(Vec::new()));
    let seen = retried.clone();
    let policy = hostile(PolicyOptions {
        retry_observer: Some(RetryObserver::new(move |export| {
            seen.lock().unwrap().push(export)
        })),
        ..cached_options()
    });
    let swf = |mode: &str| {
        json!({"apiVersion": "kubeflow.org/v1beta1", "kind": "ScheduledWorkflow",
               "metadata": {"name": "s", "namespace": "n",
                            "annotations": {"hostile.pipewarden.io/mode": mode}}})
        .to_string()
    };
    let input = |mode: &str| RebuildInput {
        policy: RebuildPolicy::Always,
        swf: swf(mode),
        target_version: Some("2.17.0".into()),
        stamps: Stamps {
            version: None,
            render_hash: None,
        },
        settings: "{}".into(),
    };
    let error = policy.should_rebuild(&input("spin")).unwrap_err();
    assert!(matches!(error, PolicyError::Timeout { .. }), "{error:?}");
    assert_eq!(*retried.lock().unwrap(), [Export::ShouldRebuild]);
    // Neither a trap nor a decision is tried twice.
    assert!(matches!(
        policy.should_rebuild(&input("panic")).unwrap_err(),
        PolicyError::Trap { .. }
    ));
    policy.should_rebuild(&input("ok")).expect("a decision");
    assert_eq!(retried.lock().unwrap().len(), 1);
}

#[test]
fn a_reused_instance_refuses_calls_after_a_trap() {
    let policy = hostile(cached_options());
    let mut instance = policy.instance().unwrap();
    let context = |mode: &str| RenderContext {
        target_version: None,
        settings: json!({"mode": mode}).to_string(),
    };
    let swf = swf_fixture("kfp-2.3.yaml");
    instance
        .render_swf(&swf, &context("ok"))
        .expect("first call");
    instance.render_swf(&swf, &context("panic")).unwrap_err();
    let error = instance.render_swf(&swf, &context("ok")).unwrap_err();
    assert!(
        matches!(&error, PolicyError::Trap { message, .. } if message.contains("earlier trap")),
        "{error:?}"
    );
}

#[test]
fn a_component_of_another_version_is_refused_naming_it() {
    let error = Policy::load(&built_policy("other-world-policy"), cached_options()).unwrap_err();
    let LoadError::WorldMismatch { found, .. } = &error else {
        panic!("expected a world mismatch, got {error:?}");
    };
    assert!(found.contains("@0.2.0"), "{found}");
    eprintln!("refused: {error}");
    good_policy_still_works();
}

#[test]
fn a_component_built_against_0_1_0_still_loads_and_decides() {
    // 0.1.1 only added `host.settings`; wasmtime matches 0.1.x imports with each other.
    let policy = Policy::load(&built_policy("contract-0-1-0-policy"), cached_options())
        .expect("a 0.1.0 component loads")
        .with_settings(r#"{"notify":"all"}"#);
    policy.validate_settings("{}").expect("validates");
    let event = WorkflowEvent {
        kind: EventKind::Modified,
        namespace: "n".into(),
        name: "w".into(),
        uid: "u".into(),
        resource_version: "5".into(),
        phase: "Succeeded".into(),
        labels: vec![],
        workflow: "{}".into(),
    };
    let decision = policy.exit_eligibility(&event, None).expect("decides");
    assert!(matches!(decision, Eligibility::Process), "{decision:?}");
    let input = RebuildInput {
        policy: RebuildPolicy::Always,
        swf: "{}".into(),
        target_version: None,
        stamps: Stamps {
            version: None,
            render_hash: None,
        },
        settings: "{}".into(),
    };
    assert!(matches!(
        policy.should_rebuild(&input).expect("decides"),
        pipewarden::engine::RebuildDecision::Skip(reason) if reason.contains("0.1.0")
    ));
}

#[test]
fn bytes_that_are_not_a_component_are_refused() {
    // A minimal core module: magic and version 1.
    let core_module = b"\0asm\x01\0\0\0";
    let error = Policy::from_bytes(core_module, "core.wasm", cached_options()).unwrap_err();
    assert!(matches!(error, LoadError::NotAComponent), "{error:?}");
    let error = Policy::from_bytes(b"not wasm at all", "junk", cached_options()).unwrap_err();
    assert!(matches!(error, LoadError::NotAComponent), "{error:?}");
}

#[test]
fn a_pinned_digest_must_match() {
    let path = built_policy("kfp-default");
    let bytes = std::fs::read(&path).unwrap();
    let good = Policy::from_bytes(&bytes, "kfp-default", cached_options()).unwrap();
    let pinned = PolicyOptions {
        pinned_sha256: Some(good.digest().to_uppercase().replace("SHA256:", "sha256:")),
        ..cached_options()
    };
    Policy::load(&path, pinned).expect("the right pin loads");
    let wrong = PolicyOptions {
        pinned_sha256: Some(format!("sha256:{}", "0".repeat(64))),
        ..cached_options()
    };
    let error = Policy::load(&path, wrong).unwrap_err();
    assert!(
        matches!(&error, LoadError::DigestMismatch { found, .. } if found == good.digest()),
        "{error:?}"
    );
    let malformed = PolicyOptions {
        pinned_sha256: Some("sha256:xyz".into()),
        ..cached_options()
    };
    assert!(matches!(
        Policy::load(&path, malformed).unwrap_err(),
        LoadError::BadPin(_)
    ));
}
