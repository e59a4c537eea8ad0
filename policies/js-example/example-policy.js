// The example policy's decisions as plain functions (tested in Node, exported by policy.js).
//
// - settings: `driver.image`, `driver.flags`, `launcher.image` as the default policy's settings
//   (other keys are accepted and ignored), and `notify` (`exit-handler` or `all`).
// - render: driver and launcher images and the driver flags from the settings, then the stamps.
// - should-rebuild: the default rebuild policy against stamps, drift and the settings digest.
// - exit-eligibility: Argo's stale-copy rules, then `notify`.

import {
  PROCESS,
  RENDER_HASH_ANNOTATION,
  SETTINGS_HASH_ANNOTATION,
  Swf,
  SwfError,
  VERSION_ANNOTATION,
  argoExitEligibility,
  exitHandlerOf,
  isCompletedPhase,
  renderSettingsDigest,
} from '../../guest-js/src/index.js';

const NOTIFY_MODES = ['exit-handler', 'all'];

/** The settings, or an Error saying what is wrong. */
export function parseSettings(text) {
  let settings;
  try {
    settings = JSON.parse(text);
  } catch (error) {
    throw new Error(`settings are not JSON: ${error.message}`);
  }
  if (settings === null || typeof settings !== 'object' || Array.isArray(settings)) {
    throw new Error('settings are not a JSON object');
  }
  const notify = settings.notify ?? 'exit-handler';
  if (!NOTIFY_MODES.includes(notify)) {
    throw new Error(`notify is ${JSON.stringify(notify)}; expected one of ${NOTIFY_MODES.join(', ')}`);
  }
  for (const part of ['driver', 'launcher']) {
    if (!(part in settings)) continue; // exit eligibility alone needs neither
    const image = settings[part]?.image;
    if (typeof image !== 'string' || image === '') {
      throw new Error(`${part}.image must be a non-empty string`);
    }
  }
  (settings.driver?.flags ?? []).forEach((flag, index) => {
    if (typeof flag?.name !== 'string') throw new Error(`driver.flags[${index}] needs a name`);
    if (!['separate', 'equals', undefined].includes(flag.style)) {
      throw new Error(`driver.flags[${index}].style is separate or equals`);
    }
  });
  return settings;
}

// --- render ------------------------------------------------------------------------------

/** `--name value` and `--name=value` as a Map name -> value. */
function flagPairs(args) {
  const pairs = new Map();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg.startsWith('--') || arg.length <= 2) continue;
    const eq = arg.indexOf('=');
    if (eq > 0) {
      pairs.set(arg.slice(2, eq), arg.slice(eq + 1));
    } else if (i + 1 < args.length && !args[i + 1].startsWith('--')) {
      pairs.set(arg.slice(2), args[++i]);
    } else {
      pairs.set(arg.slice(2), null);
    }
  }
  return pairs;
}

/** The driver's command line as the settings' flags write it, values kept from `args` where
 * the settings give none. */
export function driverArgs(args, flags) {
  const current = flagPairs(args);
  const kind = current.get('type') === 'CONTAINER' ? 'container' : 'dag';
  const out = [];
  for (const flag of flags) {
    if (flag.drivers && !flag.drivers.includes(kind)) continue;
    const value = 'value' in flag ? flag.value : current.get(flag.name) ?? flag.default;
    if (value === undefined || value === null) continue;
    if (flag.style === 'equals') out.push(`--${flag.name}=${value}`);
    else out.push(`--${flag.name}`, value);
  }
  return out;
}

function migrateWorkflow(workflow, settings) {
  const driver = settings.driver ?? {};
  const launcher = settings.launcher ?? {};
  for (const template of workflow.spec?.templates ?? []) {
    const container = template.container ?? {};
    if ((container.image ?? '').includes('kfp-driver') && driver.image) {
      container.image = driver.image;
      if (driver.flags) container.args = driverArgs(container.args ?? [], driver.flags);
    }
    for (const init of template.initContainers ?? []) {
      if ((init.image ?? '').includes('kfp-launcher') && launcher.image) init.image = launcher.image;
    }
  }
}

