// Argo 4.1's exit-eligibility rules (argo-workflows #16357), as the Rust SDK's
// `eligibility::argo_exit_eligibility`; answers are { tag, val } as the WIT variant:
//
// | event                                               | answer         |
// |-----------------------------------------------------|----------------|
// | deleted before completing                           | skip           |
// | no tombstone (new uid, evicted, or host restarted)  | process        |
// | newer than the tombstone                            | process        |
// | older or equal, tombstone completed                 | reject-stale   |
// | older, tombstone not completed (running)            | requeue        |
// | equal, tombstone not completed                      | process        |
// | resourceVersion unordered, tombstone completed      | reject-stale   |
// | resourceVersion unordered, tombstone not completed  | process        |

import { compareResourceVersions } from './rv.js';
import { isCompletedPhase } from './workflow.js';

export const PROCESS = { tag: 'process' };

/** `event` and `tombstone` as the WIT records (tombstone undefined when the host has none). */
export function argoExitEligibility(event, tombstone) {
  const answer = ordered(event, tombstone);
  if (event.kind !== 'deleted') return answer;
  const rv = event.resourceVersion;
  if ((answer.tag === 'process' || answer.tag === 'requeue') && !isCompletedPhase(event.phase)) {
    return { tag: 'skip', val: `Workflow deleted at resourceVersion ${rv} before completing; nothing to notify.` };
  }
  if (answer.tag === 'requeue') {
    return { tag: 'skip', val: `Workflow deleted at resourceVersion ${rv}, behind a newer copy; nothing to read again.` };
  }
  return answer;
}

function ordered(event, tombstone) {
  if (tombstone === undefined || tombstone === null) return PROCESS;
  const rv = event.resourceVersion;
  const seen = tombstone.resourceVersion;
  const order = compareResourceVersions(rv, seen);
  if (order === 1) return PROCESS;
  if (order === null) {
    if (!tombstone.completed) return PROCESS;
    return { tag: 'reject-stale', val: `Cannot order resourceVersion ${JSON.stringify(rv)} against the completed copy at ${JSON.stringify(seen)}; a copy not proven newer is not acted on.` };
  }
  if (tombstone.completed) {
    return { tag: 'reject-stale', val: `Stale copy of a completed workflow: resourceVersion ${rv} is not newer than ${seen} (${tombstone.phase}).` };
  }
  if (order === -1) {
    return { tag: 'requeue', val: `Older copy of a running workflow: resourceVersion ${rv} is behind ${seen}.` };
  }
  return PROCESS;
}
