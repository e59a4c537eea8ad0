"""Argo Workflows: completion and exit handlers."""

import json

COMPLETED_PHASES = ("Succeeded", "Failed", "Error")


def is_completed_phase(phase: str) -> bool:
    """Argo's completion: phase Succeeded, Failed or Error (the completed label alone is not)."""
    return phase in COMPLETED_PHASES


def exit_handler_of(workflow_json: str):
    """Where the workflow's exit handler is: `spec.onExit` or `spec.hooks.exit`, on the
    workflow or in `status.storedWorkflowTemplateSpec`; None when it has none. Raises
    ValueError for text that is not a workflow."""
    if '"onExit"' not in workflow_json and '"hooks"' not in workflow_json:
        return None
    workflow = json.loads(workflow_json)
    if not isinstance(workflow, dict):
        raise ValueError("not a readable workflow")
    stored = (workflow.get("status") or {}).get("storedWorkflowTemplateSpec")
    for spec, where in ((workflow.get("spec"), "spec"), (stored, "storedWorkflowTemplateSpec")):
        if not isinstance(spec, dict):
            continue
        if isinstance(spec.get("onExit"), str) and spec["onExit"]:
            return f"{where}.onExit"
        hook = (spec.get("hooks") or {}).get("exit")
        if isinstance(hook, dict) and (hook.get("template") or hook.get("templateRef")):
            return f"{where}.hooks.exit"
    return None
