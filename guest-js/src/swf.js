// ScheduledWorkflows as JSON, with the accessors policies need. Unknown fields survive edits.

import { digest } from './canonical.js';

export const VERSION_ANNOTATION = 'pipelines.kubeflow.org/version';
export const RENDER_HASH_ANNOTATION = 'pipewarden.io/render-hash';
export const SETTINGS_HASH_ANNOTATION = 'pipewarden.io/settings-hash';

/** The SWF, or the workflow embedded in it, could not be read. */
export class SwfError extends Error {}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

export class Swf {
  constructor(object) {
    this.object = object;
  }

  static fromJson(text) {
    let object;
    try {
      object = JSON.parse(text);
    } catch (error) {
      throw new SwfError(`the SWF is not JSON: ${error.message}`);
    }
    if (!isObject(object)) throw new SwfError('the SWF is not a JSON object');
    return new Swf(object);
  }

  /** Compact JSON keeping key order, so a render of a render is the same text. */
  toJson() {
    return JSON.stringify(this.object);
  }

  annotation(key) {
    const value = this.object.metadata?.annotations?.[key];
    return typeof value === 'string' ? value : undefined;
  }

  setAnnotation(key, value) {
    const metadata = (this.object.metadata ??= {});
    (metadata.annotations ??= {})[key] = value;
  }

  /** No `spec.workflow.spec`: KFP compiles these at run time; nothing to render. */
  isReferenceOnly() {
    const spec = this.object.spec?.workflow?.spec;
    return spec === undefined || spec === null;
  }

  /** The Argo Workflow in `spec.workflow.spec` (string or legacy object form); undefined for a
   * reference-only SWF. */
  embeddedWorkflow() {
    let spec = this.object.spec?.workflow?.spec;
    if (spec === undefined || spec === null) return undefined;
    if (typeof spec === 'string') {
      if (spec === '') throw new SwfError('spec.workflow.spec is an empty string');
      try {
        spec = JSON.parse(spec);
      } catch (error) {
        throw new SwfError(`spec.workflow.spec is not valid JSON: ${error.message}`);
      }
    }
    if (!isObject(spec) || spec.kind !== 'Workflow') {
      throw new SwfError('spec.workflow.spec holds no Argo Workflow');
    }
    return spec;
  }

  /** Writes the workflow back as a compact JSON string, the form KFP stores. */
  setEmbeddedWorkflow(workflow) {
    const spec = (this.object.spec ??= {});
    (spec.workflow ??= {}).spec = JSON.stringify(workflow);
  }

  renderDigest() {
    return renderDigest(this.object.spec);
  }
}

/** An SWF `spec` made comparable: the embedded workflow parsed (text that is not JSON stays
 * text), and `workflow.parameters` as name -> value (a list if a name is missing or repeats). */
export function normalizedSpec(spec) {
  if (!isObject(spec) || !isObject(spec.workflow)) return spec;
  const workflow = { ...spec.workflow };
  if (typeof workflow.spec === 'string') {
    try {
      workflow.spec = JSON.parse(workflow.spec);
    } catch {
      // stays text
    }
  }
  if (Array.isArray(workflow.parameters)) {
    const byName = {};
    let unique = true;
    for (const item of workflow.parameters) {
      const name = isObject(item) ? item.name : undefined;
      if (typeof name !== 'string' || Object.hasOwn(byName, name)) {
        unique = false;
        break;
      }
      byName[name] = item.value ?? null;
    }
    if (unique) workflow.parameters = byName;
  }
  return { ...spec, workflow };
}

/** The digest stamped as `pipewarden.io/render-hash`: RFC 8785 over the normalized spec. */
export function renderDigest(spec) {
  return digest(normalizedSpec(spec ?? null));
}
