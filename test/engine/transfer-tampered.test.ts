/**
 * A snapshot whose claim does not verify, with real processes (RFC 0007: the destination verifies
 * the HMAC "before any lease, tombstone, event-log, or engine mutation"):
 * - `run import` of it leaves the destination exactly as it was — an absent root stays absent, an
 *   empty directory stays empty, and an existing root keeps every entry, mode, byte and mtime (no
 *   engine.db, no locks/, no stored definition);
 * - `run inspect FILE --verify` refuses it with exit 3 and `run import`'s one secret-safe code,
 *   so a script that trusts the exit code never accepts a forged claim.
 * A byte of the scope id and a byte of the HMAC are flipped; the rest of the envelope is intact.
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeEnvelope } from '../../src/snapshot/index.js';
import { loopxAsync, type CliResult } from '../support/cli.js';
import { treeState } from '../support/tree.js';

const AGENT = 'examples/agents/researcher.json';
const TIMEOUT = 120_000; // generous: every step is a real child process, and CI machines are shared

const describeCli = (args: readonly string[], r: CliResult) =>
  `loopx ${args.join(' ')} → status ${r.status} signal ${r.signal}\n${r.stderr}${r.stdout}`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function ok(args: readonly string[]): Promise<any> {
  const r = await loopxAsync([...args, '--json']);
  if (r.status !== 0) throw new Error(`expected success: ${describeCli(args, r)}`);
  return r.json();
}

function definitionRows(root: string): number {
  const db = new Database(join(root, 'engine.db'), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM definitions').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** A private scratch directory with a run of the researcher exported from root `origin`, and its two forgeries. */
async function world() {
  const base = mkdtempSync(join(tmpdir(), 'loopx-tampered-'));
  chmodSync(base, 0o700);
  const origin = join(base, 'origin');
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
    origin,
  ]);
  const genuine = join(base, 'genuine.snapshot');
  await ok(['run', 'export', s.run_id, '--out', genuine, '--root', origin]);
  const bytes = readFileSync(genuine);
  const claim = decodeEnvelope(bytes).claim;
  // The claim's scope id and HMAC each occur once in the envelope; flip one byte inside each.
  const scopeAt = bytes.indexOf(Buffer.from(claim.scopeId));
  const hmacAt = bytes.indexOf(Buffer.from(claim.hmac));
  expect(scopeAt).toBeGreaterThan(0);
  expect(hmacAt).toBeGreaterThan(0);
  const forge = (name: string, at: number) => {
    const b = Buffer.from(bytes);
    b[at + 5]! ^= 0x01;
    const file = join(base, name);
    writeFileSync(file, b, { mode: 0o600 });
    return file;
  };
  return {
    base,
    origin,
    runId: s.run_id as string,
    genuine,
    scopeFlipped: forge('scope.snapshot', scopeAt),
    hmacFlipped: forge('hmac.snapshot', hmacAt),
  };
}

beforeAll(async () => {
  // Create the shared authority once, before concurrent children would race to create it.
  const r = await loopxAsync(['authority', 'init', '--json']);
  expect(r.status, r.stderr).toBe(0);
});

describe.concurrent('a snapshot whose claim does not verify', () => {
  it(
    'a rejected import leaves the destination untouched: an absent root stays absent, an empty directory empty, an existing root identical to the byte and mtime, with no stored definition',
    async () => {
      const w = await world();
      // An existing root that has seen other work (its own run and the researcher's definition).
      const existing = join(w.base, 'existing');
      await ok([
        'run',
        'start',
        '--agent',
        AGENT,
        '--input',
        'hello',
        '--suspend-after-turns',
        '0',
        '--root',
        existing,
      ]);
      const rowsBefore = definitionRows(existing);
      const empty = join(w.base, 'empty');
      mkdirSync(empty, { mode: 0o700 });
      const absent = join(w.base, 'absent');

      for (const forged of [w.scopeFlipped, w.hmacFlipped]) {
        for (const root of [absent, empty, existing]) {
          const before = treeState(root);
          const args = ['run', 'import', forged, '--root', root, '--agent', AGENT, '--json'];
          const r = await loopxAsync(args);
          expect({ status: r.status, code: r.json().error?.code }, describeCli(args, r)).toEqual({
            status: 3,
            code: 'snapshot_claim_invalid',
          });
          expect(treeState(root), `${root} changed`).toEqual(before);
        }
      }
      expect(treeState(absent)).toBe('absent');
      expect(readdirSync(empty)).toEqual([]);
      expect(definitionRows(existing)).toBe(rowsBefore);

      // The genuine snapshot still imports into the existing root: the refusals consumed nothing.
      expect(await ok(['run', 'import', w.genuine, '--root', existing, '--agent', AGENT])).toMatchObject({
        run_id: w.runId,
        status: 'suspended',
      });
    },
    TIMEOUT,
  );

  it(
    "run inspect --verify exits 3 with run import's snapshot_claim_invalid for a flipped scope-id byte and a flipped HMAC byte, and 0 for the genuine snapshot",
    async () => {
      const w = await world();
      const dest = join(w.base, 'dest');
      const verify = (file: string) => loopxAsync(['run', 'inspect', file, '--verify', '--json']);
      const [scope, hmac, genuine, imported] = await Promise.all([
        verify(w.scopeFlipped),
        verify(w.hmacFlipped),
        verify(w.genuine),
        loopxAsync(['run', 'import', w.hmacFlipped, '--root', dest, '--agent', AGENT, '--json']),
      ]);
      for (const r of [scope, hmac]) {
        expect(r.status, describeCli(['run', 'inspect', '--verify'], r)).toBe(3);
        // The same document as run import's refusal: code, message, next action, no details.
        expect(r.json()).toEqual(imported.json());
        expect(r.json().error.code).toBe('snapshot_claim_invalid');
        expect(r.stderr).toBe(imported.stderr);
      }
      expect(genuine.status, describeCli(['run', 'inspect', '--verify'], genuine)).toBe(0);
      expect(genuine.json().verification).toEqual({ valid: true, record_state: 'SUSPENDED' });

      // Without --verify, inspect proves structure only and still shows the forged file (exit 0).
      const plain = await loopxAsync(['run', 'inspect', w.hmacFlipped, '--json']);
      expect(plain.status, plain.stderr).toBe(0);
      expect(plain.json().verification).toBeUndefined();
    },
    TIMEOUT,
  );
});
