/**
 * Shutdown (RFC 0007): "Authority shutdown rejects new work and drains outstanding run/import
 * leases before releasing that identity, then clears the canonical in-memory HMAC key."
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { asyncCodeOf, cleanup, codeOf, open, record, tempBase, turns } from './support.js';

afterAll(cleanup);

const isZero = (b: Buffer): boolean => b.every((x) => x === 0);

describe('close()', () => {
  it('drains: stays pending with an outstanding run lease, refuses new work, lets the lease write, resolves on release, then zeroes keys and refuses reads', async () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    a.rotate();
    const keys = a.keyBuffersForTest();
    expect(keys).toHaveLength(2);
    expect(keys.some(isZero)).toBe(false);
    const lease = a.acquireRun('run-1')!;

    let closed = false;
    const closing = a.close().then(() => (closed = true));
    await turns();
    expect(closed).toBe(false);
    expect(a.outstandingLeases).toBe(1);

    expect(codeOf(() => a.acquireRun('run-2'))).toBe('authority_shutting_down');
    expect(await asyncCodeOf(a.beginImport('run-2'))).toBe('authority_shutting_down');
    expect(codeOf(() => a.rotate())).toBe('authority_shutting_down');
    expect(codeOf(() => a.retire(1))).toBe('authority_shutting_down');

    // Work of the outstanding lease may finish during the drain.
    const rec = record('run-1', { state: 'SUSPENDED' });
    a.writeRecord(lease, rec);
    expect(a.readRecord('run-1')).toStrictEqual(rec);
    expect(keys.some(isZero)).toBe(false);
    await turns();
    expect(closed).toBe(false);

    lease.release();
    await closing;
    expect(closed).toBe(true);
    expect(keys.every(isZero)).toBe(true);
    expect(a.keyBuffersForTest().every(isZero)).toBe(true);
    expect(codeOf(() => a.readRecord('run-1'))).toBe('authority_closed');
    expect(codeOf(() => a.claim({ keyGeneration: 2, runId: 'run-1', transitionGeneration: 1, macInput: new Uint8Array(1) }))).toBe('authority_closed');
    // The record written during the drain is durable for the next process.
    expect(open(dir, false).readRecord('run-1')).toStrictEqual(rec);
  });

  it('during the drain, claim, verifyClaim and readRecord of a run no outstanding lease covers are refused as new work; those of a leased run still answer', async () => {
    const a = open(join(tempBase(), 'authority'));
    const lease = a.acquireRun('run-1')!;
    const imp = await a.beginImport('run-3');
    const input = (runId: string) => ({ keyGeneration: 1, runId, transitionGeneration: 1, macInput: new Uint8Array([1, 2, 3]) });
    const hmac = a.claim(input('run-1'));
    const closing = a.close();

    expect(codeOf(() => a.readRecord('run-2'))).toBe('authority_shutting_down');
    expect(codeOf(() => a.claim(input('run-2')))).toBe('authority_shutting_down');
    expect(codeOf(() => a.verifyClaim(a.scopeId, input('run-2'), hmac))).toBe('authority_shutting_down');
    // Work of the outstanding leases (run-1's run lease, run-3's import lease) may finish.
    expect(a.readRecord('run-1')).toBeUndefined();
    expect(a.readRecord('run-3')).toBeUndefined();
    expect(Buffer.from(a.claim(input('run-1'))).equals(Buffer.from(hmac))).toBe(true);
    expect(a.verifyClaim(a.scopeId, input('run-1'), hmac)).toBe(true);

    lease.release();
    imp.release();
    await closing;
    expect(codeOf(() => a.readRecord('run-1'))).toBe('authority_closed');
  });

  it('drains an outstanding import lease too', async () => {
    const a = open(join(tempBase(), 'authority'));
    const imp = await a.beginImport('run-1');
    let closed = false;
    const closing = a.close().then(() => (closed = true));
    await turns();
    expect(closed).toBe(false);
    expect(await asyncCodeOf(a.beginImport('run-2'))).toBe('authority_shutting_down');
    imp.release();
    await closing;
    expect(a.keyBuffersForTest().every(isZero)).toBe(true);
  });

  it('with run and import leases outstanding, close resolves only after the last one is released', async () => {
    const a = open(join(tempBase(), 'authority'));
    const run = a.acquireRun('run-1')!;
    const imp = await a.beginImport('run-1');
    let closed = false;
    const closing = a.close().then(() => (closed = true));
    run.release();
    await turns();
    expect(closed).toBe(false);
    imp.release();
    await closing;
    expect(closed).toBe(true);
  });

  it('with nothing outstanding, close resolves at once and zeroes the keys; new work is refused afterwards', async () => {
    const a = open(join(tempBase(), 'authority'));
    await a.close();
    expect(a.keyBuffersForTest().every(isZero)).toBe(true);
    expect(codeOf(() => a.acquireRun('run-1'))).toBe('authority_shutting_down');
    expect(codeOf(() => a.readRecord('run-1'))).toBe('authority_closed');
    expect(await asyncCodeOf(a.close())).toBeUndefined(); // idempotent
  });

  it('a second close() during the drain also waits for the drain (it does not report closed early)', async () => {
    const a = open(join(tempBase(), 'authority'));
    const lease = a.acquireRun('run-1')!;
    const first = a.close();
    let secondDone = false;
    const second = a.close().then(() => (secondDone = true));
    await turns();
    const secondResolvedDuringDrain = secondDone;
    const keysZeroedThen = a.keyBuffersForTest().every(isZero);
    lease.release();
    await Promise.all([first, second]);
    expect(secondResolvedDuringDrain, 'the second close() resolved while a lease was outstanding').toBe(false);
    expect(keysZeroedThen).toBe(false);
    expect(a.keyBuffersForTest().every(isZero)).toBe(true);
  });
});
