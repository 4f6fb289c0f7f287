/**
 * An administrative restore of a root's PostgreSQL schema, with real tools and real processes: the
 * schema is copied with `pg_dump` / `pg_restore` into a new database; the copy is detected as
 * restored (its database and table are not the recorded ones) and admits no write —
 * `store_restored_pending_rotation` — until `loopx db rotate` asks for the URL reference again,
 * previews a digest-bound plan and, confirmed, mints a new store identity and restore generation,
 * revokes every lease, supersedes the original service and only then admits writers. A writer
 * process still connected to the original service and one admitted on the copy before the
 * rotation both fail their next write, in the database. A restore in place (the schema dropped
 * and restored into the same database) is detected too.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { openGoalWork } from '../../src/owners/work/index.js';
import { migratePostgres, openPostgres, readInstallation } from '../../src/store/index.js';
import { loopx, loopxAsync, loopxChild, tempRoot } from '../support/cli.js';
import { PG_URL, describePg, pgSchemas } from '../support/pg.js';
import { expectSchemaValid as valid, holdLease, restoreScene } from '../support/pg-restore.js';

describePg('a restored PostgreSQL schema is rotated before it admits a writer', () => {
  // Writers after the restore run in children: a process admits itself to a schema once, for its life
  // (admissionOf, src/store/pg-installation.ts), so in-process commands would share one admission.
  const schema = pgSchemas()();
  const scene = restoreScene('loopx_restored');
  const env = { LX_ROT_A: PG_URL, LX_ROT_B: scene.url };
  let root: string;

  beforeAll(async () => {
    Object.assign(process.env, env);
    root = tempRoot('loopx-db-rotate-');
    expect(
      (
        await loopxAsync(
          ['init', '--root', root, '--store', 'postgresql', '--database-url', 'env:LX_ROT_A', '--pg-schema', schema],
          env,
        )
      ).status,
    ).toBe(0);
    expect((await loopxAsync(['db', 'migrate', '--root', root], env)).status).toBe(0);
    expect((await loopxAsync(['goal', 'create', 'g1', '--title', 'restored goal', '--root', root], env)).status).toBe(
      0,
    );
    expect(
      (await loopxAsync(['todo', 'add', '--goal', 'g1', '--title', 'leased work', '--root', root], env)).status,
    ).toBe(0);
    await holdLease(root, 'g1');
  }, 120_000);

  it('detects the copy, refuses its writers, rotates it on confirmation, and fences both old writers', async () => {
    // A writer of the original service, admitted before anything happens (every reference it has reaches the original).
    const original = await scene.writer(root, 'g1', { LX_ROT_A: env.LX_ROT_A, LX_ROT_B: env.LX_ROT_A });
    expect(await original.add('before the restore')).toEqual({ ok: true });

    // The operator restores the schema into a new database with PostgreSQL's own tools.
    await scene.restoreInto(schema);

    // A process pointed at the copy before the rotation is admitted under the copied identity, and refused.
    const early = await scene.writer(root, 'g1', { LX_ROT_A: env.LX_ROT_B, LX_ROT_B: env.LX_ROT_B });
    expect(await early.add('on the copy, too early')).toEqual({ ok: false, code: 'store_restored_pending_rotation' });
    const onCopy = { ...env, LX_ROT_A: env.LX_ROT_B };
    const refused = await loopxChild(['todo', 'add', '--goal', 'g1', '--title', 'x', '--root', root, '--json'], onCopy);
    expect(refused.status).toBe(3);
    expect(refused.stderr).toContain('store_restored_pending_rotation');

    const status = await loopxAsync(['db', 'status', '--root', root, '--json'], onCopy);
    expect(status.status, status.stderr).toBe(0);
    valid('db-status.schema.json', status.json());
    expect(status.json().installation).toMatchObject({
      state: 'restored_pending_rotation',
      recorded_state: 'active',
      restore_generation: 0,
    });
    expect(status.json().installation.changed).toEqual(expect.arrayContaining(['database_oid', 'table_oid']));

    // The copy asks for its URL again; the plan binds the root to it.
    const asked = await loopxAsync(['db', 'rotate', '--root', root, '--json'], onCopy);
    expect(asked.status).toBe(3);
    expect(asked.stderr).toContain('db_rotation_url_required');
    const preview = await loopxAsync(['db', 'rotate', '--database-url', 'env:LX_ROT_B', '--root', root, '--json'], env);
    expect(preview.status, preview.stderr).toBe(0);
    const plan = preview.json();
    valid('db-rotation-plan.schema.json', plan);
    expect(plan).toMatchObject({
      restore_detected: true,
      restore_generation: 0,
      next_restore_generation: 1,
      database_url: 'env:LX_ROT_B',
      previous_database_url: 'env:LX_ROT_A',
    });
    expect(plan.goals).toEqual([{ goal_id: 'g1', active_leases: 1, fenced: false }]);
    const wrong = await loopxAsync(
      ['db', 'rotate', '--database-url', 'env:LX_ROT_B', '--confirm', 'f'.repeat(64), '--root', root, '--json'],
      env,
    );
    expect(wrong.status).toBe(4);
    expect(wrong.stderr).toContain('db_rotation_confirm_mismatch');

    const rotated = await loopxAsync(
      ['db', 'rotate', '--database-url', 'env:LX_ROT_B', '--confirm', plan.digest, '--root', root, '--json'],
      env,
    );
    expect(rotated.status, rotated.stderr).toBe(0);
    valid('db-rotation.schema.json', rotated.json());
    expect(rotated.json()).toMatchObject({
      restore_generation: 1,
      original: 'superseded',
      database_url: 'env:LX_ROT_B',
    });
    expect(rotated.json().store_identity).not.toBe(plan.store_identity);
    expect(rotated.json().revoked).toEqual([{ goal_id: 'g1', active_leases: 1, fenced: false, result: 'revoked' }]);

    // Both old writers fail their next write, in the database.
    expect(await original.add('after the rotation, on the original')).toEqual({ ok: false, code: 'store_superseded' });
    expect(await early.add('after the rotation, on the copy')).toEqual({ ok: false, code: 'store_writer_stale' });

    // A new process, bound by the root to the copy, writes; the lease held before the restore is gone.
    const after = await loopxChild(
      ['todo', 'add', '--goal', 'g1', '--title', 'after the rotation', '--root', root, '--json'],
      env,
    );
    expect(after.status, after.stderr).toBe(0);
    const work = await openGoalWork({ root, goal_id: 'g1' });
    const t1 = await work.getTodo('t1');
    work.close();
    expect(t1?.lease).toMatchObject({ status: 'released', owner: 'worker-a' });
    expect((await loopxAsync(['db', 'status', '--root', root, '--json'], env)).json().installation).toMatchObject({
      state: 'active',
      restore_generation: 1,
      changed: [],
    });

    // The root holds references, never a URL.
    const config = readFileSync(join(root, 'machine', 'configuration.json'), 'utf8');
    expect(config).toContain('env:LX_ROT_B');
    expect(config).not.toContain('postgres://');
    expect(statSync(join(root, 'machine', 'configuration.json')).mode & 0o077).toBe(0);
  }, 180_000);

  it('a rotation killed midway refuses writers until it is run again, and then revokes nothing twice', async () => {
    // An operator rotates a schema loopx did not see restored (no URL needed); a lease is held again.
    const work = await openGoalWork({ root, goal_id: 'g1' });
    const t1 = (await work.getTodo('t1'))!;
    await work.acquireLease({
      operation_id: 'lease-2',
      todo_id: 't1',
      owner: 'worker-b',
      execution_key: 'exec-b',
      ttl_ms: 3_600_000,
      expected_version: t1.lease!.version,
    });
    work.close();
    const plan = (await loopxAsync(['db', 'rotate', '--root', root, '--json'], env)).json();
    expect(plan).toMatchObject({
      restore_detected: false,
      state: 'active',
      restore_generation: 1,
      next_restore_generation: 2,
    });
    const killed = loopx(
      ['db', 'rotate', '--confirm', plan.digest, '--database-url', 'env:LX_ROT_B', '--root', root, '--json'],
      {
        ...env,
        LOOPX_TEST_FAULT: 'db.rotate.after-revoke',
      },
    );
    expect(killed.signal).toBe('SIGKILL');

    // Midway: the new generation is minted, the lease revoked, and no writer is admitted.
    expect((await loopxAsync(['db', 'status', '--root', root, '--json'], env)).json().installation).toMatchObject({
      state: 'rotating',
      restore_generation: 2,
    });
    expect(
      (await loopxChild(['todo', 'add', '--goal', 'g1', '--title', 'midway', '--root', root, '--json'], env)).stderr,
    ).toContain('store_restored_pending_rotation');

    // Run again: the plan says where it stopped; confirmed, it finishes without a second revocation.
    const again = (await loopxAsync(['db', 'rotate', '--root', root, '--json'], env)).json();
    expect(again).toMatchObject({ state: 'rotating', restore_generation: 2, next_restore_generation: 2 });
    const done = await loopxAsync(['db', 'rotate', '--confirm', again.digest, '--root', root, '--json'], env);
    expect(done.status, done.stderr).toBe(0);
    expect(done.json()).toMatchObject({
      restore_generation: 2,
      original: 'not_named',
      revoked: [{ goal_id: 'g1', result: 'already' }],
    });
    const after = await openGoalWork({ root, goal_id: 'g1' });
    const operations: string[] = [];
    for await (const t of after.iterateHistory()) operations.push(t.receipt.operation);
    after.close();
    expect(operations.filter((o) => o === 'revoke_authority')).toHaveLength(2); // one per rotation
    expect(
      (await loopxChild(['todo', 'add', '--goal', 'g1', '--title', 'after', '--root', root, '--json'], env)).status,
    ).toBe(0);
  }, 180_000);
});

describePg('a schema restored in place', () => {
  const schemas = pgSchemas();
  it('is a restored copy: its table is not the recorded one, and it admits no write', async () => {
    const schema = schemas();
    const db = openPostgres({ url: PG_URL, schema, max: 1 });
    try {
      await migratePostgres(db, 'loopx', []);
      const dump = execFileSync('pg_dump', ['-d', PG_URL, '-n', schema, '-Fc'], { maxBuffer: 64 << 20 });
      await db.query(`DROP SCHEMA "${schema}" CASCADE`);
      execFileSync('pg_restore', ['-d', PG_URL, '--no-owner'], { input: dump });
      const view = await db.transaction((q) => readInstallation(q));
      expect(view).toMatchObject({ state: 'restored_pending_rotation', changed: ['table_oid'] });
      await expect(
        db.query('SELECT loopx_admit($1, $2)', [view!.store_identity, view!.restore_generation]),
      ).rejects.toMatchObject({ code: 'LXR01' });
    } finally {
      await db.close();
    }
  });
});
