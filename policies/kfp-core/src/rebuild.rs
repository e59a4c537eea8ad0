//! should-rebuild: the operator's rebuild policy applied to an SWF's stamps.

use pipewarden_guest::swf::is_reference_only_json;
use pipewarden_guest::{
    RebuildDecision, RebuildInput, RebuildPolicy, SETTINGS_HASH_ANNOTATION, Swf,
};

use crate::Settings;
use crate::settings::render_settings_digest;
use crate::target::Target;

/// Whether the SWF in `input` should be re-rendered now. Reasons are short sentences for the
/// operator.
///
/// - A target this policy cannot compile for exactly (unknown, or not a supported release) is
///   skipped for every SWF, marked unsupported: nothing is rendered for it.
/// - Reference-only SWFs are always skipped, marked not rebuildable: they embed no workflow (KFP
///   compiles them at run time), so there is no pipeline to recover.
/// - `always` rebuilds (the host writes only if the render differs).
/// - `on-version-change` rebuilds when the version stamp is missing or differs from the target,
///   when there is no render-hash stamp, or when the live spec no longer matches it (an
///   out-of-band edit), or when the settings differ from those the last render stamped.
/// - `disable` skips, saying what `on-version-change` would have done.
pub fn should_rebuild(input: &RebuildInput) -> RebuildDecision {
    let target = match Target::of(input.target_version.as_deref()) {
        Ok(target) => target,
        Err(why) => return RebuildDecision::Skip(pipewarden_guest::unsupported_target(&why)),
    };
    if pipewarden_guest::is_target_probe(&input.swf) {
        return RebuildDecision::Skip(probe_answer(input, &target));
    }
    let decision = decide_for(input, &target);
    if target.version == target.release.as_str() {
        return decision;
    }
    // Say which compiler a patch release without one of its own runs.
    let note = |why: String| {
        format!(
            "{why} (KFP {} runs KFP {}'s compiler.)",
            target.version, target.release
        )
    };
    match decision {
        RebuildDecision::Rebuild(why) => RebuildDecision::Rebuild(note(why)),
        RebuildDecision::Skip(why) => RebuildDecision::Skip(note(why)),
    }
}

/// The answer to the host's target probe: whether renders for the target compile with these
/// settings, and how they are proven.
fn probe_answer(input: &RebuildInput, target: &Target) -> String {
    let compiles = Settings::parse(&input.settings)
        .and_then(|settings| {
            settings
                .compile_options(target)
                .map_err(|problem| problem.to_string())
        })
        .map(|_| ());
    match compiles {
        Ok(()) => pipewarden_guest::target_served(target.proof().label(), &target.proof_note()),
        Err(why) => pipewarden_guest::unsupported_target(&format!(
            "cannot compile for KFP {} with these settings: {why}",
            target.version
        )),
    }
}

fn decide_for(input: &RebuildInput, target: &Target) -> RebuildDecision {
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
        return RebuildDecision::Skip(pipewarden_guest::not_rebuildable(
            "Reference-only SWF (no workflow.spec): KFP compiles it at run time.",
        ));
    }
    match input.policy {
        RebuildPolicy::Always => RebuildDecision::Rebuild("Rebuild policy is always.".to_owned()),
        RebuildPolicy::OnVersionChange => version_check(input, target.version),
        RebuildPolicy::Disable => {
            RebuildDecision::Skip(match version_check(input, target.version) {
                RebuildDecision::Rebuild(why) => {
                    format!("Rebuild policy is disable; would rebuild: {why}")
                }
                RebuildDecision::Skip(why) => format!("Rebuild policy is disable; {why}"),
            })
        }
    }
}

fn version_check(input: &RebuildInput, target: &str) -> RebuildDecision {
    let stamps = &input.stamps;
    // Parsing and digesting are the costly part: done once, and only when the answer needs it.
    let live = std::cell::OnceCell::new();
    let live = || live.get_or_init(|| Swf::from_json(&input.swf).ok());
    let drifted = || {
        let stamped = stamps.render_hash.as_deref()?;
        Some(
            live()
                .as_ref()
                .is_none_or(|swf| swf.render_digest() != stamped),
        )
    };
    let settings_changed = || {
        let stamped = live().as_ref()?.annotation(SETTINGS_HASH_ANNOTATION)?;
        Some(stamped != render_settings_digest(&input.settings))
    };
    match stamps.version.as_deref() {
        None => RebuildDecision::Rebuild(format!("No version stamp; target is {target}.")),
        Some(stamped) if stamped != target => {
            RebuildDecision::Rebuild(format!("Stamped for {stamped}; target is {target}."))
        }
        Some(_) => match (drifted(), settings_changed()) {
            (None, _) => RebuildDecision::Rebuild(
                "No render-hash stamp to check the live spec against.".to_owned(),
            ),
            (Some(true), _) => RebuildDecision::Rebuild(DRIFTED.to_owned()),
            (Some(false), None) => RebuildDecision::Rebuild(
                "No settings stamp to check the settings against.".to_owned(),
            ),
            (Some(false), Some(true)) => RebuildDecision::Rebuild(SETTINGS_CHANGED.to_owned()),
            (Some(false), Some(false)) => RebuildDecision::Skip(format!(
                "Up to date: rendered for {target} with these settings, unchanged since."
            )),
        },
    }
}

const DRIFTED: &str = "The live spec differs from its last render (edited out of band).";
const SETTINGS_CHANGED: &str = "The settings changed since the last render.";

#[cfg(test)]
mod tests;
