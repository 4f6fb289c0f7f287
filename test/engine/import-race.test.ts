/**
 * Import races and foreign claims, with real processes. Eight CLI children import one snapshot
 * into eight fresh runtime roots at the same moment: the run authority lets exactly one consume
 * it; every other one is told `snapshot_consumed` (exit 4) — never `run_owner_alive`, whose advice
 * is wrong when the lock holder is a competing importer — and the winner continues the run at
 * last_sequence+1 without a second RunStarted. A snapshot signed under another authority
 * directory fails exactly like a tampered one — one secret-safe failure.
 *
 * All children of this file share one run authority (test/support/cli.ts) unless a test passes
 * --authority-dir.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeEnvelope } from '../../src/snapshot/index.js';
import { loopxAsync, type CliResult } from '../support/cli.js';

const AGENT = 'examples/agents/researcher.json';
const RACERS = 8;
const TIMEOUT = 120_000; // generous: every step is a real child process, and CI machines are shared

function scratch(): string {
  const base = mkdtempSync(join(tmpdir(), 'loopx-import-race-'));
  chmodSync(base, 0o700);
  return base;
}

const describeCli = (args: readonly string[], r: CliResult) =>
  `loopx ${args.join(' ')} → status ${r.status} signal ${r.signal}\n${r.stderr}${r.stdout}`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function ok(args: readonly string[]): Promise<any> {
  const r = await loopxAsync([...args, '--json']);
  if (r.status !== 0) throw new Error(`expected success: ${describeCli(args, r)}`);
  return r.json();
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

/** A researcher run in `root` (optionally under another authority), suspended after one turn and exported to `out`. */
async function exportedRun(
  root: string,
  out: string,
  authority: string[] = [],
): Promise<{ run_id: string; last_sequence: number; payload_sha256: string }> {
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
    ...authority,
  ]);
  expect(s).toMatchObject({ status: 'suspended', completed_turns: 1 });
  const e = await ok(['run', 'export', s.run_id, '--out', out, '--root', root, ...authority]);
  expect(e).toMatchObject({ run_id: s.run_id, lifecycle: 'suspended', last_sequence: s.last_sequence });
  return { run_id: s.run_id, last_sequence: s.last_sequence, payload_sha256: e.payload_sha256 };
}

const importArgs = (file: string, root: string) => ['run', 'import', file, '--root', root, '--agent', AGENT, '--json'];

beforeAll(async () => {
  // Create the shared authority once, before concurrent children would race to create it.
  const r = await loopxAsync(['authority', 'init', '--json']);
  expect(r.status, r.stderr).toBe(0);
});

