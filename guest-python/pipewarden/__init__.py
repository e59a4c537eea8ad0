"""pipewarden's Python SDK: helpers for policies of the WIT world `pipewarden:policy@0.1.1`,
built into components with componentize-py. Pure Python: runs natively in tests too."""

from .canonical import canonical_json, digest, render_settings_digest, settings_digest
from .eligibility import argo_exit_eligibility
from .rv import compare as compare_resource_versions
from .swf import (
    RENDER_HASH_ANNOTATION,
    SETTINGS_HASH_ANNOTATION,
    VERSION_ANNOTATION,
    Swf,
    SwfError,
    render_digest,
)
from .workflow import exit_handler_of, is_completed_phase

__all__ = [
    "canonical_json", "digest", "render_settings_digest", "settings_digest",
    "argo_exit_eligibility", "compare_resource_versions",
    "RENDER_HASH_ANNOTATION", "SETTINGS_HASH_ANNOTATION", "VERSION_ANNOTATION",
    "Swf", "SwfError", "render_digest", "exit_handler_of", "is_completed_phase",
]
