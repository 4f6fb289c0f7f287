/**
 * The conformance suite of the RunAuthority contract (src/run-authority/contract.ts): every
 * provider — the local directory, the in-memory reference, a later PostgreSQL one — runs these
 * same cases through `describeRunAuthority(name, factory)`, so they answer alike: the claim round
 * trip and its one failure shape, rotate/retire refusals, exclusive run leases, records written
 * only under a live lease and read back exactly, import leases that wait and give up with
 * `import_busy`, root binding outcomes, Goal lifetime supersessions recorded once (replay,
 * conflict, invalid input), and a shutdown that drains, then refuses.
 *
 * The factory returns a fresh, empty authority of its own (two calls: two authorities that share
 * nothing). Cases about one provider's storage — files, modes, descriptors, other processes — stay
 * in that provider's own tests. Root bindings use real temporary directories: a root is a
 * directory, whatever the authority keeps its state in.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { exitCodeOf, type LoopxError } from '../../../src/core/index.js';
import {
  rootDirectoryIdentity,
  type ClaimInput,
  type LifetimeSupersessionRequest,
  type RunAuthority,
  type RunRecord,
  type WorkHead,
} from '../../../src/run-authority/index.js';
import { asyncCodeOf, asyncErrorOf, codeOf, ginst, record, supersession, turns } from '../support.js';

const OLD = ginst('a');
const NEW = ginst('b');

/** A provider under test: the contract plus the two test hooks every provider keeps. */
export type ConformingAuthority = RunAuthority & {
  /** The in-memory key buffers, to observe that retiring and shutdown zero them. */
  keyBuffersForTest(): readonly Buffer[];
  /** Outstanding run and import leases (the drain, observed). */
  readonly outstandingLeases: number;
};

export interface FactoryOptions {
  /** Bound of `beginImport`'s wait for a competing importer (the provider's default otherwise). */
  readonly importWaitMs?: number;
}

export type AuthorityFactory = (options: FactoryOptions) => ConformingAuthority | Promise<ConformingAuthority>;

const input = (overrides: Partial<ClaimInput> = {}): ClaimInput => ({
  keyGeneration: 1,
  runId: 'run-1',
  transitionGeneration: 1,
  macInput: new Uint8Array(Buffer.from('0000000000000004demo', 'utf8')),
  ...overrides,
});

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const isZero = (b: Buffer): boolean => b.every((x) => x === 0);

