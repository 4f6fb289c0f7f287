/**
 * Crash injection across the transfer protocols of RFC 0007, with real processes: a CLI child
 * SIGKILLs itself at a named fault point around a durable authority write (export, resume, import,
 * tombstone) or right after an import's kernel commit; further CLI children then check what is
 * left. After every crash: the authority record still exists and names exactly one owner root, the
 * other roots' commands on the run are refused with run_moved, a consumed snapshot stays consumed,
 * and a state before the consume point rolls back to an importable snapshot.
 *
 * All children of this file share one run authority (test/support/cli.ts); each test has its own
 * runtime roots and its own run, so the tests run concurrently.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { FAULT_IMPORT_AFTER_KERNEL_COMMIT } from '../../src/engine/index.js';
import { loopxAsync, type CliResult, rel } from '../support/cli.js';

const AGENT = 'examples/agents/researcher.json';
const TIMEOUT = 120_000; // generous: every step is a real child process, and CI machines are shared
const LONG = 2 * TIMEOUT; // for the tests that walk a whole interrupted import to its completion

// ── helpers ──────────────────────────────────────────────────────────────────────────────

/** A private scratch directory with three runtime roots (a, b, c) and an empty snapshot directory. */
function space() {
  const base = mkdtempSync(join(tmpdir(), 'loopx-transfer-crash-'));
  chmodSync(base, 0o700);
  const snaps = join(base, 'snaps');
  mkdirSync(snaps, { mode: 0o700 });
  return {
    a: join(base, 'a'),
    b: join(base, 'b'),
    c: join(base, 'c'),
    snaps,
    snap: (name = 'run.snapshot') => join(snaps, name),
  };
}

const describeCli = (args: readonly string[], r: CliResult) =>
  `loopx ${args.join(' ')} → status ${r.status} signal ${r.signal}\n${r.stderr}${r.stdout}`;

/** Run a command that must succeed; its JSON document. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function ok(args: readonly string[]): Promise<any> {
  const r = await loopxAsync([...args, '--json']);
  if (r.status !== 0) throw new Error(`expected success: ${describeCli(args, r)}`);
  return r.json();
}

/** Run a command that must be refused with `exit` and `code`; its JSON error document. */
async function refused(
  args: readonly string[],
  exit: number,
  code: string,
): Promise<{ code: string; message: string; details?: Record<string, unknown> }> {
  const r = await loopxAsync([...args, '--json']);
  expect(r.signal, describeCli(args, r)).toBeNull();
  let doc: { error?: { code: string; message: string } } = {};
  try {
    doc = r.json();
  } catch {
    /* reported below */
  }
  expect({ status: r.status, code: doc.error?.code }, describeCli(args, r)).toEqual({ status: exit, code });
  return doc.error!;
}

/** Run a command with the fault point armed: the child must die by SIGKILL at it, having printed nothing. */
async function killedAt(point: string, args: readonly string[]): Promise<void> {
  const r = await loopxAsync([...args, '--json'], { LOOPX_TEST_FAULT: point });
  expect(r.signal, `expected a SIGKILL at ${point}: ${describeCli(args, r)}`).toBe('SIGKILL');
  expect(r.stdout).toBe('');
}

interface AuthorityRun {
  run_id: string;
  state: 'ACTIVE' | 'SUSPENDED' | 'IMPORTING' | 'TERMINAL';
  transition_generation: number;
  owner_root: string;
  payload_sha256: string | null;
  last_sequence: number | null;
  next_action: string | null;
}

/** The run's authority record; a lost record fails here. */
async function record(runId: string): Promise<AuthorityRun> {
  const doc = await ok(['authority', 'show', '--run', runId]);
  expect(doc.run, `the authority lost the record of ${runId}`).not.toBeNull();
  return doc.run as AuthorityRun;
}

/** The random identity a runtime root records itself under (the owner name in authority records). */
function rootIdOf(root: string): string | undefined {
  if (!existsSync(join(root, 'engine.db'))) return undefined;
  const db = new Database(join(root, 'engine.db'), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare("SELECT value FROM meta WHERE key = 'root_id'").get() as { value: string } | undefined)?.value;
  } finally {
    db.close();
  }
}

