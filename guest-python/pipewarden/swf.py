"""ScheduledWorkflows as JSON, with the accessors policies need. Unknown fields survive edits."""

import json

from .canonical import digest

VERSION_ANNOTATION = "pipelines.kubeflow.org/version"
RENDER_HASH_ANNOTATION = "pipewarden.io/render-hash"
SETTINGS_HASH_ANNOTATION = "pipewarden.io/settings-hash"


class SwfError(ValueError):
    """The SWF, or the workflow embedded in it, could not be read."""


def compact(value) -> str:
    """Compact JSON keeping key order: how renders write objects, so a render of a render is
    the same text."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Swf:
    def __init__(self, obj: dict):
        self.obj = obj

    @classmethod
    def from_json(cls, text: str) -> "Swf":
        try:
            obj = json.loads(text)
        except ValueError as error:
            raise SwfError(f"the SWF is not JSON: {error}") from None
        if not isinstance(obj, dict):
            raise SwfError("the SWF is not a JSON object")
        return cls(obj)

    def to_json(self) -> str:
        return compact(self.obj)

    def annotation(self, key: str):
        annotations = (self.obj.get("metadata") or {}).get("annotations") or {}
        value = annotations.get(key)
        return value if isinstance(value, str) else None

    def set_annotation(self, key: str, value: str) -> None:
        metadata = self.obj.setdefault("metadata", {})
        metadata.setdefault("annotations", {})[key] = value

    def is_reference_only(self) -> bool:
        """No `spec.workflow.spec`: KFP compiles these at run time; nothing to render."""
        workflow = (self.obj.get("spec") or {}).get("workflow") or {}
        return workflow.get("spec") is None

    def embedded_workflow(self):
        """The Argo Workflow in `spec.workflow.spec`, from the string form KFP writes or the
        legacy object form; None for a reference-only SWF."""
        workflow = (self.obj.get("spec") or {}).get("workflow") or {}
        spec = workflow.get("spec")
        if spec is None:
            return None
        if isinstance(spec, str):
            if not spec:
                raise SwfError("spec.workflow.spec is an empty string")
            try:
                spec = json.loads(spec)
            except ValueError as error:
                raise SwfError(f"spec.workflow.spec is not valid JSON: {error}") from None
        if not isinstance(spec, dict) or spec.get("kind") != "Workflow":
            raise SwfError("spec.workflow.spec holds no Argo Workflow")
        return spec

    def set_embedded_workflow(self, workflow: dict) -> None:
        """Writes the workflow back as a compact JSON string, the form KFP stores."""
        spec = self.obj.setdefault("spec", {})
        spec.setdefault("workflow", {})["spec"] = compact(workflow)

    def render_digest(self) -> str:
        return render_digest(self.obj.get("spec"))


def normalized_spec(spec):
    """An SWF `spec` made comparable: the embedded workflow parsed (text that is not JSON stays
    text) and `workflow.parameters` as name -> value (a list if a name is missing or repeats)."""
    if not isinstance(spec, dict) or not isinstance(spec.get("workflow"), dict):
        return spec
    spec = dict(spec)
    workflow = dict(spec["workflow"])
    spec["workflow"] = workflow
    if isinstance(workflow.get("spec"), str):
        try:
            workflow["spec"] = json.loads(workflow["spec"])
        except ValueError:
            pass
    parameters = workflow.get("parameters")
    if isinstance(parameters, list):
        by_name = {}
        for item in parameters:
            name = item.get("name") if isinstance(item, dict) else None
            if not isinstance(name, str) or name in by_name:
                by_name = None
                break
            by_name[name] = item.get("value")
        if by_name is not None:
            workflow["parameters"] = by_name
    return spec


def render_digest(spec) -> str:
    """The digest stamped as `pipewarden.io/render-hash`: RFC 8785 over the normalized spec."""
    return digest(normalized_spec(spec))
