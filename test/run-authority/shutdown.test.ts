/**
 * Shutdown of the local authority (RFC 0007: "Authority shutdown rejects new work and drains
 * outstanding run/import leases before releasing that identity, then clears the canonical
 * in-memory HMAC key"), as other instances on the directory see it. The drain itself — what is
 * refused, what may finish, when close resolves, the zeroed keys — is in the conformance suite.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanup, open, record, tempBase, turns } from './support.js';

afterAll(cleanup);

describe('close() on a directory other instances share', () => {
  it('during the drain the run stays locked to other instances; the record written then is durable for them, and the run is theirs once the lease is released', async () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    const other = open(dir, false);
    const lease = (await a.acquireRun('run-1'))!;
    const closing = a.close();
    await turns();
    expect(await other.acquireRun('run-1')).toBeUndefined();
    const rec = record('run-1', { state: 'SUSPENDED' });
    await a.writeRecord(lease, rec);
    expect(await other.readRecord('run-1')).toStrictEqual(rec);
    await lease.release();
    await closing;
    const next = await other.acquireRun('run-1');
    expect(next).toBeDefined();
    await next!.release();
    expect(await open(dir, false).readRecord('run-1')).toStrictEqual(rec);
  });

  it('an import lease held through the drain keeps the import lock from other instances until it is released', async () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    const other = open(dir, false, { importWaitMs: 30 });
    const imp = await a.beginImport('run-1');
    const closing = a.close();
    expect(await other.beginImport('run-1').catch((e: { code?: string }) => e.code)).toBe('import_busy');
    await imp.release();
    await closing;
    await (await other.beginImport('run-1')).release();
  });
});