/** Agent definitions stored in a root (none when it has no engine.db). */
function definitionsIn(root: string): number {
  if (!existsSync(join(root, 'engine.db'))) return 0;
  const db = new Database(join(root, 'engine.db'), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM definitions').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

async function runsIn(root: string): Promise<Array<{ run_id: string; status: string; last_sequence: number }>> {
  return (await ok(['run', 'list', '--root', root])).runs;
}

async function eventsAfter(
  runId: string,
  root: string,
  after: number,
): Promise<Array<{ sequence: number; type: string; data: Record<string, unknown> }>> {
  const r = await loopxAsync(['run', 'events', runId, '--after', String(after), '--root', root, '--json']);
  if (r.status !== 0) throw new Error(`expected events: ${describeCli(['run', 'events', runId], r)}`);
  return r.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** A run of the researcher in `root`, suspended at the boundary after its first turn. */
async function suspendedRun(root: string): Promise<{ run_id: string; last_sequence: number }> {
  const s = await ok([
    'run',
    'start',
    '--agent',
    AGENT,
    '--input',
    'Add 2 and 40',
    '--suspend-after-turns',
    '1',
    '--root',
    root,
  ]);
  expect(s).toMatchObject({ status: 'suspended', completed_turns: 1 });
  return s;
}

const exportRun = (runId: string, root: string, out: string) =>
  ok(['run', 'export', runId, '--out', out, '--root', root]);
const importInto = (file: string, root: string) => ['run', 'import', file, '--root', root, '--agent', AGENT];
const resumeIn = (runId: string, root: string) => ['run', 'resume', runId, '--root', root];

/** At most one owner: the record names `owner`, and `formerOwner`'s copy is refused with run_moved. */
async function expectSoleOwner(runId: string, owner: string, formerOwner: string): Promise<AuthorityRun> {
  const rec = await record(runId);
  expect(rec.owner_root).toBe(rootIdOf(owner));
  expect(rec.owner_root).not.toBe(rootIdOf(formerOwner));
  await refused(resumeIn(runId, formerOwner), 4, 'run_moved');
  return rec;
}

/** The run continues in `root` at last_sequence+1 with Resumed and its next turn, and no second RunStarted. */
async function expectContinues(runId: string, root: string, lastSequence: number): Promise<void> {
  const resumed = await ok(resumeIn(runId, root));
  expect(resumed).toMatchObject({
    run_id: runId,
    status: 'active',
    completed_turns: 2,
    waiting_for: { kind: 'interaction', interaction_id: 'confirm-1' },
  });
  const tail = await eventsAfter(runId, root, lastSequence);
  expect(tail[0]).toMatchObject({ sequence: lastSequence + 1, type: 'Resumed' });
  expect(tail[1]).toMatchObject({ sequence: lastSequence + 2, type: 'TurnStarted', data: { turn: 2 } });
  expect(tail.map((e) => e.type)).not.toContain('RunStarted');
}

beforeAll(async () => {
  // Create the shared authority once, before concurrent children would race to create it.
  const r = await loopxAsync(['authority', 'init', '--json']);
  expect(r.status, r.stderr).toBe(0);
});

describe.concurrent('crash injection around the durable steps of export, resume, import and tombstone', () => {
  // ── export ───────────────────────────────────────────────────────────────────────────────

  describe('killed during export', () => {
    it(
      'authority.export.before-rename: the record stays ACTIVE, no file is written; a retried export succeeds and imports',
      async () => {
        const w = space();
        const s = await suspendedRun(w.a);
        await killedAt('authority.export.before-rename', ['run', 'export', s.run_id, '--out', w.snap(), '--root', w.a]);

        expect(readdirSync(w.snaps)).toEqual([]);
        expect(await record(s.run_id)).toMatchObject({
          state: 'ACTIVE',
          transition_generation: 1,
          owner_root: rootIdOf(w.a),
          payload_sha256: null,
        });

        const exported = await exportRun(s.run_id, w.a, w.snap());
        expect(exported).toMatchObject({ run_id: s.run_id, lifecycle: 'suspended', last_sequence: s.last_sequence });

        expect(await ok(importInto(w.snap(), w.b))).toEqual({
          run_id: s.run_id,
          status: 'suspended',
          last_sequence: s.last_sequence,
        });
        expect(await expectSoleOwner(s.run_id, w.b, w.a)).toMatchObject({ state: 'ACTIVE', transition_generation: 2 });
      },
      TIMEOUT,
    );

    it(
      'authority.export.after-rename: the record is SUSPENDED but no file exists; retried exports give the exact bytes the record binds',
      async () => {
        const w = space();
        const s = await suspendedRun(w.a);
        await killedAt('authority.export.after-rename', ['run', 'export', s.run_id, '--out', w.snap(), '--root', w.a]);

        expect(readdirSync(w.snaps)).toEqual([]); // the CLI died before it wrote the file
        const rec = await record(s.run_id);
        expect(rec).toMatchObject({
          state: 'SUSPENDED',
          transition_generation: 1,
          owner_root: rootIdOf(w.a),
          last_sequence: s.last_sequence,
        });
        expect(rec.payload_sha256).toMatch(/^[0-9a-f]{64}$/);

        const first = await exportRun(s.run_id, w.a, w.snap('first.snapshot'));
        expect(first).toMatchObject({
          run_id: s.run_id,
          lifecycle: 'suspended',
          last_sequence: s.last_sequence,
          payload_sha256: rec.payload_sha256,
        });
        const second = await exportRun(s.run_id, w.a, w.snap('second.snapshot'));
        expect(second).toEqual(first);
        expect(readFileSync(w.snap('second.snapshot')).equals(readFileSync(w.snap('first.snapshot')))).toBe(true);

        // The claim in the file is the one the record binds (digest and HMAC), and the record did not move.
        const inspected = await ok(['run', 'inspect', w.snap('first.snapshot'), '--verify']);
        expect(inspected.payload_sha256).toBe(rec.payload_sha256);
        expect(inspected.verification).toEqual({ valid: true, record_state: 'SUSPENDED' });
      },
      TIMEOUT,
    );
  });

  // ── local resume ─────────────────────────────────────────────────────────────────────────

  describe('killed during local resume', () => {
    it(
      'authority.resume.before-rename: the record stays SUSPENDED and the exported snapshot still imports into another root',
      async () => {
        const w = space();
        const s = await suspendedRun(w.a);
        const exported = await exportRun(s.run_id, w.a, w.snap());
        await killedAt('authority.resume.before-rename', resumeIn(s.run_id, w.a));

        expect(await record(s.run_id)).toMatchObject({
          state: 'SUSPENDED',
          transition_generation: 1,
          owner_root: rootIdOf(w.a),
          payload_sha256: exported.payload_sha256,
        });

        expect(await ok(importInto(w.snap(), w.b))).toEqual({
          run_id: s.run_id,
          status: 'suspended',
          last_sequence: s.last_sequence,
        });
        expect(await expectSoleOwner(s.run_id, w.b, w.a)).toMatchObject({ state: 'ACTIVE', transition_generation: 2 });
      },
      TIMEOUT,
    );

    it(
      'authority.resume.after-rename: ACTIVE at the next generation while the kernel is still suspended; the old snapshot is dead; a retried resume continues',
      async () => {
        const w = space();
        const s = await suspendedRun(w.a);
        await exportRun(s.run_id, w.a, w.snap());
        await killedAt('authority.resume.after-rename', resumeIn(s.run_id, w.a));

        const [rec, shown] = await Promise.all([record(s.run_id), ok(['run', 'show', s.run_id, '--root', w.a])]);
        expect(rec).toMatchObject({
          state: 'ACTIVE',
          transition_generation: 2,
          owner_root: rootIdOf(w.a),
          payload_sha256: null,
        });
        expect(shown).toMatchObject({ status: 'suspended', last_sequence: s.last_sequence }); // the kernel never resumed

        // The old claim died with the durable ACTIVE write.
        await refused(importInto(w.snap(), w.b), 3, 'snapshot_claim_invalid');

        // The retried resume finds ACTIVE and continues.
        await expectContinues(s.run_id, w.a, s.last_sequence);
      },
      TIMEOUT,
    );
  });

  // ── import ───────────────────────────────────────────────────────────────────────────────

  describe('killed during import (root A exported; the import into root B dies)', () => {
    it(
      'authority.import.consume.before-rename: abortable — the record stays SUSPENDED, B has no run and no stored definition, a retried import succeeds',
      async () => {
        const w = space();
        const s = await suspendedRun(w.a);
        const exported = await exportRun(s.run_id, w.a, w.snap());
        await killedAt('authority.import.consume.before-rename', importInto(w.snap(), w.b));

        const [rec, inB] = await Promise.all([record(s.run_id), runsIn(w.b)]);
        expect(rec).toMatchObject({
          state: 'SUSPENDED',
          transition_generation: 1,
          owner_root: rootIdOf(w.a),
          payload_sha256: exported.payload_sha256,
        });
        expect(inB).toEqual([]);
        // The definition is stored with the kernel run, after the consume point: nothing of it here.
        expect(definitionsIn(w.b)).toBe(0);

        expect(await ok(importInto(w.snap(), w.b))).toEqual({
          run_id: s.run_id,
          status: 'suspended',
          last_sequence: s.last_sequence,
        });
        expect(await expectSoleOwner(s.run_id, w.b, w.a)).toMatchObject({ state: 'ACTIVE', transition_generation: 2 });
      },
      TIMEOUT,
    );

    it(
      'authority.import.consume.after-rename: IMPORTING owned by B, B has no run yet; other roots get snapshot_consumed, A run_moved, B run_import_incomplete; the same import into B completes it, once',
      async () => {
        const w = space();
        const s = await suspendedRun(w.a);
        const exported = await exportRun(s.run_id, w.a, w.snap());
        await killedAt('authority.import.consume.after-rename', importInto(w.snap(), w.b));

        const [rec, inB] = await Promise.all([record(s.run_id), runsIn(w.b)]);
        // The consume point binds the snapshot it consumed: its digest (and claim) stay in the record.
        expect(rec).toMatchObject({
          state: 'IMPORTING',
          transition_generation: 2,
          payload_sha256: exported.payload_sha256,
          last_sequence: s.last_sequence,
        });
        expect(rec.owner_root).toBe(rootIdOf(w.b));
        expect(inB).toEqual([]);
        // authority show names the one next action: the same import, in the root the record names.
        expect(rec.next_action).toBe(
          `complete it by importing the same snapshot file again into the root the record names (owner_root ${rec.owner_root}): loopx run import <snapshot-file> --root <that-root>`,
        );

        // One after another: two resumes at once would meet on the run's lock (run_busy), which is not what is tested.
        const intoC = await refused(importInto(w.snap(), w.c), 4, 'snapshot_consumed');
        const fromA = await refused(resumeIn(s.run_id, w.a), 4, 'run_moved');
        const inBResume = await refused(resumeIn(s.run_id, w.b), 4, 'run_import_incomplete');
        expect(intoC).toMatchObject({
          next_action: `find the run where it was imported: loopx authority show --run ${s.run_id} --root ${rel(w.c)}`,
        });
        expect(fromA.code).toBe('run_moved');
        expect(inBResume).toMatchObject({
          next_action: `complete it by importing the same snapshot file into this root again: loopx run import <snapshot-file> --root ${rel(w.b)}`,
        });
        expect(await record(s.run_id)).toEqual(rec);

        // The same import into B completes it: no second consume (the transition generation stays 2).
        expect(await ok(importInto(w.snap(), w.b))).toEqual({
          run_id: s.run_id,
          status: 'suspended',
          last_sequence: s.last_sequence,
        });
        const [owner] = await Promise.all([
          expectSoleOwner(s.run_id, w.b, w.a),
          refused(importInto(w.snap(), w.b), 4, 'snapshot_consumed'),
          refused(importInto(w.snap(), w.c), 4, 'snapshot_consumed'),
        ]);
        expect(owner).toMatchObject({ state: 'ACTIVE', transition_generation: 2, next_action: null });
        await expectContinues(s.run_id, w.b, s.last_sequence);
      },
      LONG,
    );

    const afterKernelCommit: Array<[point: string, state: AuthorityRun['state']]> = [
      [FAULT_IMPORT_AFTER_KERNEL_COMMIT, 'IMPORTING'],
      ['authority.import.activate.before-rename', 'IMPORTING'],
      ['authority.import.activate.after-rename', 'ACTIVE'],
    ];
    for (const [point, state] of afterKernelCommit) {
      it(
        `${point}: the record is ${state} owned by B, B has the run suspended; resume in B continues at last_sequence+1; the snapshot stays consumed`,
        async () => {
          const w = space();
          const s = await suspendedRun(w.a);
          await exportRun(s.run_id, w.a, w.snap());
          await killedAt(point, importInto(w.snap(), w.b));

          const [rec, inB] = await Promise.all([record(s.run_id), runsIn(w.b)]);
          expect(rec).toMatchObject({
            state,
            transition_generation: 2,
            owner_root: rootIdOf(w.b),
            last_sequence: s.last_sequence,
          });
          expect(inB).toEqual([
            expect.objectContaining({ run_id: s.run_id, status: 'suspended', last_sequence: s.last_sequence }),
          ]);

          // The next command that holds B's lock completes the activation and drives the run on.
          await expectContinues(s.run_id, w.b, s.last_sequence);
          expect(await expectSoleOwner(s.run_id, w.b, w.a)).toMatchObject({
            state: 'ACTIVE',
            transition_generation: 2,
          });
          await refused(importInto(w.snap(), w.c), 4, 'snapshot_consumed');
        },
        TIMEOUT,
      );
    }
  });

  // ── in-process failures ─────────────────────────────────────────────────────────────────

  describe('an in-process failure during import (LOOPX_TEST_FAULT=throw:<point>: the step throws, the process lives)', () => {
    /** Import with the point armed to throw: refused with import_uncertain (exit 1), never retried by itself. */
    async function uncertainAt(point: string, args: readonly string[]) {
      const r = await loopxAsync([...args, '--json'], { LOOPX_TEST_FAULT: `throw:${point}` });
      expect({ status: r.status, signal: r.signal, code: r.json().error?.code }, describeCli(args, r)).toEqual({
        status: 1,
        signal: null,
        code: 'import_uncertain',
      });
      return r.json().error as { next_action: string; details: Record<string, unknown> };
    }

    const cases: Array<[point: string, state: AuthorityRun['state'], ownerIsB: boolean, kernelInB: boolean]> = [
      // The consume writer was invoked: uncertain even though the rename did not happen.
      ['authority.import.consume.before-rename', 'SUSPENDED', false, false],
      ['authority.import.consume.after-rename', 'IMPORTING', true, false],
      [FAULT_IMPORT_AFTER_KERNEL_COMMIT, 'IMPORTING', true, true],
      ['authority.import.activate.before-rename', 'IMPORTING', true, true],
      ['authority.import.activate.after-rename', 'ACTIVE', true, true],
    ];
    for (const [point, state, ownerIsB, kernelInB] of cases) {
      const then =
        state === 'ACTIVE'
          ? 'the activation landed: the same import is snapshot_consumed, resume in B continues'
          : 'the same import into B completes it';
      it(
        `throw at ${point}: import_uncertain (exit 1); the record is ${state}${kernelInB ? ', B holds the run suspended and nothing ran' : ', B has no run'}; ${then}`,
        async () => {
          const w = space();
          const s = await suspendedRun(w.a);
          await exportRun(s.run_id, w.a, w.snap());
          const error = await uncertainAt(point, importInto(w.snap(), w.b));
          expect(error).toMatchObject({
            details: { run_id: s.run_id },
            next_action: `complete it by importing the same snapshot file into this root again: loopx run import <snapshot-file> --root ${rel(w.b)}`,
          });

          const [rec, inB] = await Promise.all([record(s.run_id), runsIn(w.b)]);
          expect(rec).toMatchObject({ state, owner_root: rootIdOf(ownerIsB ? w.b : w.a) });
          if (kernelInB) {
            expect(inB).toEqual([
              expect.objectContaining({ run_id: s.run_id, status: 'suspended', last_sequence: s.last_sequence }),
            ]);
            // The kernel run is stopped: no event after the snapshot, although the locks were released.
            expect(await eventsAfter(s.run_id, w.b, s.last_sequence)).toEqual([]);
          } else {
            expect(inB).toEqual([]);
          }
          if (state !== 'SUSPENDED') await refused(importInto(w.snap(), w.c), 4, 'snapshot_consumed');

          if (state === 'ACTIVE') {
            await refused(importInto(w.snap(), w.b), 4, 'snapshot_consumed');
          } else {
            expect(await ok(importInto(w.snap(), w.b))).toEqual({
              run_id: s.run_id,
              status: 'suspended',
              last_sequence: s.last_sequence,
            });
          }
          expect(await expectSoleOwner(s.run_id, w.b, w.a)).toMatchObject({
            state: 'ACTIVE',
            transition_generation: 2,
          });
          await expectContinues(s.run_id, w.b, s.last_sequence);
        },
        LONG,
      );
    }
  });

  // ── tombstone ────────────────────────────────────────────────────────────────────────────

  describe('killed while writing the tombstone', () => {
    /** A researcher run driven until it waits for the operator's confirmation (active, turn 3 open). */
    async function waitingRun(root: string): Promise<{ run_id: string }> {
      const s = await ok(['run', 'start', '--agent', AGENT, '--input', 'Add 2 and 40', '--root', root]);
      expect(s).toMatchObject({ status: 'active', waiting_for: { kind: 'interaction', interaction_id: 'confirm-1' } });
      return s;
    }

    it(
      'authority.tombstone.before-rename: a completed run keeps an ACTIVE record; the next locked command (export) writes the tombstone; its terminal snapshot never imports',
      async () => {
        const w = space();
        const s = await waitingRun(w.a);
        await killedAt('authority.tombstone.before-rename', [
          'run',
          'answer',
          s.run_id,
          'confirm-1',
          'yes',
          '--root',
          w.a,
        ]);

        const [rec, shown] = await Promise.all([record(s.run_id), ok(['run', 'show', s.run_id, '--root', w.a])]);
        expect(rec).toMatchObject({ state: 'ACTIVE', owner_root: rootIdOf(w.a) });
        expect(shown.status).toBe('completed');

        const exported = await exportRun(s.run_id, w.a, w.snap());
        expect(exported).toMatchObject({ lifecycle: 'completed', last_sequence: shown.last_sequence });
        expect(await record(s.run_id)).toMatchObject({
          state: 'TERMINAL',
          owner_root: rootIdOf(w.a),
          payload_sha256: exported.payload_sha256,
        });

        await refused(importInto(w.snap(), w.b), 3, 'snapshot_terminal');
      },
      TIMEOUT,
    );

    it(
      'authority.tombstone.after-rename: the completed run is TERMINAL at once; its export is inspectable and never importable',
      async () => {
        const w = space();
        const s = await waitingRun(w.a);
        await killedAt('authority.tombstone.after-rename', [
          'run',
          'answer',
          s.run_id,
          'confirm-1',
          'yes',
          '--root',
          w.a,
        ]);

        expect(await record(s.run_id)).toMatchObject({ state: 'TERMINAL', owner_root: rootIdOf(w.a) });

        const exported = await exportRun(s.run_id, w.a, w.snap());
        expect(exported.lifecycle).toBe('completed');
        await refused(importInto(w.snap(), w.b), 3, 'snapshot_terminal');
      },
      TIMEOUT,
    );

    for (const point of ['authority.tombstone.before-rename', 'authority.tombstone.after-rename']) {
      it(
        `${point} while cancelling an exported suspended run: once the root reports it cancelled, the earlier snapshot never runs anywhere`,
        async () => {
          const w = space();
          const s = await suspendedRun(w.a);
          await exportRun(s.run_id, w.a, w.snap());
          await killedAt(point, ['run', 'cancel', s.run_id, '--root', w.a]);

          // The tombstone is written before the kernel commits Cancelled, so in both cases the kernel is still suspended.
          const shown = await ok(['run', 'show', s.run_id, '--root', w.a]);
          expect(shown.status).toBe('suspended');
          const imported = await loopxAsync([...importInto(w.snap(), w.b), '--json']);
          if (point.endsWith('before-rename')) {
            // The cancel never reached the authority: the snapshot may still move, and then A's copy is dead.
            expect(imported.status, describeCli(['run', 'import'], imported)).toBe(0);
            await expectSoleOwner(s.run_id, w.b, w.a);
          } else {
            // The tombstone landed: the earlier snapshot never runs anywhere, A cannot resume it, and cancel finishes it.
            expect(imported.status, describeCli(['run', 'import'], imported)).toBe(4);
            expect(imported.json().error.code).toBe('run_tombstoned');
            const resumed = await loopxAsync(['run', 'resume', s.run_id, '--root', w.a, '--json']);
            expect(resumed.json().error.code).toBe('run_cancel_incomplete');
            expect((await ok(['run', 'cancel', s.run_id, '--root', w.a])).status).toBe('cancelled');
            expect((await record(s.run_id)).owner_root).toBe(rootIdOf(w.a));
          }
        },
        TIMEOUT,
      );
    }
  });
});