export function describeRunAuthority(name: string, factory: AuthorityFactory): void {
  describe(`RunAuthority conformance: ${name}`, () => {
    const opened: ConformingAuthority[] = [];
    const dirs: string[] = [];
    const make = async (options: FactoryOptions = {}): Promise<ConformingAuthority> => {
      const a = await factory(options);
      opened.push(a);
      return a;
    };
    /** A fresh private directory to serve as a runtime root. */
    const rootDir = (): string => {
      const d = mkdtempSync(join(tmpdir(), 'loopx-conf-root-'));
      dirs.push(d);
      return d;
    };

    afterEach(async () => {
      // A case that leaves a lease outstanding must not hang the suite on the drain.
      for (const a of opened.splice(0)) await Promise.race([a.close(), turns()]).catch(() => undefined);
    });
    afterAll(() => {
      for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
    });

    describe('key generations', () => {
      it('a new authority has a random 32-byte scope id and one active generation, 1', async () => {
        const a = await make();
        const b = await make();
        expect(a.scopeId.byteLength).toBe(32);
        expect(hex(a.scopeId)).not.toBe(hex(b.scopeId));
        expect(a.currentKeyGeneration()).toBe(1);
        expect(a.keyGenerations()).toEqual([{ generation: 1, retired: false }]);
      });

      it('rotate adds generations 2 and 3 with distinct keys, and the current generation is the highest', async () => {
        const a = await make();
        expect(a.rotate()).toBe(2);
        expect(a.rotate()).toBe(3);
        expect(a.currentKeyGeneration()).toBe(3);
        expect(a.keyGenerations()).toEqual([1, 2, 3].map((generation) => ({ generation, retired: false })));
        expect(new Set(a.keyBuffersForTest().map(hex)).size).toBe(3);
      });

      it('retire(1) makes generation-1 claims a plain false, refuses signing with it, and its number is never handed out again', async () => {
        const a = await make();
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
        expect(a.rotate()).toBe(3);
      });

      it('retiring a generation zeroes its in-memory key at once', async () => {
        const a = await make();
        const [gen1] = a.keyBuffersForTest();
        expect(isZero(gen1!)).toBe(false);
        a.rotate();
        a.retire(1);
        expect(isZero(gen1!)).toBe(true);
        expect(a.keyBuffersForTest()).toHaveLength(1);
      });

      it('retiring the last active generation is refused with authority_last_generation and changes nothing', async () => {
        const a = await make();
        expect(codeOf(() => a.retire(1))).toBe('authority_last_generation');
        a.rotate();
        a.retire(1);
        expect(codeOf(() => a.retire(2))).toBe('authority_last_generation');
        expect(a.currentKeyGeneration()).toBe(2);
        expect(a.verifyClaim(a.scopeId, input({ keyGeneration: 2 }), a.claim(input({ keyGeneration: 2 })))).toBe(true);
      });

      it('retiring an unknown or already retired generation is refused with authority_generation_unknown', async () => {
        const a = await make();
        a.rotate();
        expect(codeOf(() => a.retire(99))).toBe('authority_generation_unknown');
        a.retire(1);
        expect(codeOf(() => a.retire(1))).toBe('authority_generation_unknown');
      });

      it('key material never appears in the public surface of the authority (listing, JSON, inspect)', async () => {
        const a = await make();
        a.rotate();
        const keys = a.keyBuffersForTest().map(hex);
        const surfaces = [
          JSON.stringify(a.keyGenerations()),
          JSON.stringify(a),
          inspect(a, { depth: 5, showHidden: true }),
          String(a.currentKeyGeneration()),
        ];
        for (const s of surfaces) for (const k of keys) expect(s).not.toContain(k);
      });
    });

    describe('claims', () => {
      it('a claim verifies (round trip); the same input gives the same 32-byte HMAC', async () => {
        const a = await make();
        const h1 = a.claim(input());
        const h2 = a.claim(input({ macInput: new Uint8Array(input().macInput) }));
        expect(h1.byteLength).toBe(32);
        expect(hex(h2)).toBe(hex(h1));
        expect(a.verifyClaim(a.scopeId, input(), h1)).toBe(true);
      });

      it('claims made under generation 1 still verify after rotation; generation 3 signs with another key', async () => {
        const a = await make();
        const hmac = a.claim(input());
        a.rotate();
        a.rotate();
        expect(a.verifyClaim(a.scopeId, input(), hmac)).toBe(true);
        const h3 = a.claim(input({ keyGeneration: 3 }));
        expect(hex(h3)).not.toBe(hex(hmac));
        expect(a.verifyClaim(a.scopeId, input({ keyGeneration: 3 }), h3)).toBe(true);
        expect(a.verifyClaim(a.scopeId, input({ keyGeneration: 3 }), hmac)).toBe(false);
      });

      it('another transition generation or run id gives another HMAC for an identical macInput, and neither verifies as the other', async () => {
        const a = await make();
        const g1 = a.claim(input({ transitionGeneration: 1 }));
        const g2 = a.claim(input({ transitionGeneration: 2 }));
        expect(hex(g2)).not.toBe(hex(g1));
        expect(a.verifyClaim(a.scopeId, input({ transitionGeneration: 2 }), g1)).toBe(false);
        expect(a.verifyClaim(a.scopeId, input({ transitionGeneration: 1 }), g2)).toBe(false);
        expect(hex(a.claim(input({ runId: 'run-2' })))).not.toBe(hex(g1));
        expect(a.verifyClaim(a.scopeId, input({ runId: 'run-2' }), g1)).toBe(false);
      });

      it('signing with an unknown generation is refused with authority_generation_unknown', async () => {
        const a = await make();
        expect(codeOf(() => a.claim(input({ keyGeneration: 2 })))).toBe('authority_generation_unknown');
      });

      it('one failure shape: a wrong HMAC, an unknown scope, a retired or unknown generation, a wrong transition generation all answer a plain false, never a throw', async () => {
        const a = await make();
        const other = await make();
        const hmac = a.claim(input());
        const retiredHmac = a.claim(input({ runId: 'run-r' }));
        a.rotate();
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
          ['a non-integer generation', () => a.verifyClaim(a.scopeId, input({ keyGeneration: 1.5 }), hmac)],
          ['the wrong transition generation', () => a.verifyClaim(a.scopeId, input({ transitionGeneration: 2 }), hmac)],
          [
            'a negative transition generation',
            () => a.verifyClaim(a.scopeId, input({ transitionGeneration: -1 }), hmac),
          ],
          [
            'a non-integer transition generation',
            () => a.verifyClaim(a.scopeId, input({ transitionGeneration: 1.5 }), hmac),
          ],
          ['a flipped bit in byte 0', () => a.verifyClaim(a.scopeId, input(), flipped(0, 0))],
          ['a flipped bit in byte 31', () => a.verifyClaim(a.scopeId, input(), flipped(31, 7))],
          ['a truncated (31-byte) HMAC', () => a.verifyClaim(a.scopeId, input(), hmac.slice(0, 31))],
          ['an extended (33-byte) HMAC', () => a.verifyClaim(a.scopeId, input(), new Uint8Array([...hmac, 0]))],
          ['an empty HMAC', () => a.verifyClaim(a.scopeId, input(), new Uint8Array(0))],
          ['a different macInput', () => a.verifyClaim(a.scopeId, input({ macInput: new Uint8Array([9]) }), hmac)],
          [
            'a claim from another authority with the same inputs',
            () => a.verifyClaim(a.scopeId, input(), other.claim(input())),
          ],
        ];
        const answers = (): Array<[string, unknown]> =>
          cases.map(([label, check]) => {
            try {
              return [label, check()];
            } catch (e) {
              return [label, `threw ${String(e)}`];
            }
          });
        expect(answers()).toEqual(cases.map(([label]) => [label, false]));
        expect(a.verifyClaim(a.scopeId, input(), hmac)).toBe(true);
        // A retired generation joins the same shape.
        expect(a.verifyClaim(a.scopeId, input({ runId: 'run-r' }), retiredHmac)).toBe(true);
        a.retire(1);
        expect(a.verifyClaim(a.scopeId, input({ runId: 'run-r' }), retiredHmac)).toBe(false);
      });

      it('a claim made by authority A does not verify in authority B for the same run, generations and input', async () => {
        const a = await make();
        const b = await make();
        const hmac = a.claim(input());
        expect(b.verifyClaim(a.scopeId, input(), hmac)).toBe(false);
        expect(b.verifyClaim(b.scopeId, input(), hmac)).toBe(false);
        expect(hex(b.claim(input()))).not.toBe(hex(hmac));
        expect(a.verifyClaim(a.scopeId, input(), hmac)).toBe(true);
      });

      it('the scope id a caller holds is not the one the authority verifies against: changing it changes nothing', async () => {
        const a = await make();
        const hmac = a.claim(input());
        const scope = new Uint8Array(a.scopeId);
        a.scopeId.fill(0);
        expect(a.verifyClaim(scope, input(), hmac)).toBe(true);
      });
    });

    describe('run leases', () => {
      it('a second acquireRun of a leased run is undefined (two engines sharing the authority contend); other runs are free; after release it is acquirable again', async () => {
        const a = await make();
        const first = await a.acquireRun('run-1');
        expect(first).toMatchObject({ runId: 'run-1', released: false });
        expect(await a.acquireRun('run-1')).toBeUndefined();
        expect(await a.acquireRun('run-1')).toBeUndefined(); // refusing neither steals nor breaks it
        const run2 = await a.acquireRun('run-2');
        expect(run2).toBeDefined();
        await first!.release();
        await first!.release(); // idempotent
        expect(first!.released).toBe(true);
        const again = await a.acquireRun('run-1');
        expect(again).toBeDefined();
        expect(a.outstandingLeases).toBe(2);
        await again!.release();
        await run2!.release();
        expect(a.outstandingLeases).toBe(0);
      });

      it('of two concurrent acquireRun calls for one free run exactly one gets the lease', async () => {
        const a = await make();
        const leases = await Promise.all([a.acquireRun('run-1'), a.acquireRun('run-1')]);
        expect(leases.filter((l) => l !== undefined)).toHaveLength(1);
        expect(a.outstandingLeases).toBe(1);
        for (const l of leases) await l?.release();
        expect(a.outstandingLeases).toBe(0);
      });

      it('an import lease does not hold the run lease: an importer takes both, import lock first', async () => {
        const a = await make();
        const imp = await a.beginImport('run-1');
        const lease = await a.acquireRun('run-1');
        expect(lease).toBeDefined();
        await lease!.release();
        await imp.release();
      });

      it('run ids that are not single safe names are refused with run_id_invalid; reading one is not found', async () => {
        const a = await make();
        for (const bad of ['../../escape', '', 'a.b', 'x'.repeat(129)]) {
          expect(await asyncCodeOf(a.acquireRun(bad)), bad).toBe('run_id_invalid');
          expect(await asyncCodeOf(a.beginImport(bad)), bad).toBe('run_id_invalid');
          expect(await a.readRecord(bad), bad).toBeUndefined();
        }
      });
    });

    describe('records', () => {
      it("writeRecord needs the live lease of that run: released, another run's, another authority's or a forged lease are refused with authority_lease_required and nothing is written", async () => {
        const a = await make();
        const other = await make();
        const released = (await a.acquireRun('run-1'))!;
        await released.release();
        const run2 = (await a.acquireRun('run-2'))!;
        const foreign = (await other.acquireRun('run-1'))!;
        const forged = { runId: 'run-1', released: false, release: async () => undefined };
        for (const lease of [released, run2, foreign, forged]) {
          expect(await asyncCodeOf(a.writeRecord(lease, record('run-1')))).toBe('authority_lease_required');
        }
        expect(await a.readRecord('run-1')).toBeUndefined();
        expect(await other.readRecord('run-1')).toBeUndefined();
        await run2.release();
        await foreign.release();
      });

      it('a record is not found before it is written, round-trips exactly (minimal and full), and the last write wins', async () => {
        const a = await make();
        expect(await a.readRecord('run-1')).toBeUndefined();
        const lease = (await a.acquireRun('run-1'))!;
        const minimal = record('run-1');
        const full = record('run-1', {
          state: 'SUSPENDED',
          transitionGeneration: 4,
          payloadSha256: 'ab'.repeat(32),
          claimHmac: 'cd'.repeat(32),
          keyGeneration: 2,
          claimGeneration: 4,
          lastSequence: 41,
        });
        await a.writeRecord(lease, minimal);
        expect(await a.readRecord('run-1')).toStrictEqual(minimal);
        await a.writeRecord(lease, full);
        expect(await a.readRecord('run-1')).toStrictEqual(full);
        await lease.release();
        // A record outlives its lease, and the next lease may replace it.
        expect(await a.readRecord('run-1')).toStrictEqual(full);
        const next = (await a.acquireRun('run-1'))!;
        const terminal = record('run-1', { state: 'TERMINAL', transitionGeneration: 5 });
        await a.writeRecord(next, terminal);
        expect(await a.readRecord('run-1')).toStrictEqual(terminal);
        await next.release();
      });

      it('a record keeps only the contract fields: absent optional fields stay absent, other properties are not stored', async () => {
        const a = await make();
        const lease = (await a.acquireRun('run-1'))!;
        const sloppy = {
          ...record('run-1', { payloadSha256: undefined, lastSequence: 3 }),
          extra: 'not a record field',
        } as RunRecord;
        await a.writeRecord(lease, sloppy);
        expect(await a.readRecord('run-1')).toStrictEqual(record('run-1', { lastSequence: 3 }));
        await lease.release();
      });

      it('records of one authority are invisible to another', async () => {
        const a = await make();
        const b = await make();
        const lease = (await a.acquireRun('run-1'))!;
        await a.writeRecord(lease, record('run-1'));
        expect(await b.readRecord('run-1')).toBeUndefined();
        await lease.release();
      });
    });

    describe('import leases', () => {
      it('a second importer of a run waits while the first holds its import lease, and gets it once that is released; other runs do not wait', async () => {
        const a = await make();
        const first = await a.beginImport('run-1');
        let second: Awaited<ReturnType<RunAuthority['beginImport']>> | undefined;
        const waiting = a.beginImport('run-1').then((l) => (second = l));
        const other = await a.beginImport('run-2');
        await turns();
        expect(second).toBeUndefined();
        await first.release();
        await waiting;
        expect(second).toMatchObject({ runId: 'run-1' });
        await second!.release();
        await other.release();
        expect(a.outstandingLeases).toBe(0);
      });

      it('the wait is bounded: import_busy (a conflict, one next action) while the other importer still holds the lock, which stays held', async () => {
        const a = await make({ importWaitMs: 50 });
        const first = await a.beginImport('run-1');
        const busy = await a.beginImport('run-1').catch((e: unknown) => e);
        expect(busy).toMatchObject({
          code: 'import_busy',
          kind: 'conflict',
          nextAction: 'run the same import again once the other one has finished',
        });
        expect(a.outstandingLeases).toBe(1);
        await first.release();
        const again = await a.beginImport('run-1');
        await again.release();
      });

      it('a waiting importer is new work: shutdown ends its wait with authority_shutting_down while the drain waits for the held lease', async () => {
        const a = await make();
        const first = await a.beginImport('run-1');
        const waiting = asyncCodeOf(a.beginImport('run-1'));
        await turns();
        let closed = false;
        const closing = a.close().then(() => (closed = true));
        expect(await waiting).toBe('authority_shutting_down');
        expect(closed).toBe(false);
        await first.release();
        await closing;
        expect(closed).toBe(true);
      });
    });

    describe('root bindings', () => {
      it('a root is bound on first use and proved on every later use; another directory carrying its id is root_is_copy', async () => {
        const a = await make();
        const root = rootDir();
        const copy = rootDir();
        expect(await asyncCodeOf(a.bindRoot('root_a', rootDirectoryIdentity(root)))).toBeUndefined();
        expect(await asyncCodeOf(a.bindRoot('root_a', rootDirectoryIdentity(root)))).toBeUndefined();
        expect(await asyncCodeOf(a.bindRoot('root_a', rootDirectoryIdentity(copy)))).toBe('root_is_copy');
        // The copy is a root of its own under another id.
        expect(await asyncCodeOf(a.bindRoot('root_b', rootDirectoryIdentity(copy)))).toBeUndefined();
        expect(await a.rebindRoot('root_a', rootDirectoryIdentity(root))).toBe('unchanged');
      });

      it('rootDirectory names a bound root while its directory is there with its bound identity, and nothing else', async () => {
        const a = await make();
        const root = rootDir();
        expect(await a.rootDirectory('root_a')).toBeUndefined();
        await a.bindRoot('root_a', rootDirectoryIdentity(root));
        expect(await a.rootDirectory('root_a')).toBe(realpathSync(root));
        // Removed: no longer named.
        rmSync(root, { recursive: true });
        expect(await a.rootDirectory('root_a')).toBeUndefined();
      });

      it('a root moved on one file system keeps its identity (the binding follows its path)', async () => {
        const a = await make();
        const root = rootDir();
        await a.bindRoot('root_a', rootDirectoryIdentity(root));
        const moved = `${root}.moved`;
        renameSync(root, moved);
        dirs.push(moved);
        expect(await asyncCodeOf(a.bindRoot('root_a', rootDirectoryIdentity(moved)))).toBeUndefined();
        expect(await a.rebindRoot('root_a', rootDirectoryIdentity(moved))).toBe('unchanged');
      });

      it('an inode number alone is no identity: another device at the bound path is root_binding_moved, elsewhere root_is_copy', async () => {
        const a = await make();
        const root = rootDir();
        const bound = rootDirectoryIdentity(root);
        await a.bindRoot('root_a', bound);
        const otherDevice = { ...bound, dev: `${bound.dev}1` };
        expect(await asyncCodeOf(a.bindRoot('root_a', otherDevice))).toBe('root_binding_moved');
        expect(await asyncCodeOf(a.bindRoot('root_a', { ...otherDevice, path: rootDir() }))).toBe('root_is_copy');
      });

      it('a root id with recorded runs and no binding is root_binding_required for every directory until the operator binds one', async () => {
        const a = await make();
        const original = rootDir();
        const copy = rootDir();
        const lease = (await a.acquireRun('run-1'))!;
        await a.writeRecord(lease, record('run-1', { ownerRoot: 'root_old' }));
        await lease.release();
        for (const d of [copy, original]) {
          const e = await asyncErrorOf(a.bindRoot('root_old', rootDirectoryIdentity(d)));
          expect(e).toMatchObject({ code: 'root_binding_required', kind: 'rejected' });
        }
        expect(await a.rebindRoot('root_old', rootDirectoryIdentity(original))).toBe('bound');
        expect(await asyncCodeOf(a.bindRoot('root_old', rootDirectoryIdentity(original)))).toBeUndefined();
        expect(await asyncCodeOf(a.bindRoot('root_old', rootDirectoryIdentity(copy)))).toBe('root_is_copy');
      });

      it('rebindRoot never lets a copy take the place of a live original (root_binding_original_present); once the original is gone it rebinds', async () => {
        const a = await make();
        const original = rootDir();
        const copy = rootDir();
        await a.bindRoot('root_a', rootDirectoryIdentity(original));
        const refused = await a.rebindRoot('root_a', rootDirectoryIdentity(copy)).catch((e: unknown) => e);
        expect(refused).toMatchObject({ code: 'root_binding_original_present', kind: 'conflict' });
        expect(await asyncCodeOf(a.bindRoot('root_a', rootDirectoryIdentity(copy)))).toBe('root_is_copy');
        rmSync(original, { recursive: true });
        expect(await a.rebindRoot('root_a', rootDirectoryIdentity(copy))).toBe('rebound');
        expect(await asyncCodeOf(a.bindRoot('root_a', rootDirectoryIdentity(copy)))).toBeUndefined();
        expect(await a.rebindRoot('root_b', rootDirectoryIdentity(copy))).toBe('bound');
      });

      it('a malformed root id is refused with root_id_invalid', async () => {
        const a = await make();
        const id = rootDirectoryIdentity(rootDir());
        expect(await asyncCodeOf(a.bindRoot('../x', id))).toBe('root_id_invalid');
        expect(await asyncCodeOf(a.rebindRoot('', id))).toBe('root_id_invalid');
      });
    });

    describe('Goal lifetime supersessions', () => {
      it('an unknown lifetime is not superseded (undefined); a supersession reads back exactly, with the time the authority recorded it, and names no other lifetime', async () => {
        const a = await make();
        expect(await a.lifetimeSupersession(OLD)).toBeUndefined();
        const before = Date.now();
        const { record: stored, replayed } = await a.supersedeLifetime(supersession());
        expect(replayed).toBe(false);
        expect(stored).toStrictEqual({ ...supersession(), source_root: null, recorded_at: stored.recorded_at });
        expect(new Date(stored.recorded_at).toISOString()).toBe(stored.recorded_at);
        expect(Date.parse(stored.recorded_at)).toBeGreaterThanOrEqual(before - 1);
        expect(await a.lifetimeSupersession(OLD)).toStrictEqual(stored);
        // The successor, and any other lifetime, stays not superseded.
        expect(await a.lifetimeSupersession(NEW)).toBeUndefined();
        expect(await a.lifetimeSupersession(ginst('c'))).toBeUndefined();
      });

      it('the same request again is a replay: the stored record (its first recorded_at), replayed: true, nothing changed', async () => {
        const a = await make();
        const first = (await a.supersedeLifetime(supersession())).record;
        vi.useFakeTimers({ toFake: ['Date'] });
        try {
          vi.setSystemTime(Date.parse(first.recorded_at) + 86_400_000);
          const again = await a.supersedeLifetime({ ...supersession() });
          expect(again).toStrictEqual({ record: first, replayed: true });
        } finally {
          vi.useRealTimers();
        }
        expect(await a.lifetimeSupersession(OLD)).toStrictEqual(first);
      });

      it('any other request for a superseded lifetime is goal_lifetime_already_superseded (conflict, exit 4, one next action naming the recorded successor root) and changes nothing', async () => {
        const a = await make();
        const stored = (await a.supersedeLifetime(supersession())).record;
        const others: Array<[string, Partial<LifetimeSupersessionRequest>]> = [
          ['another successor', { successor_instance_id: ginst('c') }],
          ['another fence', { fence: 8 }],
          ['another recovery', { recovery_id: 'f'.repeat(64) }],
          ['another successor root', { successor_root: 'root_other' }],
          ['another lineage', { goal_lineage: 'lineage:other' }],
          ['another alias', { goal_id: 'goal-b' }],
        ];
        for (const [label, change] of others) {
          const refused = await asyncErrorOf(a.supersedeLifetime(supersession(change)));
          expect(refused, label).toMatchObject({ code: 'goal_lifetime_already_superseded', kind: 'conflict' });
          expect(exitCodeOf(refused), label).toBe(4);
          expect((refused as LoopxError).nextAction, label).toContain(`root id ${stored.successor_root}`);
          expect((refused as LoopxError).details, label).toMatchObject({
            goal_instance_id: OLD,
            successor_instance_id: NEW,
            successor_root: 'root_new',
          });
          expect(await a.lifetimeSupersession(OLD), label).toStrictEqual(stored);
        }
        expect(await a.lifetimeSupersession(ginst('c'))).toBeUndefined();
        // Still the first request's: a replay, not a conflict.
        expect(await a.supersedeLifetime(supersession())).toStrictEqual({ record: stored, replayed: true });
      });

      it('a successor can itself be superseded later (a recovery of the recovered Goal): each lifetime has its own record', async () => {
        const a = await make();
        const first = (await a.supersedeLifetime(supersession())).record;
        const second = (
          await a.supersedeLifetime(
            supersession({
              goal_instance_id: NEW,
              successor_instance_id: ginst('c'),
              fence: 9,
              recovery_id: 'e'.repeat(64),
              successor_root: 'root_third',
            }),
          )
        ).record;
        expect(await a.lifetimeSupersession(OLD)).toStrictEqual(first);
        expect(await a.lifetimeSupersession(NEW)).toStrictEqual(second);
        expect(second.successor_instance_id).toBe(ginst('c'));
      });

      it('invalid input is lifetime_supersession_invalid (rejected, exit 3) and records nothing', async () => {
        const a = await make();
        const { fence: _fence, ...withoutFence } = supersession();
        const cases: Array<[string, unknown]> = [
          ['not an object', null],
          ['an array', [supersession()]],
          ['a missing field', withoutFence],
          ['an unknown field', { ...supersession(), extra: 1 }],
          ['recorded_at from the caller', { ...supersession(), recorded_at: new Date().toISOString() }],
          ['an uppercase instance id', supersession({ goal_instance_id: OLD.toUpperCase() })],
          ['a short instance id', supersession({ goal_instance_id: OLD.slice(0, -1) })],
          ['another prefix', supersession({ goal_instance_id: `ginst-${'a'.repeat(32)}` })],
          ['a successor that is no lifetime id', supersession({ successor_instance_id: 'ginst_x' })],
          ['the lifetime as its own successor', supersession({ successor_instance_id: OLD })],
          ['a goal id with ..', supersession({ goal_id: 'goal..a' })],
          ['an uppercase goal id', supersession({ goal_id: 'Goal-A' })],
          ['an empty lineage', supersession({ goal_lineage: '' })],
          ['a lineage with a slash', supersession({ goal_lineage: 'a/b' })],
          ['a 129-character lineage', supersession({ goal_lineage: 'l'.repeat(129) })],
          ['fence 0', supersession({ fence: 0 })],
          ['a negative fence', supersession({ fence: -1 })],
          ['a fractional fence', supersession({ fence: 1.5 })],
          ['an unsafe fence', supersession({ fence: 2 ** 53 })],
          ['a string fence', { ...supersession(), fence: '7' }],
          ['a 63-hex recovery id', supersession({ recovery_id: 'd'.repeat(63) })],
          ['an uppercase recovery id', supersession({ recovery_id: 'D'.repeat(64) })],
          ['a successor root that is a path', supersession({ successor_root: '../root' })],
          ['an empty successor root', supersession({ successor_root: '' })],
        ];
        for (const [label, request] of cases) {
          const refused = await asyncErrorOf(a.supersedeLifetime(request as LifetimeSupersessionRequest));
          expect(refused, label).toMatchObject({ code: 'lifetime_supersession_invalid', kind: 'rejected' });
          expect(exitCodeOf(refused), label).toBe(3);
        }
        expect(await a.lifetimeSupersession(OLD)).toBeUndefined();
        expect(await a.lifetimeSupersession(NEW)).toBeUndefined();
        for (const id of ['', 'ginst_x', OLD.toUpperCase(), '../etc/passwd'])
          expect(await asyncCodeOf(a.lifetimeSupersession(id)), id).toBe('lifetime_supersession_invalid');
        // The valid request is still the first one.
        expect((await a.supersedeLifetime(supersession())).replayed).toBe(false);
      });

      it('a returned record is a copy: changing it changes nothing stored', async () => {
        const a = await make();
        const { record: stored } = await a.supersedeLifetime(supersession());
        (stored as { successor_root: string }).successor_root = 'root_forged';
        ((await a.lifetimeSupersession(OLD)) as { fence: number }).fence = 99;
        expect(await a.lifetimeSupersession(OLD)).toMatchObject({ successor_root: 'root_new', fence: 7 });
        expect((await a.supersedeLifetime(supersession())).replayed).toBe(true);
      });

      it('supersessions of one authority are invisible to another', async () => {
        const a = await make();
        const b = await make();
        await a.supersedeLifetime(supersession());
        expect(await b.lifetimeSupersession(OLD)).toBeUndefined();
        expect((await b.supersedeLifetime(supersession({ successor_instance_id: ginst('c') }))).replayed).toBe(false);
      });
    });

    describe('revision, root bindings and work marks', () => {
      const head = (over: Partial<WorkHead> = {}): WorkHead => ({
        goal_id: 'goal-a',
        goal_instance_id: ginst('a'),
        store_identity: `sqlite:${'5'.repeat(32)}`,
        cursor: 3,
        provider_revision: `${'9'.repeat(32)}:3`,
        ...over,
      });

      it('the revision counts the supersessions the authority recorded', async () => {
        const a = await make();
        expect(await a.revision()).toBe(0);
        await a.supersedeLifetime(supersession());
        await a.supersedeLifetime(supersession());
        expect(await a.revision()).toBe(1);
        await a.supersedeLifetime(supersession({ goal_instance_id: ginst('c'), successor_instance_id: ginst('d') }));
        expect(await a.revision()).toBe(2);
      });

      it('rootBound answers whether the authority holds a binding of the root id', async () => {
        const a = await make();
        expect(await a.rootBound('root_conf')).toBe(false);
        await a.bindRoot('root_conf', rootDirectoryIdentity(rootDir()));
        expect(await a.rootBound('root_conf')).toBe(true);
      });

      it('a work store is bound to the first lifetime that opens it; another lifetime is goal_identity_mismatch', async () => {
        const a = await make();
        expect(await a.observeWorkHead(head())).toMatchObject({ goal_instance_id: ginst('a'), cursor: 3 });
        expect(await asyncCodeOf(a.observeWorkHead(head({ goal_instance_id: ginst('e') })))).toBe(
          'goal_identity_mismatch',
        );
      });

      it('a mark moves only forward: ahead advances it, behind (or the same cursor with another revision) is root_rolled_back and changes nothing', async () => {
        const a = await make();
        await a.observeWorkHead(head());
        expect(await a.observeWorkHead(head({ cursor: 5, provider_revision: `${'9'.repeat(32)}:5` }))).toMatchObject({
          cursor: 5,
        });
        expect(await asyncCodeOf(a.observeWorkHead(head()))).toBe('root_rolled_back');
        expect(
          await asyncCodeOf(a.observeWorkHead(head({ cursor: 5, provider_revision: `${'8'.repeat(32)}:5` }))),
        ).toBe('root_rolled_back');
        expect(await a.observeWorkHead(head({ cursor: 5, provider_revision: `${'9'.repeat(32)}:5` }))).toMatchObject({
          cursor: 5,
        });
      });

      it('a confirmed rewind (a database rotation) sets the mark behind it; another lifetime is still refused', async () => {
        const a = await make();
        await a.observeWorkHead(head({ cursor: 9, provider_revision: `${'9'.repeat(32)}:9` }));
        expect(await asyncCodeOf(a.observeWorkHead(head()))).toBe('root_rolled_back');
        expect(await a.rewindWorkMark(head())).toMatchObject({ cursor: 3 });
        expect(await a.observeWorkHead(head())).toMatchObject({ cursor: 3 });
        expect(await asyncCodeOf(a.rewindWorkMark(head({ goal_instance_id: ginst('e') })))).toBe(
          'goal_identity_mismatch',
        );
      });

      it('work marks of one authority are invisible to another', async () => {
        const a = await make();
        const b = await make();
        await a.observeWorkHead(head({ cursor: 9, provider_revision: 'r:9' }));
        expect(await b.observeWorkHead(head({ goal_instance_id: ginst('e') }))).toMatchObject({
          goal_instance_id: ginst('e'),
        });
      });
    });

    describe('the recovery activation switch', () => {
      it('is on until an operator turns it off; off carries the reason and when; on again clears the reason', async () => {
        const a = await make();
        expect(await a.activation()).toEqual({ disabled: false, reason: null, changed_at: null });
        const off = await a.setActivation({ disabled: true, reason: 'release 0.9 under review' });
        expect(off).toMatchObject({ disabled: true, reason: 'release 0.9 under review' });
        expect(Number.isNaN(Date.parse(off.changed_at!))).toBe(false);
        expect(await a.activation()).toEqual(off);
        const on = await a.setActivation({ disabled: false, reason: 'ignored when on' });
        expect(on).toMatchObject({ disabled: false, reason: null });
        expect(await a.activation()).toEqual(on);
      });

      it('refuses a reason that is not one line of 1–500 characters, and changes nothing', async () => {
        const a = await make();
        for (const reason of ['', 'two\nlines', 'x'.repeat(501)])
          await expect(a.setActivation({ disabled: true, reason })).rejects.toMatchObject({
            code: 'recover_activation_reason_invalid',
          });
        expect((await a.activation()).disabled).toBe(false);
      });
    });

    describe('close()', () => {
      it('drains: pending with an outstanding run lease, refuses new work, lets the lease write, resolves on release, then zeroes keys and refuses everything', async () => {
        const a = await make();
        a.rotate();
        const keys = a.keyBuffersForTest();
        expect(keys).toHaveLength(2);
        expect(keys.some(isZero)).toBe(false);
        const lease = (await a.acquireRun('run-1'))!;
        const root = rootDirectoryIdentity(rootDir());

        let closed = false;
        const closing = a.close().then(() => (closed = true));
        await turns();
        expect(closed).toBe(false);
        expect(a.outstandingLeases).toBe(1);

        expect(await asyncCodeOf(a.acquireRun('run-2'))).toBe('authority_shutting_down');
        expect(await asyncCodeOf(a.beginImport('run-2'))).toBe('authority_shutting_down');
        expect(codeOf(() => a.rotate())).toBe('authority_shutting_down');
        expect(codeOf(() => a.retire(1))).toBe('authority_shutting_down');
        expect(await asyncCodeOf(a.bindRoot('root_a', root))).toBe('authority_shutting_down');
        expect(await asyncCodeOf(a.rebindRoot('root_a', root))).toBe('authority_shutting_down');
        expect(await asyncCodeOf(a.supersedeLifetime(supersession()))).toBe('authority_shutting_down');
        expect(await asyncCodeOf(a.lifetimeSupersession(supersession().goal_instance_id))).toBe(
          'authority_shutting_down',
        );

        const rec = record('run-1', { state: 'SUSPENDED' });
        await a.writeRecord(lease, rec);
        expect(await a.readRecord('run-1')).toStrictEqual(rec);
        expect(keys.some(isZero)).toBe(false);
        await turns();
        expect(closed).toBe(false);

        await lease.release();
        await closing;
        expect(closed).toBe(true);
        expect(keys.every(isZero)).toBe(true);
        expect(a.keyBuffersForTest().every(isZero)).toBe(true);
        expect(await asyncCodeOf(a.readRecord('run-1'))).toBe('authority_closed');
        expect(codeOf(() => a.claim(input({ keyGeneration: 2 })))).toBe('authority_closed');
        expect(codeOf(() => a.verifyClaim(a.scopeId, input(), new Uint8Array(32)))).toBe('authority_closed');
        expect(await asyncCodeOf(a.acquireRun('run-1'))).toBe('authority_shutting_down');
        expect(await asyncCodeOf(a.writeRecord(lease, rec))).toBe('authority_closed');
        expect(await asyncCodeOf(a.lifetimeSupersession(supersession().goal_instance_id))).toBe('authority_closed');
        expect(await asyncCodeOf(a.supersedeLifetime(supersession()))).toBe('authority_shutting_down');
      });

      it('during the drain, claim, verifyClaim and readRecord of a run no outstanding lease covers are refused as new work; those of a leased run still answer', async () => {
        const a = await make();
        const lease = (await a.acquireRun('run-1'))!;
        const imp = await a.beginImport('run-3');
        const hmac = a.claim(input({ runId: 'run-1' }));
        const closing = a.close();

        expect(await asyncCodeOf(a.readRecord('run-2'))).toBe('authority_shutting_down');
        expect(codeOf(() => a.claim(input({ runId: 'run-2' })))).toBe('authority_shutting_down');
        expect(codeOf(() => a.verifyClaim(a.scopeId, input({ runId: 'run-2' }), hmac))).toBe('authority_shutting_down');
        expect(await a.readRecord('run-1')).toBeUndefined();
        expect(await a.readRecord('run-3')).toBeUndefined();
        expect(hex(a.claim(input({ runId: 'run-1' })))).toBe(hex(hmac));
        expect(a.verifyClaim(a.scopeId, input({ runId: 'run-1' }), hmac)).toBe(true);
        expect(a.verifyClaim(a.scopeId, input({ runId: 'run-3' }), hmac)).toBe(false);

        await lease.release();
        await imp.release();
        await closing;
        expect(await asyncCodeOf(a.readRecord('run-1'))).toBe('authority_closed');
      });

      it('with run and import leases outstanding, close resolves only after the last one is released', async () => {
        const a = await make();
        const run = (await a.acquireRun('run-1'))!;
        const imp = await a.beginImport('run-1');
        let closed = false;
        const closing = a.close().then(() => (closed = true));
        await run.release();
        await turns();
        expect(closed).toBe(false);
        expect(a.keyBuffersForTest().some(isZero)).toBe(false);
        await imp.release();
        await closing;
        expect(closed).toBe(true);
        expect(a.keyBuffersForTest().every(isZero)).toBe(true);
      });

      it('with nothing outstanding, close resolves at once and zeroes the keys; it is idempotent, and new work is refused afterwards', async () => {
        const a = await make();
        await a.close();
        expect(a.keyBuffersForTest().every(isZero)).toBe(true);
        expect(await asyncCodeOf(a.acquireRun('run-1'))).toBe('authority_shutting_down');
        expect(await asyncCodeOf(a.beginImport('run-1'))).toBe('authority_shutting_down');
        expect(await asyncCodeOf(a.readRecord('run-1'))).toBe('authority_closed');
        expect(await asyncCodeOf(a.close())).toBeUndefined();
      });

      it('a second close() during the drain also waits for the drain (it does not report closed early)', async () => {
        const a = await make();
        const lease = (await a.acquireRun('run-1'))!;
        const first = a.close();
        let secondDone = false;
        const second = a.close().then(() => (secondDone = true));
        await turns();
        const secondResolvedDuringDrain = secondDone;
        const keysZeroedThen = a.keyBuffersForTest().every(isZero);
        await lease.release();
        await Promise.all([first, second]);
        expect(secondResolvedDuringDrain, 'the second close() resolved while a lease was outstanding').toBe(false);
        expect(keysZeroedThen).toBe(false);
        expect(a.keyBuffersForTest().every(isZero)).toBe(true);
      });
    });
  });
}
