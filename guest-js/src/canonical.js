// Canonical JSON (RFC 8785, JCS) and the digests stamped on renders: the same text, byte for
// byte, as the Rust and Python SDKs write. JCS is defined in ECMAScript's terms, so strings and
// numbers are JSON.stringify's; keys sort by UTF-16 code units, which is what sort() compares.

import { sha256Hex } from './sha256.js';

/** `value` (as JSON.parse returns it) as RFC 8785 canonical JSON text. */
export function canonicalJson(value) {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) {
      throw new TypeError('NaN and Infinity are not JSON');
    }
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`${typeof value} is not JSON`);
    return text;
  }
  if (Array.isArray(value)) {
    return `[${value.map(canonicalJson).join(',')}]`;
  }
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
}

/** `sha256:<hex>` of the canonical JSON of `value`. */
export function digest(value) {
  return `sha256:${sha256Hex(canonicalJson(value))}`;
}

/** Settings digest: of the canonical JSON (reformatting is no change), of the text if not JSON. */
export function settingsDigest(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    return `sha256:${sha256Hex(text)}`;
  }
  return digest(value);
}

/** The settings digest stamped on renders: without `notify`, which no render reads. */
export function renderSettingsDigest(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    return settingsDigest(text);
  }
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const { notify: _ignored, ...rest } = value;
    return digest(rest);
  }
  return settingsDigest(text);
}
