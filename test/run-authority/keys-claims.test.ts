/**
 * Key generations and claims (RFC 0007): generations are positive and increasing, older ones stay
 * verifiable until retired; claims are HMACs under a per-run subkey bound to scope, run id and
 * transition generation; verification answers a plain `false` — never an error — for an unknown
 * scope, an unavailable generation or a wrong HMAC.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { inspect } from 'node:util';
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

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

describe('key generations', () => {
  it('rotate adds generations 2 and 3, and the current generation is the highest', () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    expect(a.rotate()).toBe(2);
    expect(a.rotate()).toBe(3);
    expect(a.currentKeyGeneration()).toBe(3);
    expect(a.keyGenerations()).toEqual([1, 2, 3].map((generation) => ({ generation, retired: false })));
    expect(readdirSync(join(dir, 'keys')).sort()).toEqual(['1.key', '2.key', '3.key']);
    const keys = ['1', '2', '3'].map((g) => readFileSync(join(dir, 'keys', `${g}.key`), 'utf8').trim());
    expect(new Set(keys).size).toBe(3);
    for (const g of ['2', '3']) expect(modeOf(join(dir, 'keys', `${g}.key`))).toBe(0o600);
  });

  it('claims made under generation 1 still verify after rotation', () => {
    const a = open(join(tempBase(), 'authority'));
    const hmac = a.claim(input());
    a.rotate();
    a.rotate();
    expect(a.verifyClaim(a.scopeId, input(), hmac)).toBe(true);
    const h3 = a.claim(input({ keyGeneration: 3 }));
    expect(hex(h3)).not.toBe(hex(hmac)); // a different key
    expect(a.verifyClaim(a.scopeId, input({ keyGeneration: 3 }), h3)).toBe(true);
  });

  it('retire(1) makes generation-1 claims fail verification with a plain false, removes the key file, and survives re-open', async () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    const hmac = a.claim(input());
    a.rotate();
    a.retire(1);
    expect(a.verifyClaim(a.scopeId, input(), hmac)).toBe(false);
    expect(codeOf(() => a.claim(input()))).toBe('authority_generation_unknown');
    expect(a.keyGenerations()).toEqual([
      { generation: 1, retired: true },
      { generation: 2, retired: false },
    ]);
    expect(a.currentKeyGeneration()).toBe(2);
    expect(existsSync(join(dir, 'keys', '1.key'))).toBe(false);
    expect(existsSync(join(dir, 'keys', '1.retired'))).toBe(true);
    await a.close();
    const b = open(dir, false);
    expect(b.keyGenerations()).toEqual([
      { generation: 1, retired: true },
      { generation: 2, retired: false },
    ]);
    expect(b.verifyClaim(b.scopeId, input(), hmac)).toBe(false);
    // A retired generation number is never handed out again.
    expect(b.rotate()).toBe(3);
  });

  it('retiring a generation zeroes its in-memory key at once', () => {
    const a = open(join(tempBase(), 'authority'));
    const [gen1] = a.keyBuffersForTest();
    expect(gen1!.some((b) => b !== 0)).toBe(true);
    a.rotate();
    a.retire(1);
    expect(gen1!.every((b) => b === 0)).toBe(true);
    expect(a.keyBuffersForTest()).toHaveLength(1);
  });

  it('retiring the last active generation is refused with authority_last_generation and changes nothing', () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    expect(codeOf(() => a.retire(1))).toBe('authority_last_generation');
    a.rotate();
    a.retire(1);
    expect(codeOf(() => a.retire(2))).toBe('authority_last_generation');
    expect(a.currentKeyGeneration()).toBe(2);
    expect(existsSync(join(dir, 'keys', '2.key'))).toBe(true);
    expect(existsSync(join(dir, 'keys', '2.retired'))).toBe(false);
  });

  it('retiring an unknown or already retired generation is refused with authority_generation_unknown', () => {
    const a = open(join(tempBase(), 'authority'));
    a.rotate();
    expect(codeOf(() => a.retire(99))).toBe('authority_generation_unknown');
    a.retire(1);
    expect(codeOf(() => a.retire(1))).toBe('authority_generation_unknown');
  });

  it('key material never appears in the public surface of the authority (listing, JSON, inspect)', () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    a.rotate();
    const keyHexes = readdirSync(join(dir, 'keys')).map((n) => readFileSync(join(dir, 'keys', n), 'utf8').trim());
    const surfaces = [JSON.stringify(a.keyGenerations()), JSON.stringify(a), inspect(a, { depth: 5, showHidden: true }), String(a.currentKeyGeneration())];
    for (const s of surfaces) for (const k of keyHexes) expect(s).not.toContain(k);
  });
});

describe('claims', () => {
  it('the same input gives the same HMAC (32 bytes)', () => {
    const a = open(join(tempBase(), 'authority'));
    const h1 = a.claim(input());
    const h2 = a.claim(input({ macInput: new Uint8Array(input().macInput) }));
    expect(h1.byteLength).toBe(32);
    expect(hex(h2)).toBe(hex(h1));
  });

  it('a different transition generation gives a different HMAC for an identical macInput, and neither verifies as the other', () => {
    const a = open(join(tempBase(), 'authority'));
    const g1 = a.claim(input({ transitionGeneration: 1 }));
    const g2 = a.claim(input({ transitionGeneration: 2 }));
    expect(hex(g2)).not.toBe(hex(g1));
    expect(a.verifyClaim(a.scopeId, input({ transitionGeneration: 2 }), g1)).toBe(false);
    expect(a.verifyClaim(a.scopeId, input({ transitionGeneration: 1 }), g2)).toBe(false);
  });

  it('a different run id gives a different HMAC for an identical macInput', () => {
    const a = open(join(tempBase(), 'authority'));
    expect(hex(a.claim(input({ runId: 'run-2' })))).not.toBe(hex(a.claim(input())));
    expect(a.verifyClaim(a.scopeId, input({ runId: 'run-2' }), a.claim(input()))).toBe(false);
  });

  it('verifyClaim is true for the correct claim and a plain false (never a throw) for a wrong scope, an unknown generation, a flipped bit or a wrong length', () => {
    const a = open(join(tempBase(), 'authority'));
    const other = open(join(tempBase(), 'authority'));
    const hmac = a.claim(input());
    expect(a.verifyClaim(a.scopeId, input(), hmac)).toBe(true);

    const flipped = (i: number, bit: number): Uint8Array => {
      const c = new Uint8Array(hmac);
      c[i] = c[i]! ^ (1 << bit);
      return c;
    };
    const cases: Array<[string, () => boolean]> = [
      ["another authority's scope id", () => a.verifyClaim(other.scopeId, input(), hmac)],
      ['a random scope id', () => a.verifyClaim(new Uint8Array(randomBytes(32)), input(), hmac)],
      ['a 31-byte scope id', () => a.verifyClaim(a.scopeId.slice(0, 31), input(), hmac)],
      ['unknown generation 99', () => a.verifyClaim(a.scopeId, input({ keyGeneration: 99 }), hmac)],
      ['generation 0', () => a.verifyClaim(a.scopeId, input({ keyGeneration: 0 }), hmac)],
      ['a flipped bit in byte 0', () => a.verifyClaim(a.scopeId, input(), flipped(0, 0))],
      ['a flipped bit in byte 31', () => a.verifyClaim(a.scopeId, input(), flipped(31, 7))],
      ['a truncated (31-byte) HMAC', () => a.verifyClaim(a.scopeId, input(), hmac.slice(0, 31))],
      ['an extended (33-byte) HMAC', () => a.verifyClaim(a.scopeId, input(), new Uint8Array([...hmac, 0]))],
      ['an empty HMAC', () => a.verifyClaim(a.scopeId, input(), new Uint8Array(0))],
      ['a different macInput', () => a.verifyClaim(a.scopeId, input({ macInput: new Uint8Array([9]) }), hmac)],
    ];
    for (const [label, check] of cases) {
      let answer: unknown;
      expect(() => (answer = check()), label).not.toThrow();
      expect(answer, label).toBe(false);
    }
    // The correct claim still verifies after all of that.
    expect(a.verifyClaim(a.scopeId, input(), hmac)).toBe(true);
  });

  it('a claim made in authority dir A does not verify in authority dir B for the same run, generations and input', () => {
    const a = open(join(tempBase(), 'authority'));
    const b = open(join(tempBase(), 'authority'));
    const hmac = a.claim(input());
    expect(b.verifyClaim(a.scopeId, input(), hmac)).toBe(false);
    expect(b.verifyClaim(b.scopeId, input(), hmac)).toBe(false);
    expect(hex(b.claim(input()))).not.toBe(hex(hmac));
    expect(a.verifyClaim(a.scopeId, input(), hmac)).toBe(true);
  });
});
