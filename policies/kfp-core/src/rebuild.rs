//! should-rebuild: the operator's rebuild policy applied to an SWF's stamps.

use pipewarden_guest::swf::is_reference_only_json;
use pipewarden_guest::{RebuildDecision, RebuildInput, RebuildPolicy, Swf};

/// Whether the SWF in `input` should be re-rendered now. Reasons are short sentences for the
/// operator.
///
/// - Reference-only SWFs are always skipped: KFP compiles them at run time.
/// - `always` rebuilds (the host writes only if the render differs).
/// - `on-version-change` rebuilds when the version stamp is missing or differs from the target,
///   when there is no render-hash stamp, or when the live spec no longer matches it (an
///   out-of-band edit); with the target unknown, only drift triggers a rebuild.
/// - `disable` skips, saying what `on-version-change` would have done.
pub fn should_rebuild(input: &RebuildInput) -> RebuildDecision {
    // Most answers need only this cheap scan; the SWF is parsed when drift must be checked.
    let reference_only = match is_reference_only_json(&input.swf) {
        Ok(reference_only) => reference_only,
        // The scan is strict about shapes; the full parse decides what is wrong.
        Err(_) => match Swf::from_json(&input.swf) {
            Ok(swf) => swf.is_reference_only(),
            Err(error) if input.policy == RebuildPolicy::Disable => {
                return RebuildDecision::Skip(format!("Rebuild policy is disable; {error}."));
            }
            // Rendering fails on the same input and reports it where the operator looks.
            Err(error) => {
                return RebuildDecision::Rebuild(format!("{error}; rendering will say more."));
            }
        },
    };
    if reference_only {
        return RebuildDecision::Skip(
            "Reference-only SWF (no workflow.spec): KFP compiles it at run time.".to_owned(),
        );
    }
    match input.policy {
        RebuildPolicy::Always => RebuildDecision::Rebuild("Rebuild policy is always.".to_owned()),
        RebuildPolicy::OnVersionChange => version_check(input),
        RebuildPolicy::Disable => RebuildDecision::Skip(match version_check(input) {
            RebuildDecision::Rebuild(why) => {
                format!("Rebuild policy is disable; would rebuild: {why}")
            }
            RebuildDecision::Skip(why) => format!("Rebuild policy is disable; {why}"),
        }),
    }
}

fn version_check(input: &RebuildInput) -> RebuildDecision {
    let stamps = &input.stamps;
    // The digest is the costly part: computed only when the answer depends on it.
    let drifted = || {
        stamps
            .render_hash
            .as_deref()
            .map(|stamped| stamped != live_digest(&input.swf))
    };
    let Some(target) = input.target_version.as_deref().filter(|t| !t.is_empty()) else {
        return if drifted() == Some(true) {
            RebuildDecision::Rebuild(DRIFTED.to_owned())
        } else {
            RebuildDecision::Skip(
                "Target version unknown; nothing to compare the stamp with.".to_owned(),
            )
        };
    };
    match stamps.version.as_deref() {
        None => RebuildDecision::Rebuild(format!("No version stamp; target is {target}.")),
        Some(stamped) if stamped != target => {
            RebuildDecision::Rebuild(format!("Stamped for {stamped}; target is {target}."))
        }
        Some(_) => match drifted() {
            None => RebuildDecision::Rebuild(
                "No render-hash stamp to check the live spec against.".to_owned(),
            ),
            Some(true) => RebuildDecision::Rebuild(DRIFTED.to_owned()),
            Some(false) => RebuildDecision::Skip(format!(
                "Up to date: rendered for {target}, unchanged since."
            )),
        },
    }
}

/// The render digest of the live SWF; the text already passed a JSON scan.
fn live_digest(swf: &str) -> String {
    Swf::from_json(swf)
        .map(|swf| swf.render_digest())
        .unwrap_or_default()
}

const DRIFTED: &str = "The live spec differs from its last render (edited out of band).";

#[cfg(test)]
mod tests;
