/**
 * Goal work Turns across real crashes: a `loopx` child SIGKILLs itself at a named fault point
 * between a Turn's quota debit and its settlement; further CLI commands repair it. After every
 * crash the next driver settles the Turn under the same settlement identity and the ledger still
 * holds exactly one debit for it — for a turn mid-run (`run resume` continues the run) and for the
 * run's final turn (`run resume` settles it and still refuses the finished run). A backup of the
 * repaired root reads the Turns and the debits back in its private audit.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { FAULT_AFTER_QUOTA_DEBIT, FAULT_BEFORE_TURN_SETTLED } from '../../src/engine/index.js';
import { quota, session } from '../../src/owners/index.js';
import { loopxAsync, tempRoot, type CliResult } from '../support/cli.js';

const AGENT = 'examples/agents/goal-worker.json';
const TIMEOUT = 180_000; // every step is a real CLI command

let sink: WebhookSink;
beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
});
afterAll(async () => {
  await sink.close();
});

const ok = (r: CliResult): CliResult => {
  expect(r.status, r.stderr).toBe(0);
  return r;
};

async function goalRoot(): Promise<string> {
  const root = tempRoot('loopx-turns-crash-');
  ok(await loopxAsync(['init', '--root', root]));
  ok(await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', '--root', root]));
  for (const title of ['Draft the outline', 'Review with design', 'Publish the post'])
    ok(await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', title, '--root', root]));
  return root;
}

const workRun = (root: string, env: Record<string, string> = {}, more: string[] = []) =>
  loopxAsync(
    [
      'work',
      'run',
      '--goal',
      'launch',
      '--agent',
      AGENT,
      '--sink',
      sink.deliveriesUrl,
      ...more,
      '--root',
      root,
      '--json',
    ],
    env,
  );

/** The root's only session: its Turns with their settlements, and the quota ledger. */
async function ownersOf(root: string) {
  const sessions = session.openSqliteSessionStore(join(root, 'sessions.db'));
  const ledger = quota.openSqliteQuotaLedger(join(root, 'quota.db'));
  try {
    const [s] = await sessions.listSessions();
    const turns = await sessions.listTurns(s!.session_id);
    const settlements = await Promise.all(turns.map((t) => sessions.getSettlement(t.turn_key)));
    return { session: s!, turns, settlements, debits: await ledger.list() };
  } finally {
    sessions.close();
    ledger.close();
  }
}

describe('a Goal work run killed between a Turn debit and its settlement', () => {
  it(
    'mid-run: run resume settles the Turn under its key without a second debit, then continues with the next Turn',
    async () => {
      const root = await goalRoot();
      const killed = await workRun(root, { LOOPX_TEST_FAULT: FAULT_AFTER_QUOTA_DEBIT });
      expect(killed.signal).toBe('SIGKILL');
      const crashed = await ownersOf(root);
      const key = crashed.turns[0]!.turn_key;
      // The first turn completed in the engine and was debited; its Turn is open, without quota_spend.
      expect(crashed.turns.map((t) => [t.turn_index, t.status, t.phases.map((p) => p.phase)])).toEqual([
        [0, 'in_progress', session.TURN_PHASES.slice(0, 4)],
      ]);
      expect(crashed.debits.map((d) => [d.effect_id, d.status])).toEqual([[key, 'written']]);

      const resumed = ok(await loopxAsync(['run', 'resume', crashed.session.run_id!, '--root', root, '--json'])).json();
      expect(resumed).toMatchObject({ status: 'completed', completed_turns: 5 });
      const repaired = await ownersOf(root);
      expect(repaired.turns.map((t) => [t.turn_index, t.status])).toEqual([0, 1, 2, 3, 4].map((i) => [i, 'committed']));
      expect(repaired.turns[0]!.phases.map((p) => p.phase)).toEqual(session.TURN_PHASES.slice(0, 5));
      expect(repaired.settlements[0]).toMatchObject({
        settlement_id: key,
        status: 'committed',
        result_kind: 'validated_progress',
      });
      // Still exactly one debit for the repaired Turn — the original entry — and one for each later Turn.
      expect(repaired.debits.filter((d) => d.effect_id === key)).toEqual([crashed.debits[0]]);
      expect(repaired.debits.map((d) => d.effect_id)).toEqual(repaired.turns.map((t) => t.turn_key));

      // A backup of the repaired root reads the session's Turns and the ledger back in its private audit.
      const base = join(root, '..');
      ok(
        await loopxAsync([
          'backup-state',
          '--execute',
          '--root',
          root,
          '--output-dir',
          join(base, 'out'),
          '--backup-id',
          'b1',
          '--json',
        ]),
      );
      const dest = join(base, 'verified');
      const args = [
        '--archive',
        join(base, 'out', 'b1.tar.gz'),
        '--manifest',
        join(base, 'out', 'b1.manifest.json'),
        '--destination',
        dest,
        '--execute',
        '--json',
      ];
      ok(await loopxAsync(['backup-state', 'verify', ...args]));
      const audit = JSON.parse(readFileSync(join(dest, 'recovery-audit.json'), 'utf8')) as {
        components: Array<{ owner_kind: string; readback: { counts?: object } }>;
      };
      const counts = (kind: string) =>
        audit.components.filter((c) => c.owner_kind === kind).map((c) => c.readback.counts);
      expect(counts('session')).toEqual([{ sessions: 1, turns: 5, settlements: 5 }]);
      expect(counts('quota')).toEqual([{ entries: 5 }]);
    },
    TIMEOUT,
  );

  it(
    "at the final turn: run resume settles the finished run's Turn once, keeps its one debit, and still refuses the run",
    async () => {
      const root = await goalRoot();
      expect(ok(await workRun(root, {}, ['--turns', '4'])).json()).toMatchObject({
        status: 'suspended',
        completed_turns: 4,
      });
      const { session: s } = await ownersOf(root);
      const killed = await loopxAsync(['run', 'resume', s.run_id!, '--root', root, '--json'], {
        LOOPX_TEST_FAULT: FAULT_BEFORE_TURN_SETTLED,
      });
      expect(killed.signal).toBe('SIGKILL');
      const crashed = await ownersOf(root);
      const last = crashed.turns[4]!;
      expect([last.status, last.phases.map((p) => p.phase)]).toEqual(['in_progress', session.TURN_PHASES.slice(0, 5)]);
      expect(crashed.debits).toHaveLength(5);
      expect(ok(await loopxAsync(['run', 'show', s.run_id!, '--root', root, '--json'])).json().status).toBe(
        'completed',
      );

      const refused = await loopxAsync(['run', 'resume', s.run_id!, '--root', root, '--json']);
      expect(refused.status).toBe(3);
      expect(refused.json().error.code).toBe('run_terminal');
      const repaired = await ownersOf(root);
      expect(repaired.settlements[4]).toMatchObject({
        settlement_id: last.turn_key,
        status: 'committed',
        result_kind: 'validated_completion',
      });
      expect(repaired.debits).toEqual(crashed.debits);
      // Once settled, it stays settled: a second repair changes nothing.
      expect((await loopxAsync(['run', 'resume', s.run_id!, '--root', root, '--json'])).status).toBe(3);
      expect(await ownersOf(root)).toEqual(repaired);
    },
    TIMEOUT,
  );
});
