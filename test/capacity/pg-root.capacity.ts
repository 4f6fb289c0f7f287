/**
 * A PostgreSQL root filled to the documented limits (docs/backup-guide.md "Limits enforced at
 * create": 128 Goals, 20,000 committed transactions in one Goal) by eight writer processes at once,
 * then backed up (online), verified, copied with PostgreSQL's own tools and rotated, and read back:
 * every Goal's head and every transaction of the full Goal — receipts included — exactly as the
 * original had them. It asserts what completes and what reads back, never a duration; the figures
 * it prints go in docs/postgresql.md ("Capacity"). `npm run capacity`.
 */
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import type { WorkTransaction } from '../../src/owners/work/index.js';
import { openGoalWork, workStoreHeads } from '../../src/owners/work/index.js';
import { openPostgres } from '../../src/store/index.js';
import { loopxAsync, tempRoot } from '../support/cli.js';
import { PG_URL, describePg, pgSchemas } from '../support/pg.js';
import { PgWriter, restoreScene } from '../support/pg-restore.js';

const GOALS = 128;
const FULL = 20_000;
const WRITERS = 8;

describePg('a PostgreSQL root at the documented limits', () => {
  const schema = pgSchemas()();
  const scene = restoreScene('loopx_capacity');
  const env = { LX_CAP_A: PG_URL, LX_CAP_B: scene.url };
  const root = tempRoot('loopx-capacity-');
  const at = ['--root', root];
  const figures: Record<string, string> = {};
  const timed = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    const v = await fn();
    figures[name] = `${((performance.now() - t0) / 1000).toFixed(1)} s`;
    return v;
  };
  const ok = async (args: string[]) => {
    const r = await loopxAsync([...args, ...at, '--json'], env);
    expect(r.status, `${args.join(' ')}\n${r.stderr}`).toBe(0);
    return r.json();
  };
  let original: WorkTransaction[] = [];

  beforeAll(async () => {
    Object.assign(process.env, env);
    await ok(['init', '--store', 'postgresql', '--database-url', 'env:LX_CAP_A', '--pg-schema', schema]);
    await ok(['db', 'migrate']);
    await timed('128 Goals made, one Todo each', async () => {
      for (let g = 0; g < GOALS; g++) {
        const id = `g${String(g).padStart(3, '0')}`;
        await ok(['goal', 'create', id, '--title', `Goal ${g}`]);
        await ok(['todo', 'add', '--goal', id, '--title', 'the first Todo']);
      }
    });
    for (let t = 2; t <= WRITERS; t++) await ok(['todo', 'add', '--goal', 'g000', '--title', `Todo ${t}`]);
  }, 30 * 60_000);

  it(
    'fills one Goal to 20,000 transactions with eight writers at once',
    async () => {
      const already = WRITERS; // g000: its Todos added
      let contended = 0;
      const each = Math.ceil((FULL - already) / WRITERS);
      await timed(`${FULL - already} updates by ${WRITERS} writer processes`, async () => {
        const writers = await Promise.all(
          Array.from({ length: WRITERS }, async () => {
            const w = new PgWriter(root, 'g000', env);
            expect(await w.next()).toEqual({ ready: true });
            return w;
          }),
        );
        await Promise.all(
          writers.map(async (w, i) => {
            // Answers come in the order lines were sent; a commit another writer beat is sent again, same operation id.
            const sent: string[] = [];
            const send = (line: string) => {
              sent.push(line);
              w.send(line);
            };
            for (let n = 0; n < each && already + i * each + n < FULL; n++)
              send(`op cap-${i}-${n} update t${i + 1} ${n}`);
            while (sent.length > 0) {
              const line = sent.shift()!;
              const answer = await w.next();
              if (answer.ok === true) continue;
              expect(answer.code).toBe('work_commit_contention');
              contended++;
              send(line);
            }
            w.stop();
          }),
        );
      });
      const work = await openGoalWork({ root, goal_id: 'g000' });
      try {
        original = [];
        for await (const t of work.iterateHistory()) original.push(t);
      } finally {
        work.close();
      }
      expect(original).toHaveLength(FULL);
      figures['commits sent again after contention'] = String(contended);
    },
    30 * 60_000,
  );

  it(
    'backs the full root up online, verifies it, rotates a copy and reads every transaction back',
    async () => {
      const backup = await timed('backup-state --execute (online)', () =>
        ok(['backup-state', '--execute', '--backup-id', 'capacity']),
      );
      const archive = join(root, 'backups', backup.archive.name as string);
      const manifest = join(root, 'backups', backup.manifest.name as string);
      figures['archive'] = `${(statSync(archive).size / 2 ** 20).toFixed(1)} MiB`;
      const doc = JSON.parse(readFileSync(manifest, 'utf8')) as { goals: unknown[] };
      expect(doc.goals).toHaveLength(GOALS);
      const destination = join(dirname(tempRoot('loopx-capacity-verified-')), 'verified');
      await timed('backup-state verify --execute', async () => {
        const r = await loopxAsync([
          'backup-state',
          'verify',
          '--archive',
          archive,
          '--manifest',
          manifest,
          '--destination',
          destination,
          '--execute',
          '--json',
        ]);
        expect(r.status, r.stderr).toBe(0);
      });

      const admin = openPostgres({ url: PG_URL, schema, max: 1 });
      const heads = await workStoreHeads(admin).finally(() => admin.close());
      expect(heads).toHaveLength(GOALS);
      await timed('pg_dump | pg_restore of the schema', () => scene.restoreInto(schema));
      await timed('db rotate (preview and confirm)', async () => {
        const plan = await ok(['db', 'rotate', '--database-url', 'env:LX_CAP_B']);
        expect(plan.later_writes).toMatchObject({ original: 'compared', count: 0 });
        expect(plan.copy_heads).toHaveLength(GOALS);
        await ok(['db', 'rotate', '--database-url', 'env:LX_CAP_B', '--confirm', plan.digest]);
      });

      const copy = openPostgres({ url: scene.url, schema, max: 1 });
      const copied = await workStoreHeads(copy).finally(() => copy.close());
      // Every Goal at its head; the full Goal's head moved by the rotation's own revocation only when it held authority.
      expect(copied.map((h) => [h.goal_id, h.store_identity])).toEqual(heads.map((h) => [h.goal_id, h.store_identity]));
      for (const [i, h] of heads.entries()) expect(copied[i]!.cursor).toBeGreaterThanOrEqual(h.cursor);
      await timed('20,000 transactions read back', async () => {
        const work = await openGoalWork({ root, goal_id: 'g000' });
        try {
          const back: WorkTransaction[] = [];
          for await (const t of work.iterateHistory()) back.push(t);
          expect(back.slice(0, FULL)).toEqual(original);
          for (const t of original.filter((_, n) => n % 97 === 0))
            expect(await work.readReceipt(t.operation_id)).toBeDefined();
        } finally {
          work.close();
        }
      });
      console.log(`capacity figures: ${JSON.stringify(figures)}`);
    },
    30 * 60_000,
  );
});
