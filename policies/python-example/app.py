"""The component's exports: each forwards to example_policy and converts to the WIT types."""

import wit_world
from componentize_py_types import Err
from wit_world.imports import host, types

import example_policy


class WitWorld(wit_world.WitWorld):
    def validate_settings(self, settings: str) -> None:
        try:
            example_policy.validate_settings(settings)
        except ValueError as error:
            raise Err(str(error))

    def should_rebuild(self, input: types.RebuildInput) -> types.RebuildDecision:
        decision, reason = example_policy.should_rebuild(
            _REBUILD_POLICIES[input.policy], input.swf, input.target_version,
            input.stamps.version, input.stamps.render_hash, input.settings)
        if decision == "rebuild":
            return types.RebuildDecision_Rebuild(reason)
        return types.RebuildDecision_Skip(reason)

    def render_swf(self, swf: str, context: types.RenderContext) -> str:
        try:
            return example_policy.render_swf(swf, context.target_version, context.settings)
        except ValueError as error:
            raise Err(str(error))

    def exit_eligibility(self, event: types.WorkflowEvent, tombstone) -> types.Eligibility:
        decision, reason = example_policy.exit_eligibility(
            event, tombstone, event.kind == types.EventKind.DELETED, host.settings)
        return _ELIGIBILITIES[decision](reason)


_REBUILD_POLICIES = {
    types.RebuildPolicy.ALWAYS: "always",
    types.RebuildPolicy.ON_VERSION_CHANGE: "on-version-change",
    types.RebuildPolicy.DISABLE: "disable",
}

_ELIGIBILITIES = {
    "process": lambda _reason: types.Eligibility_Process(),
    "skip": types.Eligibility_Skip,
    "reject-stale": types.Eligibility_RejectStale,
    "requeue": types.Eligibility_Requeue,
}
