"""The example policy's decisions as plain functions (tested natively, exported by app.py).

- settings: `driver.image`, `driver.flags`, `launcher.image` as the default policy's settings
  (other keys are accepted and ignored), and `notify` (`exit-handler` or `all`).
- render: driver and launcher images and the driver flags from the settings, then the stamps.
- should-rebuild: the default rebuild policy against stamps, drift and the settings digest.
- exit-eligibility: Argo's stale-copy rules, then `notify`.
"""

import json

from pipewarden import (
    RENDER_HASH_ANNOTATION,
    SETTINGS_HASH_ANNOTATION,
    VERSION_ANNOTATION,
    Swf,
    SwfError,
    argo_exit_eligibility,
    exit_handler_of,
    is_completed_phase,
    render_settings_digest,
)

NOTIFY_MODES = ("exit-handler", "all")


def parse_settings(text: str) -> dict:
    """The settings, or ValueError saying what is wrong."""
    try:
        settings = json.loads(text)
    except ValueError as error:
        raise ValueError(f"settings are not JSON: {error}") from None
    if not isinstance(settings, dict):
        raise ValueError("settings are not a JSON object")
    notify = settings.get("notify", "exit-handler")
    if notify not in NOTIFY_MODES:
        raise ValueError(f"notify is {notify!r}; expected one of {', '.join(NOTIFY_MODES)}")
    for part in ("driver", "launcher"):
        if part not in settings:
            continue  # exit eligibility alone needs neither
        image = settings[part].get("image") if isinstance(settings[part], dict) else None
        if not isinstance(image, str) or not image:
            raise ValueError(f"{part}.image must be a non-empty string")
    for index, flag in enumerate((settings.get("driver") or {}).get("flags") or []):
        if not isinstance(flag, dict) or not isinstance(flag.get("name"), str):
            raise ValueError(f"driver.flags[{index}] needs a name")
        if flag.get("style", "separate") not in ("separate", "equals"):
            raise ValueError(f"driver.flags[{index}].style is separate or equals")
    return settings


def validate_settings(text: str) -> None:
    parse_settings(text)


# --- render ---------------------------------------------------------------------------------

def _flag_pairs(args):
    """`--name value` and `--name=value` as an ordered dict name -> value."""
    pairs, index = {}, 0
    while index < len(args):
        arg = args[index]
        if arg.startswith("--") and len(arg) > 2:
            name, eq, value = arg[2:].partition("=")
            if eq:
                pairs[name] = value
            elif index + 1 < len(args) and not args[index + 1].startswith("--"):
                pairs[name] = args[index + 1]
                index += 1
            else:
                pairs[name] = None
        index += 1
    return pairs


def driver_args(args, flags):
    """The driver's command line as the settings' flags write it, values kept from `args` where
    the settings give none."""
    current = _flag_pairs(args)
    kind = "container" if current.get("type") == "CONTAINER" else "dag"
    out = []
    for flag in flags:
        if "drivers" in flag and kind not in flag["drivers"]:
            continue
        name = flag["name"]
        value = flag["value"] if "value" in flag else current.get(name, flag.get("default"))
        if value is None:
            continue
        if flag.get("style") == "equals":
            out.append(f"--{name}={value}")
        else:
            out += [f"--{name}", value]
    return out


def migrate_workflow(workflow: dict, settings: dict) -> None:
    driver = settings.get("driver") or {}
    launcher = settings.get("launcher") or {}
    for template in (workflow.get("spec") or {}).get("templates") or []:
        container = template.get("container") or {}
        if "kfp-driver" in (container.get("image") or "") and driver.get("image"):
            container["image"] = driver["image"]
            if "flags" in driver:
                container["args"] = driver_args(container.get("args") or [], driver["flags"])
        for init in template.get("initContainers") or []:
            if "kfp-launcher" in (init.get("image") or "") and launcher.get("image"):
                init["image"] = launcher["image"]


def render_swf(text: str, target, settings_text: str) -> str:
    """The rendered SWF as JSON text; SwfError when it cannot be rendered."""
    swf = Swf.from_json(text)
    workflow = swf.embedded_workflow()
    if workflow is None:
        return text  # reference-only: KFP compiles it at run time
    migrate_workflow(workflow, parse_settings(settings_text))
    swf.set_embedded_workflow(workflow)
    if target:
        swf.set_annotation(VERSION_ANNOTATION, target)
    swf.set_annotation(SETTINGS_HASH_ANNOTATION, render_settings_digest(settings_text))
    swf.set_annotation(RENDER_HASH_ANNOTATION, swf.render_digest())
    return swf.to_json()


# --- should-rebuild -------------------------------------------------------------------------

DRIFTED = "The live spec differs from its last render (edited out of band)."
SETTINGS_CHANGED = "The settings changed since the last render."


def should_rebuild(policy: str, swf_text: str, target, version_stamp, hash_stamp, settings_text):
    """("rebuild" | "skip", reason); `policy` is always, on-version-change or disable."""
    try:
        swf = Swf.from_json(swf_text)
    except SwfError as error:
        if policy == "disable":
            return ("skip", f"Rebuild policy is disable; {error}.")
        return ("rebuild", f"{error}; rendering will say more.")
    if swf.is_reference_only():
        return ("skip", "Reference-only SWF (no workflow.spec): KFP compiles it at run time.")
    if policy == "always":
        return ("rebuild", "Rebuild policy is always.")
    decision, why = _version_check(swf, target, version_stamp, hash_stamp, settings_text)
    if policy == "disable":
        prefix = "would rebuild: " if decision == "rebuild" else ""
        return ("skip", f"Rebuild policy is disable; {prefix}{why}")
    return (decision, why)


def _version_check(swf, target, version_stamp, hash_stamp, settings_text):
    drifted = None if hash_stamp is None else swf.render_digest() != hash_stamp
    stamped_settings = swf.annotation(SETTINGS_HASH_ANNOTATION)
    settings_changed = (None if stamped_settings is None
                        else stamped_settings != render_settings_digest(settings_text))
    if not target:
        if drifted:
            return ("rebuild", DRIFTED)
        if settings_changed:
            return ("rebuild", SETTINGS_CHANGED)
        return ("skip", "Target version unknown; nothing to compare the stamp with.")
    if version_stamp is None:
        return ("rebuild", f"No version stamp; target is {target}.")
    if version_stamp != target:
        return ("rebuild", f"Stamped for {version_stamp}; target is {target}.")
    if drifted is None:
        return ("rebuild", "No render-hash stamp to check the live spec against.")
    if drifted:
        return ("rebuild", DRIFTED)
    if settings_changed is None:
        return ("rebuild", "No settings stamp to check the settings against.")
    if settings_changed:
        return ("rebuild", SETTINGS_CHANGED)
    return ("skip", f"Up to date: rendered for {target} with these settings, unchanged since.")


# --- exit-eligibility -----------------------------------------------------------------------

def exit_eligibility(event, tombstone, deleted: bool, read_settings):
    """Argo's rules, then for a completion they let through, `notify` (read only then)."""
    decision, reason = argo_exit_eligibility(event, tombstone, deleted)
    if decision != "process" or not is_completed_phase(event.phase):
        return (decision, reason)
    try:
        if exit_handler_of(event.workflow) is not None:
            return ("process", "")
    except ValueError:
        return ("process", "")  # better one notification too many than a lost one
    notify = json.loads(read_settings() or "{}").get("notify", "exit-handler")
    if notify == "all":
        return ("process", "")
    return ("skip", "No exit handler (spec.onExit or spec.hooks.exit, nor in a stored workflow "
                    f"template) and notify is exit-handler; {event.phase} is not notified.")
