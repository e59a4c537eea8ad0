//! The host's tombstone rules over Argo's stale-copy event sequences, with a clock moved by hand.

use std::sync::Arc;
use std::time::Duration;

use pipewarden::exit::TombstoneCache;
use pipewarden::exit::tombstone::{
    ManualClock, MonotonicClock, Phase, ResourceVersion, Sighting, UidKey, advance,
    parse_resource_version,
};

fn seen(rv: &str, phase: Phase) -> Sighting<'_> {
    Sighting {
        resource_version: rv,
        phase,
        complete: phase.is_complete(),
        deleted: false,
    }
}

fn cache(ttl_secs: u64) -> (TombstoneCache, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::default());
    (
        TombstoneCache::new(Duration::from_secs(ttl_secs), 1000, clock.clone()),
        clock,
    )
}

#[test]
fn resource_versions_are_decimal_without_leading_zeros() {
    assert_eq!(
        parse_resource_version("110"),
        Some(ResourceVersion::Word(110))
    );
    for bad in ["", "0", "0110", "-1", "1e3", "abc", " 5", "+5", "１２"] {
        assert_eq!(parse_resource_version(bad), None, "{bad:?}");
    }
}

#[test]
fn resource_versions_of_any_length_order_as_integers() {
    let rv = |text: &str| parse_resource_version(text).unwrap();
    assert!(rv("99") < rv("100"));
    let max = u64::MAX.to_string();
    assert_eq!(rv(&max), ResourceVersion::Word(u64::MAX));
    // Past 64 bits: kept as digits, still ordered as integers.
    assert!(rv(&max) < rv("18446744073709551616"));
    assert!(rv("18446744073709551616") < rv("18446744073709551617"));
    assert!(rv("99999999999999999999999") < rv("100000000000000000000000"));
    assert_eq!(
        rv("123456789012345678901234567890").to_string(),
        "123456789012345678901234567890"
    );
    // In the cache too: a wide version raises the entry, a lower one does not lower it.
    let (tombs, _) = cache(600);
    let uid = "7f0c7c1e-4d8a-4a63-9b1f-1c2d3e4f5a61";
    tombs.observe(uid, &seen("18446744073709551617", Phase::Succeeded));
    tombs.observe(uid, &seen("18446744073709551616", Phase::Running));
    let held = tombs.get(uid).unwrap();
    assert_eq!(held.resource_version, rv("18446744073709551617"));
    assert!(held.completed);
}

#[test]
fn the_stale_copy_sequence_keeps_the_highest_completed_version() {
    let (tombs, _) = cache(600);
    let u1 = "7f0c7c1e-4d8a-4a63-9b1f-1c2d3e4f5a61";
    tombs.observe(u1, &seen("100", Phase::New));
    tombs.observe(u1, &seen("101", Phase::Running));
    tombs.observe(u1, &seen("105", Phase::Running));
    let done = tombs.observe(u1, &seen("110", Phase::Succeeded)).unwrap();
    assert_eq!(
        (done.resource_version, done.completed),
        (ResourceVersion::Word(110), true)
    );

    // A stale completion copy (rv 105) must not lower the tombstone.
    let after_stale = tombs.observe(u1, &seen("105", Phase::Succeeded)).unwrap();
    assert_eq!(after_stale.resource_version, 110);
    assert!(after_stale.completed);

    // The controller's own annotation write raises it; still completed.
    let raised = tombs.observe(u1, &seen("111", Phase::Succeeded)).unwrap();
    assert_eq!(
        (raised.resource_version, raised.completed),
        (ResourceVersion::Word(111), true)
    );

    // Delete: recorded as finished; a re-creation has a new uid and starts clean.
    let deleted = Sighting {
        deleted: true,
        ..seen("112", Phase::Succeeded)
    };
    assert!(tombs.observe(u1, &deleted).unwrap().completed);
    assert!(tombs.get("0b1c2d3e-0000-4000-8000-000000000002").is_none());
}

#[test]
fn a_retry_raises_the_entry_and_clears_completed() {
    let previous = advance(None, &seen("110", Phase::Succeeded), Duration::ZERO);
    let retried = advance(
        previous,
        &seen("150", Phase::Running),
        Duration::from_secs(5),
    )
    .unwrap();
    assert_eq!(
        (retried.resource_version, retried.completed),
        (ResourceVersion::Word(150), false)
    );
    assert_eq!(retried.raised_at, Duration::from_secs(5));
}

#[test]
fn an_unparseable_version_changes_nothing() {
    let previous = advance(None, &seen("110", Phase::Succeeded), Duration::ZERO);
    assert_eq!(
        advance(
            previous.clone(),
            &seen("not-a-number", Phase::Running),
            Duration::ZERO
        ),
        previous
    );
    assert_eq!(
        advance(None, &seen("", Phase::Running), Duration::ZERO),
        None
    );
}

#[test]
fn tombstones_expire_after_the_ttl_on_the_injected_clock() {
    let (tombs, clock) = cache(600);
    let uid = "7f0c7c1e-4d8a-4a63-9b1f-1c2d3e4f5a61";
    tombs.observe(uid, &seen("110", Phase::Succeeded));
    clock.advance(Duration::from_secs(599));
    assert!(tombs.get(uid).is_some());
    clock.advance(Duration::from_secs(1));
    assert!(tombs.get(uid).is_none(), "expired at exactly the ttl");
    // After expiry a stale copy starts a fresh entry, as after a restart.
    let fresh = tombs.observe(uid, &seen("105", Phase::Running)).unwrap();
    assert_eq!(
        (fresh.resource_version, fresh.completed),
        (ResourceVersion::Word(105), false)
    );
}

