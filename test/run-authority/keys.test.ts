/**
 * Key generations of the local authority on disk: one 0600 key file per generation, a tombstone
 * per retired one, both read again by every instance on the directory. The contract cases — the
 * claim round trip and its one failure shape, rotate/retire refusals — are in the conformance
 * suite (authority-port.test.ts), run against this provider and the in-memory one.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ClaimInput } from '../../src/run-authority/index.js';
import { cleanup, codeOf, modeOf, open, tempBase } from './support.js';

afterAll(cleanup);

const input = (overrides: Partial<ClaimInput> = {}): ClaimInput => ({
  keyGeneration: 1,
  runId: 'run-1',
  transitionGeneration: 1,
  macInput: new Uint8Array(Buffer.from('0000000000000004demo', 'utf8')),
  ...overrides,
});

describe('key generations on disk', () => {
  it('rotate writes one 0600 key file per generation, each holding its own key', () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    a.rotate();
    a.rotate();
    expect(readdirSync(join(dir, 'keys')).sort()).toEqual(['1.key', '2.key', '3.key']);
    const keys = ['1', '2', '3'].map((g) => readFileSync(join(dir, 'keys', `${g}.key`), 'utf8').trim());
    expect(new Set(keys).size).toBe(3);
    expect(a.keyBuffersForTest().map((b) => b.toString('hex'))).toEqual(keys);
    for (const g of ['1', '2', '3']) expect(modeOf(join(dir, 'keys', `${g}.key`))).toBe(0o600);
  });

  it('retire removes the key file and leaves a tombstone; after re-open the generation is still retired and its number is never reused', async () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    const hmac = a.claim(input());
    a.rotate();
    a.retire(1);
    expect(existsSync(join(dir, 'keys', '1.key'))).toBe(false);
    expect(existsSync(join(dir, 'keys', '1.retired'))).toBe(true);
    await a.close();
    const b = open(dir, false);
    expect(b.keyGenerations()).toEqual([
      { generation: 1, retired: true },
      { generation: 2, retired: false },
    ]);
    expect(b.verifyClaim(b.scopeId, input(), hmac)).toBe(false);
    expect(b.rotate()).toBe(3);
  });

  it('a refused retire of the last generation leaves the key file and writes no tombstone', () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    a.rotate();
    a.retire(1);
    expect(codeOf(() => a.retire(2))).toBe('authority_last_generation');
    expect(existsSync(join(dir, 'keys', '2.key'))).toBe(true);
    expect(existsSync(join(dir, 'keys', '2.retired'))).toBe(false);
  });

  it('a generation another instance on the directory rotated or retired counts here at once, for signing and for verifying', () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    const b = open(dir, false);
    const gen1 = a.claim(input());
    expect(b.rotate()).toBe(2);
    expect(a.verifyClaim(a.scopeId, input({ keyGeneration: 2 }), b.claim(input({ keyGeneration: 2 })))).toBe(true);
    b.retire(1);
    expect(a.verifyClaim(a.scopeId, input(), gen1)).toBe(false);
    expect(codeOf(() => a.claim(input()))).toBe('authority_generation_unknown');
    expect(a.keyBuffersForTest()).toHaveLength(1);
  });
});
