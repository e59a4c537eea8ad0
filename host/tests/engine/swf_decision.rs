//! One SWF decision, one instance: should-rebuild and render-swf of one SWF run in the same
//! fresh instance (instantiated once, not twice), and the next SWF's decision in another, so
//! nothing crosses SWFs. The hostile policy's `count` mode says how many calls its instance
//! served.

use pipewarden::engine::{Policy, PolicyError, RebuildPolicy};
use pipewarden::swf::decide::{RenderTarget, decide};
use pipewarden_test_support::{built_policy, cached_options, swf_fixture};

#[test]
fn both_calls_of_one_decision_share_an_instance_and_the_next_decision_gets_a_fresh_one() {
    let policy = Policy::load(&built_policy("hostile-policy"), cached_options()).unwrap();
    let settings = r#"{"mode":"count"}"#;
    let policy = policy.with_settings(settings);
    let live: serde_json::Value = serde_json::from_str(&swf_fixture("kfp-2.3.yaml")).unwrap();
    let target = RenderTarget {
        rebuild_policy: RebuildPolicy::Always,
        target_version: Some("2.17.0".into()),
        settings: settings.into(),
    };
    for decision in 1..=3 {
        match decide(&policy, &live, &target) {
            Err(PolicyError::Guest { message, .. }) => assert_eq!(
                message, "calls=2",
                "decision {decision}: should-rebuild and render-swf in one instance, and only \
                 this decision's calls in it"
            ),
            other => panic!("decision {decision}: {other:?}"),
        }
    }
}