#[test]
fn raising_an_entry_restarts_its_ttl() {
    let (tombs, clock) = cache(600);
    let uid = "7f0c7c1e-4d8a-4a63-9b1f-1c2d3e4f5a61";
    tombs.observe(uid, &seen("110", Phase::Succeeded));
    clock.advance(Duration::from_secs(500));
    tombs.observe(uid, &seen("111", Phase::Succeeded));
    clock.advance(Duration::from_secs(500));
    assert_eq!(tombs.get(uid).unwrap().resource_version, 111);
}

#[test]
fn a_new_cache_is_empty_as_after_a_restart() {
    let (tombs, _) = cache(600);
    assert!(tombs.is_empty());
    assert!(tombs.get("7f0c7c1e-4d8a-4a63-9b1f-1c2d3e4f5a61").is_none());
}

#[test]
fn uid_keys_pack_uuids_and_hash_anything_else() {
    let a = UidKey::new("7f0c7c1e-4d8a-4a63-9b1f-1c2d3e4f5a61");
    assert_eq!(a, UidKey::new("7F0C7C1E-4D8A-4A63-9B1F-1C2D3E4F5A61"));
    assert_ne!(a, UidKey::new("7f0c7c1e-4d8a-4a63-9b1f-1c2d3e4f5a62"));
    assert_ne!(UidKey::new("u1"), UidKey::new("u2"));
    assert_eq!(UidKey::new("u1"), UidKey::new("u1"));
}

#[test]
fn beyond_capacity_the_least_recently_used_go_first() {
    let clock = Arc::new(ManualClock::default());
    let tombs = TombstoneCache::new(Duration::from_secs(600), 16, clock.clone());
    let uids: Vec<String> = (0..64u32)
        .map(|i| format!("7f0c7c1e-4d8a-4a63-9b1f-{i:012x}"))
        .collect();
    for uid in &uids {
        clock.advance(Duration::from_secs(1));
        tombs.observe(uid, &seen("110", Phase::Succeeded));
        tombs.settle();
    }
    assert_eq!(tombs.len(), 16, "bounded at max entries");
    assert!(
        uids[48..].iter().all(|uid| tombs.get(uid).is_some()),
        "the newest stay"
    );
    assert!(
        uids[..48].iter().all(|uid| tombs.get(uid).is_none()),
        "the oldest went"
    );
}

#[test]
fn expired_entries_are_hidden_on_the_injected_clock_and_freed_on_moka_s() {
    let (tombs, clock) = cache(600);
    for i in 0..100u32 {
        let uid = format!("7f0c7c1e-4d8a-4a63-9b1f-{i:012x}");
        tombs.observe(&uid, &seen("110", Phase::Succeeded));
    }
    assert_eq!(tombs.len(), 100);
    clock.advance(Duration::from_secs(300));
    // Raised half-way: lives on for a full ttl from now.
    tombs.observe(
        "7f0c7c1e-4d8a-4a63-9b1f-000000000007",
        &seen("111", Phase::Succeeded),
    );
    clock.advance(Duration::from_secs(300));
    assert_eq!(tombs.len(), 1, "only the raised one still counts");
    clock.advance(Duration::from_secs(300));
    assert!(tombs.is_empty());

    // On a real clock, moka drops them: the memory is given back, not just hidden.
    let real = TombstoneCache::new(
        Duration::from_millis(100),
        1000,
        Arc::new(MonotonicClock::new()),
    );
    for i in 0..100u32 {
        let uid = format!("7f0c7c1e-4d8a-4a63-9b1f-{i:012x}");
        real.observe(&uid, &seen("110", Phase::Succeeded));
    }
    real.settle();
    assert_eq!(real.approx_len(), 100);
    std::thread::sleep(Duration::from_millis(250));
    real.settle();
    assert_eq!(real.approx_len(), 0);
}

#[test]
fn the_policy_sees_the_workflow_without_argo_node_bookkeeping() {
    use pipewarden::exit::event::policy_view;
    let workflow = serde_json::json!({
        "metadata": {"name": "w", "uid": "u", "annotations": {"nodes": "kept outside status"}},
        "spec": {"onExit": "exit-handler", "templates": [{"name": "main"}]},
        "status": {"phase": "Succeeded", "finishedAt": "2026-08-03T02:01:12Z",
                   "nodes": {"w": {"phase": "Succeeded"}}, "storedTemplates": {"t": {}},
                   "storedWorkflowTemplateSpec": {"x": 1}}
    });
    let seen: serde_json::Value = serde_json::from_str(&policy_view(&workflow)).unwrap();
    let mut expected = workflow.clone();
    let status = expected["status"].as_object_mut().unwrap();
    for field in ["nodes", "storedTemplates", "storedWorkflowTemplateSpec"] {
        assert!(status.remove(field).is_some(), "{field} was in the input");
    }
    assert_eq!(seen, expected);
}

#[test]
fn the_policy_sees_the_exit_handler_of_a_stored_workflow_template_and_nothing_else_of_it() {
    use pipewarden::exit::event::policy_view;
    let workflow = serde_json::json!({
        "metadata": {"name": "w", "uid": "u"},
        "spec": {"workflowTemplateRef": {"name": "nightly"}},
        "status": {"phase": "Failed",
                   "storedWorkflowTemplateSpec": {
                       "entrypoint": "main", "onExit": "notify",
                       "hooks": {"exit": {"template": "bye"}, "running": {"template": "hi"}},
                       "templates": [{"name": "main"}, {"name": "notify"}]}}
    });
    let seen: serde_json::Value = serde_json::from_str(&policy_view(&workflow)).unwrap();
    assert_eq!(
        seen["status"]["storedWorkflowTemplateSpec"],
        serde_json::json!({"onExit": "notify", "hooks": {"exit": {"template": "bye"}}})
    );
    assert_eq!(seen["spec"], workflow["spec"]);
}
