//! Leader-election rules: who creates, renews, takes over or follows.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use pipewarden::lease::{LeaseView, Step, next_step, renew_deadline, retry_period, round_timeout};

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn held_by(holder: &str, renewed: i64) -> LeaseView {
    LeaseView {
        holder: Some(holder.into()),
        renewed_at: Some(at(renewed)),
        duration: Duration::from_secs(15),
    }
}

#[test]
fn no_lease_is_created() {
    assert_eq!(next_step(None, "a", at(0)), Step::Create);
}

#[test]
fn our_lease_is_renewed_even_if_late() {
    assert_eq!(next_step(Some(&held_by("a", 0)), "a", at(100)), Step::Renew);
}

#[test]
fn a_live_claim_of_another_holder_is_followed_until_it_expires() {
    let lease = held_by("b", 0);
    assert_eq!(
        next_step(Some(&lease), "a", at(15)),
        Step::Follow { holder: "b".into() }
    );
    assert_eq!(next_step(Some(&lease), "a", at(16)), Step::TakeOver);
}

#[test]
fn a_released_or_unrenewed_lease_is_taken_over() {
    let released = LeaseView {
        holder: None,
        ..held_by("b", 0)
    };
    assert_eq!(next_step(Some(&released), "a", at(1)), Step::TakeOver);
    let never_renewed = LeaseView {
        renewed_at: None,
        ..held_by("b", 0)
    };
    assert_eq!(next_step(Some(&never_renewed), "a", at(1)), Step::TakeOver);
}

#[test]
fn a_leader_stops_writing_before_a_standby_may_take_over() {
    let duration = Duration::from_secs(15);
    assert!(renew_deadline(duration) < duration);
    assert!(
        retry_period(duration) * 3 < renew_deadline(duration),
        "several renew attempts fit in the deadline"
    );
}

#[test]
fn a_leader_round_ends_at_its_renew_deadline() {
    let duration = Duration::from_secs(15);
    let leading = round_timeout(duration, Some(Duration::from_secs(4)));
    assert_eq!(leading, Duration::from_secs(6));
    let past_deadline = round_timeout(duration, Some(Duration::from_secs(11)));
    assert_eq!(past_deadline, Duration::ZERO);
    let following = round_timeout(duration, None);
    assert_eq!(following, renew_deadline(duration));
}
