//! A distribution's policy: the default KFP policy, plus flags on the `kfp-launcher` init
//! container that SWFs created by older releases lack.
//!
//! The case it models: a distribution's launcher image needed an extra argument after an
//! upgrade (here `--ca_cert_path`, the cluster CA bundle), and recurring runs compiled before
//! the upgrade kept failing until their SWFs were rebuilt, even though the KFP version had not
//! changed. Everything else (settings, render, rebuild rules, exit eligibility) is `kfp-core`.

use pipewarden_guest::swf::EmbeddedWorkflow;
use pipewarden_guest::{
    Eligibility, Policy, RebuildDecision, RebuildInput, RenderContext, Tombstone, WorkflowEvent,
};
use serde::Deserialize;
use serde_json::{Value, json};

use kfp_core::args::apply_flags;
use kfp_core::{FlagSpec, FlagStyle, LAUNCHER_CONTAINER, Settings};

/// The default policy's settings plus `launcherFlags`.
#[derive(Clone, Debug, PartialEq)]
pub struct DownstreamSettings {
    pub base: Settings,
    pub launcher_flags: Vec<FlagSpec>,
}

/// One entry of `launcherFlags`: `value` sets the flag, `default` only fills it in when
/// missing; `style` as for driver flags.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LauncherFlag {
    name: String,
    value: Option<String>,
    default: Option<String>,
    #[serde(default)]
    style: FlagStyle,
}

impl DownstreamSettings {
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut value: Value =
            serde_json::from_str(text).map_err(|e| format!("invalid settings: {e}"))?;
        let flags = value
            .as_object_mut()
            .and_then(|settings| settings.remove("launcherFlags"))
            .unwrap_or_else(|| json!([]));
        let flags: Vec<LauncherFlag> = serde_json::from_value(flags)
            .map_err(|e| format!("invalid settings: launcherFlags: {e}"))?;
        let launcher_flags = flags
            .into_iter()
            .enumerate()
            .map(|(index, flag)| {
                let spec = FlagSpec {
                    value: flag.value,
                    default: flag.default,
                    style: flag.style,
                    ..FlagSpec::set(&flag.name, "")
                };
                spec.validate().map(|()| spec).map_err(|e| {
                    format!(
                        "invalid settings: launcherFlags[{index}] ({}): {e}",
                        flag.name
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        let mut base = Settings::from_value(value)?;
        // The launcher flags are settings too: a change to them must be seen as one.
        base.source_digest = kfp_core::render_settings_digest(text);
        Ok(Self {
            base,
            launcher_flags,
        })
    }
}

/// Applies `flags` to the args of every `kfp-launcher` init container.
pub fn add_launcher_flags(
    workflow: &mut EmbeddedWorkflow,
    flags: &[FlagSpec],
) -> Result<(), String> {
    let specs: Vec<&FlagSpec> = flags.iter().collect();
    let templates = workflow
        .templates_mut()
        .ok_or("spec.workflow.spec holds no Argo Workflow")?;
    let launchers = templates
        .iter_mut()
        .filter_map(|template| template.get_mut("initContainers")?.as_array_mut())
        .flatten()
        .filter(|container| container["name"] == LAUNCHER_CONTAINER);
    for launcher in launchers {
        let args: Vec<String> = match launcher.get("args") {
            None => Vec::new(),
            Some(args) => serde_json::from_value(args.clone())
                .map_err(|_| format!("{LAUNCHER_CONTAINER} args must be a list of strings"))?,
        };
        launcher["args"] = json!(apply_flags(&args, &specs)?);
    }
    Ok(())
}

/// The default render, then the launcher flags, then the stamps.
pub fn render_swf(
    swf: &str,
    target_version: Option<&str>,
    settings: &DownstreamSettings,
) -> Result<String, String> {
    kfp_core::render_swf_with(swf, target_version, &settings.base, |workflow| {
        add_launcher_flags(workflow, &settings.launcher_flags)
    })
}

pub struct KfpDownstream;

impl Policy for KfpDownstream {
    fn validate_settings(settings: String) -> Result<(), String> {
        DownstreamSettings::parse(&settings)?.base.validate()
    }

    fn should_rebuild(input: RebuildInput) -> RebuildDecision {
        kfp_core::should_rebuild(&input)
    }

    fn render_swf(swf: String, context: RenderContext) -> Result<String, String> {
        let settings = DownstreamSettings::parse(&context.settings)?;
        render_swf(&swf, context.target_version.as_deref(), &settings)
    }

    fn exit_eligibility(event: WorkflowEvent, tombstone: Option<Tombstone>) -> Eligibility {
        kfp_core::exit_eligibility_with_host_settings(&event, tombstone.as_ref())
    }
}

pipewarden_guest::export_policy!(KfpDownstream);