describe.concurrent('one snapshot, many importers', () => {
  it(
    `${RACERS} processes import one snapshot into ${RACERS} fresh roots at once: exactly one wins and continues it, every other one is told snapshot_consumed`,
    async () => {
      const base = scratch();
      const file = join(base, 'run.snapshot');
      const s = await exportedRun(join(base, 'origin'), file);
      const roots = Array.from({ length: RACERS }, (_, i) => join(base, `root-${i}`));

      // All children start before any is awaited.
      const racing = roots.map((root) => loopxAsync(importArgs(file, root)));
      const results = await Promise.all(racing);

      const outcomes = results
        .map((r, i) => `#${i}: ${describeCli(['run', 'import', '--root', roots[i]!], r)}`)
        .join('\n');
      const winners = results.flatMap((r, i) => (r.status === 0 ? [i] : []));
      expect(winners, outcomes).toHaveLength(1);
      const w = winners[0]!;
      const winner = roots[w]!;
      expect(results[w]!.json()).toEqual({ run_id: s.run_id, status: 'suspended', last_sequence: s.last_sequence });
      for (const [i, r] of results.entries()) {
        if (i === w) continue;
        expect({ status: r.status, signal: r.signal }, outcomes).toEqual({ status: 4, signal: null });
        expect(r.json().error.code, outcomes).toBe('snapshot_consumed');
      }

      // One owner: the authority names the winner's root, and only that root has the run.
      // A loser is refused before it opens its root: the fresh root it was given stays absent.
      for (const [i, root] of roots.entries()) if (i !== w) expect(existsSync(root), `#${i}`).toBe(false);
      const [shown, ...lists] = await Promise.all([
        ok(['authority', 'show', '--run', s.run_id]),
        ...roots.map((root) =>
          existsSync(root) ? ok(['run', 'list', '--root', root]) : Promise.resolve({ runs: [] }),
        ),
      ]);
      expect(shown.run).toMatchObject({
        run_id: s.run_id,
        state: 'ACTIVE',
        transition_generation: 2,
        payload_sha256: s.payload_sha256,
      });
      expect(shown.run.owner_root).toBe(rootIdOf(winner));
      const holders = lists.flatMap((l, i) =>
        l.runs.some((r: { run_id: string }) => r.run_id === s.run_id) ? [i] : [],
      );
      expect(holders).toEqual([w]);
      expect(lists[w]!.runs).toEqual([
        expect.objectContaining({ run_id: s.run_id, status: 'suspended', last_sequence: s.last_sequence }),
      ]);
      for (const [i, root] of roots.entries()) if (i !== w) expect(rootIdOf(root)).not.toBe(shown.run.owner_root);

      // The winner continues at last_sequence+1; its root's log starts with Resumed, never RunStarted.
      const resumed = await ok(['run', 'resume', s.run_id, '--root', winner]);
      expect(resumed).toMatchObject({
        status: 'active',
        completed_turns: 2,
        waiting_for: { kind: 'interaction', interaction_id: 'confirm-1' },
      });
      const [tail, before] = await Promise.all([
        loopxAsync(['run', 'events', s.run_id, '--after', String(s.last_sequence), '--root', winner, '--json']),
        loopxAsync(['run', 'events', s.run_id, '--after', '0', '--root', winner, '--json']),
      ]);
      expect(tail.status, tail.stderr).toBe(0);
      const events = tail.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { sequence: number; type: string });
      expect(events[0]).toMatchObject({ sequence: s.last_sequence + 1, type: 'Resumed' });
      expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => s.last_sequence + 1 + i));
      expect(events.map((e) => e.type)).not.toContain('RunStarted');

      // A cursor older than the snapshot fails explicitly, naming the snapshot sequence as the recovery cursor.
      expect(before.status, before.stderr).toBe(3);
      const error = JSON.parse(before.stdout).error;
      expect(error).toMatchObject({
        code: 'cursor_before_snapshot',
        details: { run_id: s.run_id, recovery_cursor: s.last_sequence },
      });
    },
    TIMEOUT,
  );

  it(
    'a snapshot signed under another authority directory is refused with exactly the failure of a tampered one',
    async () => {
      const base = scratch();
      const otherAuthority = ['--authority-dir', join(base, 'other-authority')];
      const [foreign, own] = await Promise.all([
        exportedRun(join(base, 'foreign-origin'), join(base, 'foreign.snapshot'), otherAuthority),
        exportedRun(join(base, 'origin'), join(base, 'own.snapshot')),
      ]);
      expect(foreign.run_id).not.toBe(own.run_id);

      // The claim HMAC is the last 32 bytes of the envelope: flip one byte inside it.
      const genuine = readFileSync(join(base, 'own.snapshot'));
      expect(Buffer.from(decodeEnvelope(genuine).claim.hmac).equals(genuine.subarray(genuine.length - 32))).toBe(true);
      const tampered = Buffer.from(genuine);
      tampered[tampered.length - 7]! ^= 0x20;
      writeFileSync(join(base, 'tampered.snapshot'), tampered, { mode: 0o600 });

      const [fromForeign, fromTampered] = await Promise.all([
        loopxAsync(importArgs(join(base, 'foreign.snapshot'), join(base, 'b1'))),
        loopxAsync(importArgs(join(base, 'tampered.snapshot'), join(base, 'b2'))),
      ]);
      expect(fromForeign.status, describeCli(['run', 'import', 'foreign.snapshot'], fromForeign)).toBe(3);
      expect(fromTampered.status, describeCli(['run', 'import', 'tampered.snapshot'], fromTampered)).toBe(3);
      const foreignError = JSON.parse(fromForeign.stdout).error;
      expect(foreignError.code).toBe('snapshot_claim_invalid');
      expect(JSON.parse(fromTampered.stdout).error).toEqual(foreignError); // same code, message, next action, no details
      expect(fromTampered.stderr).toBe(fromForeign.stderr);

      // Neither refusal changed anything: the untampered snapshot still imports.
      expect(await ok(importArgs(join(base, 'own.snapshot'), join(base, 'b3')).slice(0, -1))).toEqual({
        run_id: own.run_id,
        status: 'suspended',
        last_sequence: own.last_sequence,
      });
    },
    TIMEOUT,
  );
});