/** The rendered SWF as JSON text; throws SwfError when it cannot be rendered. */
export function renderSwf(text, target, settingsText) {
  const swf = Swf.fromJson(text);
  const workflow = swf.embeddedWorkflow();
  if (workflow === undefined) return text; // reference-only: KFP compiles it at run time
  migrateWorkflow(workflow, parseSettings(settingsText));
  swf.setEmbeddedWorkflow(workflow);
  if (target) swf.setAnnotation(VERSION_ANNOTATION, target);
  swf.setAnnotation(SETTINGS_HASH_ANNOTATION, renderSettingsDigest(settingsText));
  swf.setAnnotation(RENDER_HASH_ANNOTATION, swf.renderDigest());
  return swf.toJson();
}

// --- should-rebuild ----------------------------------------------------------------------

const DRIFTED = 'The live spec differs from its last render (edited out of band).';
const SETTINGS_CHANGED = 'The settings changed since the last render.';
const rebuild = (val) => ({ tag: 'rebuild', val });
const skip = (val) => ({ tag: 'skip', val });

/** The WIT `rebuild-input` -> `rebuild-decision`. */
export function shouldRebuild(input) {
  let swf;
  try {
    swf = Swf.fromJson(input.swf);
  } catch (error) {
    if (!(error instanceof SwfError)) throw error;
    return input.policy === 'disable'
      ? skip(`Rebuild policy is disable; ${error.message}.`)
      : rebuild(`${error.message}; rendering will say more.`);
  }
  if (swf.isReferenceOnly()) {
    return skip('Reference-only SWF (no workflow.spec): KFP compiles it at run time.');
  }
  if (input.policy === 'always') return rebuild('Rebuild policy is always.');
  const answer = versionCheck(swf, input);
  if (input.policy === 'disable') {
    const prefix = answer.tag === 'rebuild' ? 'would rebuild: ' : '';
    return skip(`Rebuild policy is disable; ${prefix}${answer.val}`);
  }
  return answer;
}

function versionCheck(swf, input) {
  const target = input.targetVersion;
  const { version, renderHash } = input.stamps;
  const drifted = renderHash == null ? undefined : swf.renderDigest() !== renderHash;
  const stampedSettings = swf.annotation(SETTINGS_HASH_ANNOTATION);
  const settingsChanged =
    stampedSettings === undefined ? undefined : stampedSettings !== renderSettingsDigest(input.settings);
  if (!target) {
    if (drifted) return rebuild(DRIFTED);
    if (settingsChanged) return rebuild(SETTINGS_CHANGED);
    return skip('Target version unknown; nothing to compare the stamp with.');
  }
  if (version == null) return rebuild(`No version stamp; target is ${target}.`);
  if (version !== target) return rebuild(`Stamped for ${version}; target is ${target}.`);
  if (drifted === undefined) return rebuild('No render-hash stamp to check the live spec against.');
  if (drifted) return rebuild(DRIFTED);
  if (settingsChanged === undefined) return rebuild('No settings stamp to check the settings against.');
  if (settingsChanged) return rebuild(SETTINGS_CHANGED);
  return skip(`Up to date: rendered for ${target} with these settings, unchanged since.`);
}

// --- exit-eligibility --------------------------------------------------------------------

/** Argo's rules, then for a completion they let through, `notify` (read only then). */
export function exitEligibility(event, tombstone, readSettings) {
  const answer = argoExitEligibility(event, tombstone);
  if (answer.tag !== 'process' || !isCompletedPhase(event.phase)) return answer;
  try {
    if (exitHandlerOf(event.workflow) !== undefined) return PROCESS;
  } catch {
    return PROCESS; // better one notification too many than a lost one
  }
  const notify = JSON.parse(readSettings() || '{}').notify ?? 'exit-handler';
  if (notify === 'all') return PROCESS;
  return {
    tag: 'skip',
    val: `No exit handler (spec.onExit or spec.hooks.exit, nor in a stored workflow template) and notify is exit-handler; ${event.phase} is not notified.`,
  };
}
