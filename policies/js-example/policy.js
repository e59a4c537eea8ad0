// The component's exports (WIT names in camelCase); each forwards to example-policy.js.

import { settings } from 'pipewarden:policy/host@0.1.1';

import * as policy from './example-policy.js';

export function validateSettings(text) {
  policy.parseSettings(text);
}

export function shouldRebuild(input) {
  return policy.shouldRebuild(input);
}

export function renderSwf(swf, context) {
  return policy.renderSwf(swf, context.targetVersion, context.settings);
}

export function exitEligibility(event, tombstone) {
  return policy.exitEligibility(event, tombstone, settings);
}
