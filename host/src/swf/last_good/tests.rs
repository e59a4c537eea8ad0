use std::io::Write as _;

use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::{Value, json};

use super::*;

fn workflow() -> Value {
    json!({
        "parameters": [{"name": "message", "value": "\"hi\""}],
        "spec": "{\"kind\":\"Workflow\",\"spec\":{\"templates\":[]}}"
    })
}

fn swf(workflow: Value, annotations: Value) -> Value {
    json!({
        "metadata": {"name": "daily", "annotations": annotations},
        "spec": {"enabled": false, "workflow": workflow},
        "status": {"conditions": []}
    })
}

fn recorded(workflow: &Value) -> Value {
    json!({ LAST_GOOD_ANNOTATION: encode(workflow).expect("fits") })
}

#[test]
fn encode_then_decode_gives_the_workflow_back() {
    let text = encode(&workflow()).expect("fits");
    assert_eq!(decode(&text), Ok(workflow()));
}

#[test]
fn decode_refuses_what_is_not_a_record() {
    assert!(decode("%%%").unwrap_err().starts_with("not base64"));
    assert!(
        decode(&STANDARD.encode(b"plain"))
            .unwrap_err()
            .starts_with("not gzip")
    );
    let mut gzip = GzEncoder::new(Vec::new(), Compression::fast());
    gzip.write_all(b"[1, 2]").unwrap();
    let list = STANDARD.encode(gzip.finish().unwrap());
    assert_eq!(
        decode(&list),
        Err("does not hold a spec.workflow object".into())
    );
}

#[test]
fn decode_stops_a_record_that_inflates_without_bound() {
    let mut gzip = GzEncoder::new(Vec::new(), Compression::best());
    gzip.write_all(&vec![b' '; MAX_DECODED_BYTES + 10]).unwrap();
    let bomb = STANDARD.encode(gzip.finish().unwrap());
    assert!(decode(&bomb).unwrap_err().starts_with("inflates past"));
}

#[test]
fn record_sets_the_annotation_from_the_desired_workflow() {
    let mut desired = swf(workflow(), json!({"keep": "me"}));
    record(&mut desired);
    let annotations = &desired["metadata"]["annotations"];
    assert_eq!(annotations["keep"], "me");
    assert_eq!(
        decode(annotations[LAST_GOOD_ANNOTATION].as_str().unwrap()),
        Ok(workflow())
    );
}

#[test]
fn record_creates_annotations_when_there_are_none() {
    let mut desired = json!({"metadata": {"name": "daily"}, "spec": {"workflow": workflow()}});
    record(&mut desired);
    assert!(desired["metadata"]["annotations"][LAST_GOOD_ANNOTATION].is_string());
}

/// Random text hardly compresses, so a record of twice the budget of it cannot fit.
fn too_large_workflow() -> Value {
    use rand::{Rng as _, SeedableRng as _};
    let noise: String = rand::rngs::StdRng::seed_from_u64(7)
        .sample_iter(rand::distr::Alphanumeric)
        .take(2 * MAX_RECORD_BYTES)
        .map(char::from)
        .collect();
    json!({"spec": noise})
}

#[test]
fn record_too_large_to_keep_removes_an_older_record() {
    assert_eq!(encode(&too_large_workflow()), None);
    let mut desired = swf(too_large_workflow(), recorded(&workflow()));
    record(&mut desired);
    assert_eq!(
        desired["metadata"]["annotations"][LAST_GOOD_ANNOTATION],
        Value::Null
    );
    let mut fresh = swf(too_large_workflow(), json!({}));
    record(&mut fresh);
    assert_eq!(fresh["metadata"]["annotations"], json!({}));
}

#[test]
fn restore_candidate_takes_only_the_workflow_from_the_record() {
    let corrupted = json!({"spec": {"dynamicKey1": "dynamicValue1"}});
    let live = swf(corrupted, recorded(&workflow()));
    let Restore::Candidate(candidate) = restore_candidate(&live) else {
        panic!("expected a candidate");
    };
    assert_eq!(candidate["spec"]["workflow"], workflow());
    // Everything else stays as it is live, e.g. an enable/disable made since the record.
    assert_eq!(candidate["spec"]["enabled"], false);
    assert_eq!(candidate["status"], live["status"]);
    assert_eq!(candidate["metadata"], live["metadata"]);
}

#[test]
fn restore_candidate_without_a_record() {
    assert_eq!(
        restore_candidate(&swf(workflow(), json!({}))),
        Restore::NoRecord
    );
    assert_eq!(
        restore_candidate(&json!({"spec": {"workflow": {}}})),
        Restore::NoRecord
    );
}

#[test]
fn restore_candidate_with_an_unreadable_record() {
    let live = swf(json!({}), json!({ LAST_GOOD_ANNOTATION: "not a record" }));
    let Restore::Unusable(why) = restore_candidate(&live) else {
        panic!("expected unusable");
    };
    assert!(why.contains("unreadable"), "{why}");
}

#[test]
fn restore_candidate_when_the_live_workflow_is_the_record() {
    let live = swf(workflow(), recorded(&workflow()));
    assert!(matches!(restore_candidate(&live), Restore::Unusable(why) if why.contains("already")));
}
