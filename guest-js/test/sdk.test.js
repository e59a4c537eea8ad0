// The JavaScript SDK in Node: RFC 8785 vectors shared with the Rust and Python SDKs,
// resourceVersion ordering, Argo's stale-copy rules, SWF digests. Run: node --test guest-js/test/

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import {
  Swf,
  argoExitEligibility,
  canonicalJson,
  compareResourceVersions,
  exitHandlerOf,
  renderDigest,
  sha256Hex,
} from '../src/index.js';

const root = new URL('../../', import.meta.url);

test('the shared RFC 8785 vectors', () => {
  const { vectors } = JSON.parse(readFileSync(new URL('tests/data/jcs/vectors.json', root)));
  assert.ok(vectors.length >= 5);
  for (const vector of vectors) {
    const text = canonicalJson(JSON.parse(vector.input));
    assert.equal(text, vector.canonical, vector.name);
    assert.equal(sha256Hex(text), vector.sha256, vector.name);
  }
});

test('the SDK sha256 agrees with node:crypto', () => {
  for (const text of ['', 'abc', 'é€😀', 'x'.repeat(55), 'y'.repeat(64), 'z'.repeat(1000)]) {
    assert.equal(sha256Hex(text), createHash('sha256').update(text, 'utf8').digest('hex'));
  }
});

test('resourceVersions order as numbers of any length', () => {
  assert.equal(compareResourceVersions('99', '100'), -1);
  assert.equal(compareResourceVersions('18446744073709551616', '18446744073709551615'), 1);
  for (const bad of ['', '0', '007', '-5', '+5', '12a', ' 12', '1.5']) {
    assert.equal(compareResourceVersions(bad, '1'), null, bad);
  }
});

test("Argo's stale-copy table", () => {
  const ev = (resourceVersion, phase = 'Running', kind = 'modified') => ({ resourceVersion, phase, kind });
  const tomb = (resourceVersion, completed) => ({ resourceVersion, completed, phase: 'Succeeded' });
  const rows = [
    [ev('100'), undefined, 'process'],
    [ev('105'), tomb('110', true), 'reject-stale'],
    [ev('110'), tomb('110', true), 'reject-stale'],
    [ev('101'), tomb('105', false), 'requeue'],
    [ev('105'), tomb('105', false), 'process'],
    [ev('0105'), tomb('110', true), 'reject-stale'],
    [ev('abc'), tomb('110', false), 'process'],
    [ev('106', 'Running', 'deleted'), tomb('105', false), 'skip'],
    [ev('112', 'Succeeded', 'deleted'), tomb('111', true), 'process'],
    [ev('101', 'Succeeded', 'deleted'), tomb('105', false), 'skip'],
  ];
  for (const [event, tombstone, want] of rows) {
    assert.equal(argoExitEligibility(event, tombstone).tag, want, JSON.stringify(event));
  }
});

test('parameter order and workflow form do not change the render digest', () => {
  const workflow = { kind: 'Workflow', spec: { entrypoint: 'main' } };
  const one = { workflow: { spec: JSON.stringify(workflow), parameters: [{ name: 'a', value: '1' }, { name: 'b', value: '2' }] } };
  const two = { workflow: { spec: workflow, parameters: [{ name: 'b', value: '2' }, { name: 'a', value: '1' }] } };
  assert.equal(renderDigest(one), renderDigest(two));
});

test('a corrupted embedded workflow is an error, exit handlers are found', () => {
  const swf = new Swf({ spec: { workflow: { spec: { dynamicKey1: 'dynamicValue1' } } } });
  assert.throws(() => swf.embeddedWorkflow(), /holds no Argo Workflow/);
  assert.equal(exitHandlerOf('{"spec": {"entrypoint": "main"}}'), undefined);
  assert.equal(exitHandlerOf('{"spec": {"onExit": "bye"}}'), 'spec.onExit');
});
