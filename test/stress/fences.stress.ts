/**
 * Fences under repetition (`npm run stress`): each trial makes a new source, its backup and
 * recoveries, with the real CLI against a real loopback receiver, and counts at the receiver.
 *
 * - Racing recoveries: two users each recover the same backup under their own run authority, their
 *   applies started together. In every trial exactly one completes and the other ends held on
 *   `receiver_fence_conflict`; the complete one continues its work, the held one admits none, and
 *   the receiver stores the shared continuation once.
 * - Old writers: after a completed recovery, the old root is attacked in a seeded random order
 *   (another authority, a copy of the authority without lifetimes/, an edited goal.json, a
 *   lifecycle change, a re-created alias); every attempt is refused and nothing is stored.
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { loopxAsync } from '../support/cli.js';
import { AFTER_CAPTURE, CONTINUE, agentFile, type Doc } from '../recovery/support/adopt.js';
import { as, backupVerified, newUser, recoverInto, refusedAs, workedSource } from '../recovery/support/adopt-users.js';

const TRIALS = Number(process.env['LOOPX_STRESS_TRIALS'] ?? '5');
const SEED = Number(process.env['LOOPX_STRESS_SEED'] ?? '36');

let sink: WebhookSink;
beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
});
afterAll(async () => {
  await sink.close();
});

/** A seeded shuffle (mulberry32), so a failing order can be run again. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

const storedFor = (lineage: string, message: string) =>
  sink.deliveries().filter((d) => d.goal_lineage === lineage && (d.body as { message?: string }).message === message)
    .length;

/** A source root that worked (and delivered) before a verified backup; its lineage. */
async function source(
  prefix: string,
): Promise<{ u: ReturnType<typeof newUser>; lineage: string; archive: string; manifest: string }> {
  const u = newUser(prefix);
  const lineage = await workedSource(u, sink.deliveriesUrl);
  await backupVerified(u);
  await as(u, [
    'work',
    'run',
    '--goal',
    'launch',
    '--agent',
    agentFile(u.dir, 'after', AFTER_CAPTURE),
    '--root',
    u.root,
  ]);
  const names = readdirSync(join(u.dir, 'backups'));
  const archive = join(
    u.dir,
    'backups',
    names.find((n) => n.endsWith('.tar.gz'))!,
  );
  const manifest = join(
    u.dir,
    'backups',
    names.find((n) => n.endsWith('.json'))!,
  );
  return { u, lineage, archive, manifest };
}

describe('racing recoveries of one backup under two authorities', () => {
  it(`in each of ${TRIALS} trials exactly one delivers`, async () => {
    const outcomes: string[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const { lineage, archive, manifest } = await source(`loopx-stress-race-${trial}-`);
      const users = [0, 1].map((k) => newUser(`loopx-stress-race-${trial}-${k}-`));
      for (const v of users)
        await as(v, [
          'backup-state',
          'verify',
          '--archive',
          archive,
          '--manifest',
          manifest,
          '--destination',
          v.workspace,
          '--execute',
          '--root',
          v.root,
        ]);
      // Both applies started together: the receiver decides between them.
      const states = await Promise.all(users.map((v) => recoverInto(v, join(v.dir, 'recovered'))));
      const sorted = states.map((s: Doc) => s.state as string).sort();
      expect(sorted).toEqual(['complete', 'reconciliation_held']);
      const held = states.find((s: Doc) => s.state === 'reconciliation_held') as Doc;
      expect(held.holds.map((h: { code: string }) => h.code)).toEqual(['receiver_fence_conflict']);
      for (const [k, v] of users.entries()) {
        const args = [
          'work',
          'run',
          '--goal',
          'launch',
          '--agent',
          agentFile(v.dir, 'continue', CONTINUE),
          '--root',
          join(v.dir, 'recovered'),
        ];
        // The held one admits no work until its hold is resolved (it never is: the receiver follows the other).
        if (states[k].state === 'complete') await as(v, args);
        else expect(await refusedAs(v, args)).toEqual({ status: 4, code: 'recover_reconciliation_held' });
      }
      expect(storedFor(lineage, 'post published')).toBe(1);
      expect(storedFor(lineage, 'post draft ready')).toBe(1);
      outcomes.push(`trial ${trial}: ${states.map((s: Doc) => s.state).join(' / ')}; stored once`);
    }
    console.log(`racing recoveries: ${TRIALS} trials, ${TRIALS} with exactly one delivering\n${outcomes.join('\n')}`);
  });
});

