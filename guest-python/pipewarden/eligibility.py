"""Argo 4.1's exit-eligibility rules (argo-workflows #16357), as the Rust SDK's
`eligibility::argo_exit_eligibility`:

| event                                               | answer         |
|-----------------------------------------------------|----------------|
| deleted before completing                           | skip           |
| no tombstone (new uid, evicted, or host restarted)  | process        |
| newer than the tombstone                            | process        |
| older or equal, tombstone completed                 | reject-stale   |
| older, tombstone not completed (running)            | requeue        |
| equal, tombstone not completed                      | process        |
| resourceVersion unordered, tombstone completed      | reject-stale   |
| resourceVersion unordered, tombstone not completed  | process        |

Answers are (decision, reason) pairs; `event` and `tombstone` are the WIT records (or
anything with the same attributes).
"""

from . import rv
from .workflow import is_completed_phase

PROCESS = "process"
SKIP = "skip"
REJECT_STALE = "reject-stale"
REQUEUE = "requeue"


def argo_exit_eligibility(event, tombstone, deleted: bool):
    """`deleted`: the event is a DELETE (its kind in the WIT enum)."""
    answer = _ordered(event, tombstone)
    if not deleted:
        return answer
    decision = answer[0]
    event_rv = event.resource_version
    if decision in (PROCESS, REQUEUE) and not is_completed_phase(event.phase):
        return (SKIP, f"Workflow deleted at resourceVersion {event_rv} before completing; "
                      "nothing to notify.")
    if decision == REQUEUE:
        return (SKIP, f"Workflow deleted at resourceVersion {event_rv}, behind a newer copy; "
                      "nothing to read again.")
    return answer


def _ordered(event, tombstone):
    if tombstone is None:
        return (PROCESS, "")
    event_rv, seen_rv = event.resource_version, tombstone.resource_version
    order = rv.compare(event_rv, seen_rv)
    if order == 1:
        return (PROCESS, "")
    if order is None:
        if tombstone.completed:
            return (REJECT_STALE, f"Cannot order resourceVersion {event_rv!r} against the "
                                  f"completed copy at {seen_rv!r}; a copy not proven newer is "
                                  "not acted on.")
        return (PROCESS, "")
    if tombstone.completed:
        return (REJECT_STALE, f"Stale copy of a completed workflow: resourceVersion {event_rv} "
                              f"is not newer than {seen_rv} ({tombstone.phase}).")
    if order == -1:
        return (REQUEUE, f"Older copy of a running workflow: resourceVersion {event_rv} is "
                         f"behind {seen_rv}.")
    return (PROCESS, "")
