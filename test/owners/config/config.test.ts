/**
 * The machine configuration store contract, run against the file and the in-memory
 * implementation: canonical revisions, exact reads, compare-and-swap, idempotent transactions
 * and receipts, and the fail-closed refusal of unknown schemas.
 */
import { createHash } from 'node:crypto';
import { rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../../src/core/canonical-json.js';
import {
  decodeMachineConfiguration,
  memoryConfigStore,
  openFileConfigStore,
  type ConfigStore,
} from '../../../src/owners/config/index.js';
import { cleanup, codeOf, tempRoot, utf8 } from '../registry/support.js';

afterAll(cleanup);

const canonicalRevision = (value: unknown): string =>
  `sha256:${createHash('sha256').update(canonicalJson(value)).digest('hex')}`;

interface Harness {
  readonly store: ConfigStore;
  seed(bytes: Uint8Array | null): ConfigStore;
  reopen(): ConfigStore;
}

const impls: Array<[string, () => Harness]> = [
  [
    'file',
    () => {
      const root = tempRoot();
      const path = join(root, 'machine', 'configuration.json');
      return {
        store: openFileConfigStore(root),
        seed(bytes) {
          if (bytes === null) rmSync(path, { force: true });
          else {
            mkdirSync(join(root, 'machine'), { recursive: true });
            writeFileSync(path, bytes);
          }
          return openFileConfigStore(root);
        },
        reopen: () => openFileConfigStore(root),
      };
    },
  ],
  [
    'memory',
    () => {
      const store = memoryConfigStore();
      return { store, seed: (bytes) => memoryConfigStore(bytes), reopen: () => store };
    },
  ],
];

const ns = (v: Record<string, unknown> = {}) => ({ schema_version: 'ns_v1', ...v });

describe.each(impls)('machine configuration contract (%s)', (_name, make) => {
  it('an absent configuration is a confirmed absence: revision "absent", empty value on read, null on readExact', () => {
    const { store } = make();
    expect(store.read()).toEqual({
      value: { schema_version: 'loopx_machine_configuration_v0', namespaces: {} },
      revision: 'absent',
      bytes: null,
    });
    expect(store.readExact()).toEqual({ absent: true, revision: 'absent', value: null, bytes: null });
  });

  it('apply returns an applied, read-back receipt whose revision is sha256 over canonical JSON', () => {
    const { store } = make();
    const receipt = store.apply({
      expectedRevision: 'absent',
      transactionId: 'tx-1',
      changes: { zeta: ns({ a: 1 }), alpha: ns({ b: [1, 2] }) },
    });
    const read = store.readExact();
    expect(read.absent).toBe(false);
    expect(receipt).toEqual({
      schema_version: 'machine_configuration_transaction_v0',
      transaction_id: 'tx-1',
      status: 'applied',
      request_sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      prior_revision: 'absent',
      applied_revision: read.revision,
      readback_verified: true,
      changed_namespaces: ['alpha', 'zeta'],
    });
    expect(read.revision).toBe(canonicalRevision(read.value));
    expect(decodeMachineConfiguration(read.bytes!)).toEqual(read.value);
    expect(store.receipt('tx-1')).toEqual(receipt);
  });

  it('the revision is over canonical JSON, not the stored formatting', () => {
    const h = make();
    const value = { namespaces: { b: ns(), a: ns({ x: 1 }) }, schema_version: 'loopx_machine_configuration_v0' };
    const pretty = h.seed(utf8(JSON.stringify(value, null, 4))).readExact();
    expect(pretty.revision).toBe(canonicalRevision(value));
    expect(new TextDecoder().decode(pretty.bytes!)).toBe(JSON.stringify(value, null, 4));
  });

  it('a stale expected revision is refused with config_revision_conflict and leaves no receipt', () => {
    const { store } = make();
    const first = store.apply({ expectedRevision: 'absent', transactionId: 'tx-1', changes: { a: ns() } });
    expect(
      codeOf(() => store.apply({ expectedRevision: 'absent', transactionId: 'tx-2', changes: { a: ns({ v: 2 }) } })),
    ).toBe('config_revision_conflict');
    expect(store.receipt('tx-2')).toBeUndefined();
    expect(store.read().revision).toBe(first.applied_revision);
  });

  it('a repeated transaction id returns its original receipt and never applies twice', () => {
    const h = make();
    const tx1 = { expectedRevision: 'absent', transactionId: 'tx-1', changes: { a: ns({ v: 1 }) } };
    const r1 = h.store.apply(tx1);
    const r2 = h.store.apply({
      expectedRevision: r1.applied_revision,
      transactionId: 'tx-2',
      changes: { a: ns({ v: 2 }) },
    });
    const replay = h.reopen().apply(tx1);
    expect(replay).toEqual(r1);
    expect(h.store.read().revision).toBe(r2.applied_revision);
    expect(h.store.read().value.namespaces.a).toEqual(ns({ v: 2 }));
  });

  it('a transaction id reused for a different request is refused with config_transaction_reused', () => {
    const { store } = make();
    const r1 = store.apply({ expectedRevision: 'absent', transactionId: 'tx-1', changes: { a: ns() } });
    expect(
      codeOf(() => store.apply({ expectedRevision: r1.applied_revision, transactionId: 'tx-1', changes: { b: ns() } })),
    ).toBe('config_transaction_reused');
    expect(
      codeOf(() =>
        store.apply({ expectedRevision: 'absent', transactionId: 'tx-1', changes: { a: ns({ other: true }) } }),
      ),
    ).toBe('config_transaction_reused');
    expect(store.read().revision).toBe(r1.applied_revision);
  });

  it('null removes a namespace; changed_namespaces lists only namespaces whose value changed', () => {
    const { store } = make();
    const r1 = store.apply({ expectedRevision: 'absent', transactionId: 't1', changes: { a: ns({ v: 1 }), b: ns() } });
    const r2 = store.apply({
      expectedRevision: r1.applied_revision,
      transactionId: 't2',
      changes: { a: ns({ v: 1 }), b: null, c: null },
    });
    expect(r2.changed_namespaces).toEqual(['b']);
    expect(Object.keys(store.read().value.namespaces)).toEqual(['a']);
    const r3 = store.apply({ expectedRevision: r2.applied_revision, transactionId: 't3', changes: {} });
    expect(r3.changed_namespaces).toEqual([]);
    expect(r3.applied_revision).toBe(r3.prior_revision);
  });

  it('namespace ids must be lowercase identifiers and values must carry a schema_version', () => {
    const { store } = make();
    for (const bad of ['Upper', '1st', 'a-b', 'a.b', '']) {
      expect(
        codeOf(() => store.apply({ expectedRevision: 'absent', transactionId: 't', changes: { [bad]: ns() } })),
      ).toBe('config_namespace_invalid');
    }
    expect(
      codeOf(() => store.apply({ expectedRevision: 'absent', transactionId: 't', changes: { a: { v: 1 } as never } })),
    ).toBe('config_namespace_invalid');
    expect(
      codeOf(() =>
        store.apply({ expectedRevision: 'absent', transactionId: 't', changes: { a: ns({ n: Number.NaN }) } }),
      ),
    ).toBe('config_namespace_invalid');
    for (const bad of ['../x', '', 'a/b', '.hidden', 'x.y']) {
      expect(codeOf(() => store.apply({ expectedRevision: 'absent', transactionId: bad, changes: {} }))).toBe(
        'config_transaction_id_invalid',
      );
    }
    expect(codeOf(() => store.apply({ expectedRevision: 'latest', transactionId: 't', changes: {} }))).toBe(
      'config_revision_invalid',
    );
    expect(store.readExact().absent).toBe(true);
  });

  it('A→B→A: every exact read holds the bytes it decoded; equal revisions cannot tell the versions apart', () => {
    const { store } = make();
    const a = store.apply({ expectedRevision: 'absent', transactionId: 't1', changes: { a: ns({ v: 'A' }) } });
    const readA = store.readExact();
    const b = store.apply({
      expectedRevision: a.applied_revision,
      transactionId: 't2',
      changes: { a: ns({ v: 'B' }) },
    });
    const readB = store.readExact();
    store.apply({ expectedRevision: b.applied_revision, transactionId: 't3', changes: { a: ns({ v: 'A' }) } });
    const readA2 = store.readExact();
    for (const r of [readA, readB, readA2]) expect(decodeMachineConfiguration(r.bytes!)).toEqual(r.value);
    expect(readA2.revision).toBe(readA.revision);
    expect(readB.value!.namespaces.a).toEqual(ns({ v: 'B' }));
    expect(readA.value!.namespaces.a).toEqual(ns({ v: 'A' }));
  });

  it('an unknown schema_version or top-level field is refused with config_unknown_schema', () => {
    const h = make();
    expect(
      codeOf(() =>
        h.seed(utf8(JSON.stringify({ schema_version: 'loopx_machine_configuration_v1', namespaces: {} }))).readExact(),
      ),
    ).toBe('config_unknown_schema');
    expect(
      codeOf(() =>
        h
          .seed(utf8(JSON.stringify({ schema_version: 'loopx_machine_configuration_v0', namespaces: {}, extra: 1 })))
          .readExact(),
      ),
    ).toBe('config_unknown_schema');
    const seeded = h.seed(utf8(JSON.stringify({ schema_version: 'loopx_machine_configuration_v1', namespaces: {} })));
    expect(codeOf(() => seeded.apply({ expectedRevision: 'absent', transactionId: 't', changes: {} }))).toBe(
      'config_unknown_schema',
    );
  });

  it('invalid content is refused with config_malformed', () => {
    const h = make();
    const doc = (namespaces: unknown) =>
      utf8(JSON.stringify({ schema_version: 'loopx_machine_configuration_v0', namespaces }));
    expect(codeOf(() => h.seed(utf8('nope')).readExact())).toBe('config_malformed');
    expect(codeOf(() => h.seed(doc({ Bad: ns() })).readExact())).toBe('config_malformed');
    expect(codeOf(() => h.seed(doc({ a: { v: 1 } })).readExact())).toBe('config_malformed');
    expect(codeOf(() => h.seed(doc([])).readExact())).toBe('config_malformed');
  });

  it('an unknown transaction id has no receipt', () => {
    const { store } = make();
    expect(store.receipt('never')).toBeUndefined();
    expect(store.receipt('../etc')).toBeUndefined();
  });
});
