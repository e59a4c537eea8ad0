// pipewarden's JavaScript SDK: helpers for policies of the WIT world `pipewarden:policy@0.1.1`,
// built into components with `jco componentize`. Plain ES modules: they run in Node for tests.

export { canonicalJson, digest, renderSettingsDigest, settingsDigest } from './canonical.js';
export { argoExitEligibility, PROCESS } from './eligibility.js';
export { compareResourceVersions } from './rv.js';
export { sha256Hex } from './sha256.js';
export {
  RENDER_HASH_ANNOTATION,
  SETTINGS_HASH_ANNOTATION,
  VERSION_ANNOTATION,
  Swf,
  SwfError,
  normalizedSpec,
  renderDigest,
} from './swf.js';
export { exitHandlerOf, isCompletedPhase } from './workflow.js';
