// Argo Workflows: completion and exit handlers.

/** Argo's completion: phase Succeeded, Failed or Error (the completed label alone is not). */
export function isCompletedPhase(phase) {
  return phase === 'Succeeded' || phase === 'Failed' || phase === 'Error';
}

/** Where the workflow's exit handler is (`spec.onExit` or `spec.hooks.exit`, on the workflow or
 * in `status.storedWorkflowTemplateSpec`); undefined when it has none. Throws on text that is
 * not a workflow. */
export function exitHandlerOf(workflowJson) {
  if (!workflowJson.includes('"onExit"') && !workflowJson.includes('"hooks"')) return undefined;
  const workflow = JSON.parse(workflowJson);
  const places = [
    [workflow?.spec, 'spec'],
    [workflow?.status?.storedWorkflowTemplateSpec, 'storedWorkflowTemplateSpec'],
  ];
  for (const [spec, where] of places) {
    if (spec === null || typeof spec !== 'object') continue;
    if (typeof spec.onExit === 'string' && spec.onExit !== '') return `${where}.onExit`;
    const hook = spec.hooks?.exit;
    if (hook && (hook.template || hook.templateRef)) return `${where}.hooks.exit`;
  }
  return undefined;
}
