/**
 * File-store transactions across restarts and real crashes: receipts are durable files that a
 * reopened store replays, and a child killed at each named point of apply leaves a state that
 * the retry settles to exactly one application and its receipt.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, symlinkSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../../src/core/canonical-json.js';
import { openFileConfigStore, type ConfigTransaction } from '../../../src/owners/config/index.js';
import { cleanup, codeOf, REPO, tempRoot } from '../registry/support.js';

afterAll(cleanup);

const CHILD = join(REPO, 'test/owners/config/fixtures/apply-child.ts');
const txDir = (root: string) => join(root, 'machine', 'configuration', 'transactions');

function childApply(root: string, tx: ConfigTransaction, fault: string) {
  const env = { ...process.env, LOOPX_TEST_FAULT: fault };
  return spawnSync(process.execPath, ['--import', 'tsx', CHILD, root, JSON.stringify(tx)], {
    cwd: REPO,
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
}

const ns = (v: Record<string, unknown> = {}) => ({ schema_version: 'ns_v1', ...v });

describe('file configuration transactions', () => {
  it('a receipt is an owner-only canonical file that a reopened store returns for the same transaction', () => {
    const root = tempRoot();
    const tx = { expectedRevision: 'absent', transactionId: 'tx-1', changes: { a: ns() } };
    const receipt = openFileConfigStore(root).apply(tx);
    const path = join(txDir(root), 'tx-1.json');
    expect(readFileSync(path, 'utf8')).toBe(`${canonicalJson(receipt)}\n`);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(root, 'machine', 'configuration.json')).mode & 0o777).toBe(0o600);
    const config = readFileSync(join(root, 'machine', 'configuration.json'));

    const restarted = openFileConfigStore(root);
    expect(restarted.apply(tx)).toEqual(receipt);
    expect(readFileSync(join(root, 'machine', 'configuration.json')).equals(config)).toBe(true);
    expect(readdirSync(txDir(root))).toEqual(['tx-1.json']);
  });

  it.each([
    ['config.apply.after_intent', ['base.json', 'tx-crash.intent.json'], false],
    ['config.apply.after_configuration_write', ['base.json', 'tx-crash.intent.json'], true],
    ['config.apply.after_receipt', ['base.json', 'tx-crash.intent.json', 'tx-crash.json'], true],
  ] as const)(
    'a crash at %s is settled by the retry: applied exactly once, one receipt, no intent left',
    (fault, leftAfterCrash, configWritten) => {
      const root = tempRoot();
      const base = openFileConfigStore(root).apply({
        expectedRevision: 'absent',
        transactionId: 'base',
        changes: { a: ns({ v: 0 }) },
      });
      const tx = {
        expectedRevision: base.applied_revision,
        transactionId: 'tx-crash',
        changes: { a: ns({ v: 1 }), b: ns() },
      };
      const child = childApply(root, tx, fault);
      expect(child.signal).toBe('SIGKILL');
      expect(readdirSync(txDir(root)).sort()).toEqual(leftAfterCrash);
      expect(openFileConfigStore(root).read().revision !== base.applied_revision).toBe(configWritten);

      const store = openFileConfigStore(root);
      const receipt = store.apply(tx);
      expect(receipt).toMatchObject({
        transaction_id: 'tx-crash',
        prior_revision: base.applied_revision,
        readback_verified: true,
        changed_namespaces: ['a', 'b'],
      });
      expect(store.read().revision).toBe(receipt.applied_revision);
      expect(store.read().value.namespaces).toEqual({ a: ns({ v: 1 }), b: ns() });
      expect(readdirSync(txDir(root)).sort()).toEqual(['base.json', 'tx-crash.json']);
      expect(store.apply(tx)).toEqual(receipt);
    },
  );

  it('another transaction after a crash first publishes the interrupted one’s receipt', () => {
    const root = tempRoot();
    const tx = { expectedRevision: 'absent', transactionId: 'tx-crash', changes: { a: ns() } };
    expect(childApply(root, tx, 'config.apply.after_configuration_write').signal).toBe('SIGKILL');
    const store = openFileConfigStore(root);
    expect(store.receipt('tx-crash')).toBeUndefined();
    const current = store.read().revision;
    const next = store.apply({ expectedRevision: current, transactionId: 'tx-next', changes: { b: ns() } });
    expect(store.receipt('tx-crash')).toMatchObject({ prior_revision: 'absent', applied_revision: current });
    expect(next.prior_revision).toBe(current);
  });

  it('an intent whose configuration never landed is dropped, and the retry applies it once', () => {
    const root = tempRoot();
    const tx = { expectedRevision: 'absent', transactionId: 'tx-crash', changes: { a: ns() } };
    expect(childApply(root, tx, 'config.apply.after_intent').signal).toBe('SIGKILL');
    expect(existsSync(join(root, 'machine', 'configuration.json'))).toBe(false);
    const store = openFileConfigStore(root);
    store.apply({ expectedRevision: 'absent', transactionId: 'other', changes: { z: ns() } });
    expect(store.receipt('tx-crash')).toBeUndefined();
    expect(readdirSync(txDir(root))).toEqual(['other.json']);
    expect(codeOf(() => store.apply(tx))).toBe('config_revision_conflict');
  });

  it('a symlink at machine/configuration.json is unreadable, never an absence', () => {
    const root = tempRoot();
    mkdirSync(join(root, 'machine'));
    const outside = join(tempRoot(), 'c.json');
    writeFileSync(outside, JSON.stringify({ schema_version: 'loopx_machine_configuration_v0', namespaces: {} }));
    symlinkSync(outside, join(root, 'machine', 'configuration.json'));
    const store = openFileConfigStore(root);
    expect(codeOf(() => store.readExact())).toBe('config_unreadable');
    expect(codeOf(() => store.apply({ expectedRevision: 'absent', transactionId: 't', changes: {} }))).toBe(
      'config_unreadable',
    );
  });
});
