/**
 * The config owner's recovery read side: a copied root's configuration and receipts are read
 * without a lock or a write; an in-flight intent is a warning, never resolved; damage and links
 * are typed findings.
 */
import { cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openFileConfigStore } from '../../../src/owners/config/index.js';
import { readHistoricalCopy as readHistorical } from '../../../src/owners/config/historical.js';
import { cleanup, snapshotTree, tempRoot } from '../registry/support.js';

afterAll(cleanup);

const ns = { schema_version: 'ns_v1' };

function copiedRoot(): { copy: string; live: ReturnType<typeof openFileConfigStore> } {
  const root = tempRoot();
  const live = openFileConfigStore(root);
  const r1 = live.apply({ expectedRevision: 'absent', transactionId: 't1', changes: { a: ns } });
  live.apply({ expectedRevision: r1.applied_revision, transactionId: 't2', changes: { b: ns } });
  const copy = join(tempRoot(), 'copy');
  cpSync(root, copy, { recursive: true });
  return { copy, live };
}

describe('config readHistorical', () => {
  it('reads the copied configuration exactly and every receipt, writing nothing', () => {
    const { copy, live } = copiedRoot();
    const before = snapshotTree(copy);
    const h = readHistorical(copy);
    expect(snapshotTree(copy)).toEqual(before);
    expect(h.ok).toBe(true);
    expect(h.findings).toEqual([]);
    expect(h.configuration).toEqual(live.readExact());
    expect(h.receipts.map((r) => r.transaction_id)).toEqual(['t1', 't2']);
    expect(h.receipts[1]).toEqual(live.receipt('t2'));
  });

  it('a copy without a configuration is a confirmed absence', () => {
    const h = readHistorical(tempRoot());
    expect(h).toEqual({
      ok: true,
      configuration: { absent: true, revision: 'absent', value: null, bytes: null },
      receipts: [],
      findings: [],
    });
  });

  it('an in-flight intent is a config_transaction_pending warning and is left as it is', () => {
    const { copy } = copiedRoot();
    writeFileSync(join(copy, 'machine/configuration/transactions/t3.intent.json'), '{}');
    const before = snapshotTree(copy);
    const h = readHistorical(copy);
    expect(snapshotTree(copy)).toEqual(before);
    expect(h.ok).toBe(true);
    expect(h.findings).toEqual([
      expect.objectContaining({
        code: 'config_transaction_pending',
        severity: 'warning',
        subject: 'machine/configuration/transactions/t3.intent.json',
      }),
    ]);
  });

  it('a tampered receipt and an unknown configuration schema are error findings', () => {
    const { copy } = copiedRoot();
    writeFileSync(
      join(copy, 'machine/configuration/transactions/t1.json'),
      JSON.stringify({ schema_version: 'machine_configuration_transaction_v0', transaction_id: 'other' }),
    );
    writeFileSync(
      join(copy, 'machine/configuration.json'),
      JSON.stringify({ schema_version: 'loopx_machine_configuration_v7', namespaces: {} }),
    );
    const h = readHistorical(copy);
    expect(h.ok).toBe(false);
    expect(h.configuration).toBeNull();
    expect(h.findings.map((f) => `${f.code}@${f.subject}`)).toEqual([
      'config_unknown_schema@machine/configuration.json',
      'config_receipt_invalid@machine/configuration/transactions/t1.json',
    ]);
    expect(h.receipts.map((r) => r.transaction_id)).toEqual(['t2']);
  });

  it('a linked machine directory is config_unreadable and is not followed', () => {
    const copy = tempRoot();
    const outside = tempRoot();
    mkdirSync(join(outside, 'configuration'));
    writeFileSync(
      join(outside, 'configuration.json'),
      JSON.stringify({ schema_version: 'loopx_machine_configuration_v0', namespaces: {} }),
    );
    symlinkSync(outside, join(copy, 'machine'));
    const h = readHistorical(copy);
    expect(h).toMatchObject({ ok: false, configuration: null });
    expect(h.findings.map((f) => `${f.code}@${f.subject}`)).toEqual(['config_unreadable@machine']);
  });
});