describe('old writers of a superseded root, in random orders', () => {
  it(`in each of ${TRIALS} trials every attempt is refused and nothing is stored`, async () => {
    const refusals = new Map<string, number>();
    for (let trial = 0; trial < TRIALS; trial++) {
      const { u, lineage } = await source(`loopx-stress-old-${trial}-`);
      const st = await recoverInto(u, join(u.dir, 'recovered'));
      expect(st.state).toBe('complete');
      const stale = agentFile(u.dir, 'stale', [
        { text: 'Announcing.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'stale news' } }] },
        { text: 'Done.' },
      ]);
      const S = u.root;
      const own = ['--authority-dir', u.authority];
      const copy = join(u.dir, 'authority-copy');
      cpSync(u.authority, copy, { recursive: true });
      rmSync(join(copy, 'lifetimes'), { recursive: true });
      const goalJson = join(S, 'goals', 'launch', 'goal.json');
      const attempts: Array<[string, () => Promise<readonly string[]>, string]> = [
        [
          'empty authority',
          async () => [
            'work',
            'run',
            '--goal',
            'launch',
            '--agent',
            stale,
            '--sink',
            sink.deliveriesUrl,
            '--root',
            S,
            '--authority-dir',
            mkdtempSync(join(u.dir, 'e-')),
          ],
          'root_authority_mismatch',
        ],
        [
          'authority without lifetimes/',
          async () => ['work', 'run', '--goal', 'launch', '--agent', stale, '--root', S, '--authority-dir', copy],
          'authority_rolled_back',
        ],
        [
          'own authority',
          async () => ['work', 'run', '--goal', 'launch', '--agent', stale, '--root', S, ...own],
          'goal_lifetime_superseded',
        ],
        ['retire', async () => ['goal', 'retire', 'launch', '--root', S, ...own], 'goal_lifetime_superseded'],
        [
          're-create',
          async () => ['goal', 'create', 'launch', '--title', 'Again', '--root', S, ...own],
          'goal_alias_superseded',
        ],
        [
          'edited goal.json',
          async () => {
            const doc = JSON.parse(readFileSync(goalJson, 'utf8')) as { goal_instance_id: string };
            doc.goal_instance_id = `${doc.goal_instance_id.slice(0, -1)}${doc.goal_instance_id.endsWith('0') ? '1' : '0'}`;
            writeFileSync(goalJson, `${JSON.stringify(doc)}\n`);
            return ['todo', 'add', '--goal', 'launch', '--title', 'More', '--root', S, ...own];
          },
          'goal_identity_mismatch',
        ],
      ];
      const original = readFileSync(goalJson);
      for (const [name, make, expected] of shuffled(attempts, SEED + trial)) {
        writeFileSync(goalJson, original);
        const r = await loopxAsync([...(await make()), '--json']);
        const code = r.status === 0 ? 'admitted' : (JSON.parse(r.stdout || '{}') as Doc).error?.code;
        expect(code, `trial ${trial}: ${name}`).toBe(expected);
        refusals.set(expected, (refusals.get(expected) ?? 0) + 1);
      }
      writeFileSync(goalJson, original);
      expect(storedFor(lineage, 'stale news')).toBe(0);
    }
    console.log(
      `old writers: ${TRIALS} trials, ${[...refusals.values()].reduce((a, b) => a + b, 0)} attempts refused, 0 stored\n${[...refusals].map(([c, n]) => `  ${c}: ${n}`).join('\n')}`,
    );
  });
});
