//! Who is delivering a completion: the claim written beside a `pending/<key>` mark. It names its
//! holder (the pod, and the start of the process holding it: its epoch) and until when it
//! holds; a replica that finds a fresh claim by another holder does not deliver, and takes a
//! claim over only once it expired. With a mark key (a Secret shared by the replicas), the
//! claim carries an HMAC over the completion key and its fields: a claim the controller did not
//! write is not a claim. A settled mark (`sent`, `failed`, `skipped`) keeps a record of the same
//! form beside it, naming its state and signed with it: a settled mark without one is not the
//! controller's either. No I/O.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use ring::hmac;
use serde::{Deserialize, Serialize};

/// The annotation holding the claim, beside `pipewarden.io/exit-notification`.
pub const CLAIM_ANNOTATION: &str = "pipewarden.io/exit-claim";

/// This replica, as its claims name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claimant {
    pub holder: String,
    /// The process's start, in milliseconds since the epoch: a restarted pod of the same name
    /// is another holder.
    pub epoch: u64,
}

impl Claimant {
    pub fn new(holder: &str) -> Claimant {
        let epoch = Timestamp::now().as_millisecond().max(0) as u64;
        Claimant {
            holder: holder.to_owned(),
            epoch,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    pub holder: String,
    pub epoch: u64,
    /// When the claim was written or last renewed.
    pub at: Timestamp,
    /// Until when it holds: after this another replica may take it over.
    pub until: Timestamp,
    /// What the notification body carries that can change after the completion, as it was
    /// when the completion was first claimed: every attempt and replica sends the same body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<FrozenBody>,
    /// The settled state this record vouches for (`sent`, `failed`, `skipped`); none on a claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<String>,
}

/// The parts of a notification body that a later write to the workflow would change: its
/// resourceVersion, and `status.message` (already cut to 4 KiB).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrozenBody {
    #[serde(rename = "rv")]
    pub resource_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Claim {
    /// A claim by `claimant` at `now`, holding for `ttl`, signed for `completion` with `key`.
    pub fn new(
        claimant: &Claimant,
        now: Timestamp,
        ttl: std::time::Duration,
        completion: &str,
        key: &MarkKey,
    ) -> Claim {
        Claim::with_body(claimant, now, ttl, completion, None, key)
    }

    /// [`Claim::new`], carrying the body's frozen parts.
    pub fn with_body(
        claimant: &Claimant,
        now: Timestamp,
        ttl: std::time::Duration,
        completion: &str,
        body: Option<FrozenBody>,
        key: &MarkKey,
    ) -> Claim {
        let ttl = SignedDuration::try_from(ttl).unwrap_or(SignedDuration::MAX);
        let mut claim = Claim {
            holder: claimant.holder.clone(),
            epoch: claimant.epoch,
            at: now,
            until: now.checked_add(ttl).unwrap_or(Timestamp::MAX),
            body,
            state: None,
            sig: None,
        };
        claim.sig = key.sign(&claim, completion);
        claim
    }

    /// The record beside a settled mark of `completion` in `state`, written by `claimant` at
    /// `now`: it holds for no time, and only its signature matters. None without a key (then
    /// marks are unsigned and any counts).
    pub fn seal(
        claimant: &Claimant,
        now: Timestamp,
        completion: &str,
        state: &str,
        key: &MarkKey,
    ) -> Option<Claim> {
        if !key.is_set() {
            return None;
        }
        let mut record = Claim {
            holder: claimant.holder.clone(),
            epoch: claimant.epoch,
            at: now,
            until: now,
            body: None,
            state: Some(state.to_owned()),
            sig: None,
        };
        record.sig = key.sign(&record, completion);
        Some(record)
    }

    /// A claim on a pending mark, not the record of a settled one.
    pub fn is_claim(&self) -> bool {
        self.state.is_none()
    }

    /// None for text that is not a claim, or longer than any the controller writes.
    pub fn parse(text: &str) -> Option<Claim> {
        if text.len() > super::bounded::CLAIM_TEXT_MAX {
            return None;
        }
        serde_json::from_str(text).ok()
    }

    /// The claim on a Workflow object, if it carries a readable one.
    pub fn read(workflow: &serde_json::Value) -> Option<Claim> {
        workflow
            .pointer("/metadata/annotations")?
            .get(CLAIM_ANNOTATION)?
            .as_str()
            .and_then(Claim::parse)
    }

    pub fn annotation_value(&self) -> String {
        serde_json::to_string(self).expect("a claim serializes")
    }

    pub fn is_by(&self, claimant: &Claimant) -> bool {
        self.holder == claimant.holder && self.epoch == claimant.epoch
    }

    /// Whether it holds at `now` by the clock that wrote it: for a one-shot report (`pipewarden
    /// plan`), which has seen the claim once. The controller judges by [`Claim::holds_seen`].
    pub fn holds_at(&self, now: Timestamp) -> bool {
        now < self.until
    }

    /// How long the claim holds after it was written, by its writer's clock: `until - at`
    /// (both written by the same host, so their difference means what it says).
    pub fn ttl(&self) -> std::time::Duration {
        std::time::Duration::try_from(self.until.duration_since(self.at)).unwrap_or_default()
    }

    /// Whether it still holds, judged as client-go judges a Lease: this replica has seen it
    /// unchanged for less than its time to live, by its own clock. A claim that says it holds
    /// longer than `max_ttl` (the configured TTL and a bounded skew) is not a claim: unsigned,
    /// anyone can write one holding for a year.
    pub fn holds_seen(
        &self,
        unchanged_for: std::time::Duration,
        max_ttl: std::time::Duration,
    ) -> bool {
        let ttl = self.ttl();
        ttl <= max_ttl && unchanged_for < ttl
    }

    /// What the signature covers: the completion and every field but the signature.
    fn signed_text(&self, completion: &str) -> String {
        let mut text = format!(
            "{completion}\n{}\n{}\n{}\n{}",
            self.holder, self.epoch, self.at, self.until
        );
        if let Some(body) = &self.body {
            let message = serde_json::to_string(&body.message).unwrap_or_default();
            text.push_str(&format!("\nbody\n{}\n{message}", body.resource_version));
        }
        if let Some(state) = &self.state {
            text.push_str(&format!("\nstate\n{state}"));
        }
        text
    }
}

/// The keys claims are signed with, shared by the replicas: the first signs, any verifies, so
/// a key is rotated by adding the new one first, then dropping the old one once every claim
/// signed with it has settled. Without one claims are unsigned and any claim on the object
/// counts (forged ones then only delay, never cause, a delivery: whatever a claim is found on
/// is assessed as the watch path assesses it).
#[derive(Clone, Default)]
pub struct MarkKey(Vec<hmac::Key>);

impl MarkKey {
    pub fn new(secret: &[u8]) -> MarkKey {
        MarkKey::list(&[secret])
    }

    /// Keys in order: the first signs, every one verifies.
    pub fn list(secrets: &[&[u8]]) -> MarkKey {
        MarkKey(
            secrets
                .iter()
                .map(|secret| hmac::Key::new(hmac::HMAC_SHA256, secret))
                .collect(),
        )
    }

    pub fn none() -> MarkKey {
        MarkKey(Vec::new())
    }

    pub fn is_set(&self) -> bool {
        !self.0.is_empty()
    }

    /// How many keys verify.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn sign(&self, claim: &Claim, completion: &str) -> Option<String> {
        let key = self.0.first()?;
        let tag = hmac::sign(key, claim.signed_text(completion).as_bytes());
        Some(hex::encode(tag.as_ref()))
    }

    /// Whether `claim` was written by a controller holding one of these keys, for
    /// `completion`. Without a key every claim counts.
    pub fn verifies(&self, claim: &Claim, completion: &str) -> bool {
        if self.0.is_empty() {
            return true;
        }
        let Some(sig) = claim.sig.as_deref().and_then(|s| hex::decode(s).ok()) else {
            return false;
        };
        let text = claim.signed_text(completion);
        self.0
            .iter()
            .any(|key| hmac::verify(key, text.as_bytes(), &sig).is_ok())
    }
}

impl std::fmt::Debug for MarkKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_set() {
            "MarkKey(set)"
        } else {
            "MarkKey(none)"
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const KEY: &str = "uid/2026-08-04T01:00:00Z/2026-08-04T01:09:41Z/Succeeded";

    #[test]
    fn a_claim_holds_until_it_expires_and_names_its_holder_and_epoch() {
        let me = Claimant {
            holder: "pipewarden-7d9f".into(),
            epoch: 1,
        };
        let now: Timestamp = "2026-08-04T01:10:00Z".parse().unwrap();
        let claim = Claim::new(&me, now, Duration::from_secs(70), KEY, &MarkKey::none());
        assert!(claim.holds_at(now) && !claim.holds_at(claim.until));
        assert!(claim.is_by(&me));
        let restarted = Claimant { epoch: 2, ..me };
        assert!(!claim.is_by(&restarted), "a new process is another holder");
        assert_eq!(Claim::parse(&claim.annotation_value()), Some(claim));
    }

    #[test]
    fn with_a_key_only_claims_signed_for_this_completion_count() {
        let key = MarkKey::new(b"a shared secret of the replicas");
        let me = Claimant::new("pipewarden-0");
        let now = Timestamp::now();
        let claim = Claim::new(&me, now, Duration::from_secs(70), KEY, &key);
        assert!(key.verifies(&claim, KEY));
        assert!(!key.verifies(&claim, "uid/other/completion/Failed"));
        let mut forged = claim.clone();
        forged.until = now + SignedDuration::from_hours(24);
        assert!(
            !key.verifies(&forged, KEY),
            "a changed field breaks the signature"
        );
        let unsigned = Claim { sig: None, ..claim };
        assert!(!key.verifies(&unsigned, KEY));
        assert!(!MarkKey::new(b"another key").verifies(&forged, KEY));
        assert!(
            MarkKey::none().verifies(&unsigned, KEY),
            "no key: any claim counts"
        );
    }

    /// Rotation: the new key first, the old one after it. Claims the old key signed still
    /// verify; new claims are signed with the new key, which a replica still on the old key
    /// alone would not accept (so every replica gets the list before any signs with it).
    #[test]
    fn a_key_list_signs_with_the_first_and_verifies_with_any() {
        let (old, new) = (
            &b"the key signing until today"[..],
            &b"the key signing from today"[..],
        );
        let me = Claimant::new("pipewarden-0");
        let before = Claim::new(
            &me,
            Timestamp::now(),
            Duration::from_secs(70),
            KEY,
            &MarkKey::new(old),
        );
        let rotating = MarkKey::list(&[new, old]);
        assert!(rotating.verifies(&before, KEY), "an old claim still counts");
        let after = Claim::new(
            &me,
            Timestamp::now(),
            Duration::from_secs(70),
            KEY,
            &rotating,
        );
        assert!(MarkKey::new(new).verifies(&after, KEY));
        assert!(!MarkKey::new(old).verifies(&after, KEY));
        assert!(
            !MarkKey::new(new).verifies(&before, KEY),
            "the old key dropped"
        );
    }

    /// A settled mark's record vouches for its state and completion only, and is no claim.
    #[test]
    fn a_seal_signs_the_state_it_settles_and_holds_nothing() {
        let key = MarkKey::new(b"a shared secret of the replicas");
        let me = Claimant::new("pipewarden-0");
        let now = Timestamp::now();
        let sent = Claim::seal(&me, now, KEY, "sent", &key).expect("a key signs");
        assert!(key.verifies(&sent, KEY) && !sent.is_claim());
        assert_eq!(Claim::parse(&sent.annotation_value()), Some(sent.clone()));
        let failed = Claim {
            state: Some("failed".into()),
            ..sent.clone()
        };
        assert!(!key.verifies(&failed, KEY), "the state is signed");
        assert!(!key.verifies(&sent, "uid/other/completion/Failed"));
        assert!(!sent.holds_seen(Duration::ZERO, Duration::from_secs(130)));
        assert_eq!(Claim::seal(&me, now, KEY, "sent", &MarkKey::none()), None);
        let claim = Claim::new(&me, now, Duration::from_secs(70), KEY, &key);
        assert!(claim.is_claim());
    }
}
