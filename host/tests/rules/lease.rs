//! Leader-election rules: who creates, renews, takes over or follows.

use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use pipewarden::controller::leadership::rules::{
    LeaseView, Observed, Step, next_step, renew_deadline, retry_period, round_timeout,
};

fn secs(seconds: u64) -> Duration {
    Duration::from_secs(seconds)
}

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
    assert_eq!(next_step(None, "a", secs(0)), Step::Create);
}

#[test]
fn our_lease_is_renewed_even_if_late() {
    assert_eq!(
        next_step(Some(&held_by("a", 0)), "a", secs(100)),
        Step::Renew
    );
}

#[test]
fn a_live_claim_of_another_holder_is_followed_until_seen_unchanged_for_its_duration() {
    let lease = held_by("b", 0);
    assert_eq!(
        next_step(Some(&lease), "a", secs(14)),
        Step::Follow { holder: "b".into() }
    );
    assert_eq!(next_step(Some(&lease), "a", secs(15)), Step::TakeOver);
}

/// A standby whose clock runs 80 s ahead of the leader's reads every renewTime as 80 s old:
/// judged by the timestamp it would take over at once. Judged by how long it has seen the
/// record unchanged, it follows while the leader renews.
#[test]
fn a_standby_whose_clock_runs_ahead_does_not_take_over_a_renewed_lease() {
    let start = Instant::now();
    let mut observed = Observed::new();
    for round in 0..10u64 {
        // The leader renews every 2 s; its renewTime, by its own clock, 80 s behind ours.
        let lease = held_by("b", round as i64 * 2 - 80);
        let unchanged = observed.see(Some(lease.clone()), start + secs(round * 2));
        assert_eq!(unchanged, Duration::ZERO, "a renewal is a change");
        assert_eq!(
            next_step(Some(&lease), "a", unchanged),
            Step::Follow { holder: "b".into() }
        );
    }
    // The leader stops renewing: taken over once unchanged for the duration, not before.
    let last = held_by("b", 18 - 80);
    let unchanged = observed.see(Some(last.clone()), start + secs(18 + 14));
    assert_eq!(
        next_step(Some(&last), "a", unchanged),
        Step::Follow { holder: "b".into() }
    );
    let unchanged = observed.see(Some(last.clone()), start + secs(18 + 15));
    assert_eq!(next_step(Some(&last), "a", unchanged), Step::TakeOver);
}

#[test]
fn a_released_lease_is_taken_over_at_once() {
    let released = LeaseView {
        holder: None,
        ..held_by("b", 0)
    };
    assert_eq!(next_step(Some(&released), "a", secs(0)), Step::TakeOver);
    let never_renewed = LeaseView {
        renewed_at: None,
        ..held_by("b", 0)
    };
    assert_eq!(
        next_step(Some(&never_renewed), "a", secs(1)),
        Step::Follow { holder: "b".into() },
        "a holder is waited for whatever its record says"
    );
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
