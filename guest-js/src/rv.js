// Ordering Kubernetes resourceVersions, as Argo 4.1 does: only canonical decimals order (ASCII
// digits, no sign, no leading zero, not "0", any length); anything else is unordered (null).

const CANONICAL = /^[1-9][0-9]*$/;

/** -1, 0 or 1; null when either side is unparseable. */
export function compareResourceVersions(a, b) {
  if (!CANONICAL.test(a) || !CANONICAL.test(b)) return null;
  // Without leading zeros, a longer number is a larger one.
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a === b ? 0 : a < b ? -1 : 1;
}
