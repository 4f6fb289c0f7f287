/**
 * A Goal's work kept apart from its root (`goal create --work-provider postgresql`) in a schema
 * that is then restored with PostgreSQL's own tools into a new database: the copy refuses the
 * Goal's writers with a next action naming that Goal (`loopx db rotate --goal …`), `db status`
 * shows the Goal's schema, and `db rotate --goal` — the root itself is on SQLite — rotates it,
 * revokes its leases, supersedes the original and rebinds every Goal record of the root that names
 * the schema. The old writers, on the original and on the early copy, fail in the database.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { openGoalWork } from '../../src/owners/work/index.js';
import { loopxAsync, loopxChild, tempRoot, rel } from '../support/cli.js';
import { PG_URL, describePg, pgSchemas } from '../support/pg.js';
import { expectSchemaValid, holdLease, restoreScene } from '../support/pg-restore.js';

describePg("a Goal's restored work schema is rotated through the Goal", () => {
  // Writers after the restore run in children: a process admits itself to a schema once, for its life
  // (admissionOf, src/store/pg-installation.ts), so in-process commands would share one admission.
  const schema = pgSchemas()();
  const scene = restoreScene('loopx_goal_restored');
  const env = { LX_GW_A: PG_URL, LX_GW_B: scene.url };
  const onCopy = { ...env, LX_GW_A: env.LX_GW_B };
  let root: string;
  const location = (goal: string) => readFileSync(join(root, 'goals', goal, 'work-store.json'), 'utf8');

  beforeAll(async () => {
    Object.assign(process.env, env);
    root = tempRoot('loopx-db-rotate-goal-');
    expect((await loopxAsync(['init', '--root', root], env)).status).toBe(0);
    const create = (goal: string) =>
      loopxAsync(
        [
          'goal',
          'create',
          goal,
          '--title',
          goal,
          '--work-provider',
          'postgresql',
          '--database-url',
          'env:LX_GW_A',
          '--pg-schema',
          schema,
          '--root',
          root,
        ],
        env,
      );
    expect((await create('g1')).stderr).toContain('pg_schema_not_migrated');
    expect((await loopxAsync(['db', 'migrate', '--root', root], env)).status).toBe(0);
    expect((await create('g1')).status).toBe(0);
    expect((await create('g2')).status).toBe(0);
    expect(
      (await loopxAsync(['todo', 'add', '--goal', 'g1', '--title', 'leased work', '--root', root], env)).status,
    ).toBe(0);
    await holdLease(root, 'g1');
  }, 120_000);

  it('refuses the copy with the Goal named, rotates it with --goal, and fences both old writers', async () => {
    // A writer of the original service: every reference it has reaches the original.
    const original = await scene.writer(root, 'g1', { LX_GW_A: env.LX_GW_A, LX_GW_B: env.LX_GW_A });
    expect(await original.add('before the restore')).toEqual({ ok: true });

    await scene.restoreInto(schema);

    const early = await scene.writer(root, 'g1', { LX_GW_A: env.LX_GW_B });
    expect(await early.add('on the copy, too early')).toEqual({ ok: false, code: 'store_restored_pending_rotation' });
    const refused = await loopxChild(['todo', 'add', '--goal', 'g1', '--title', 'x', '--root', root], onCopy);
    expect(refused.status).toBe(3);
    expect(refused.stderr).toContain('store_restored_pending_rotation');
    // The next action names the reference this process reached the copy through, and runs as printed: the rotation's preview.
    expect(refused.stderr).toContain(`loopx db rotate --goal g1 --database-url env:LX_GW_A --root ${rel(root)}`);
    const next = refused.stderr.split('\n').find((l) => l.startsWith('try: '))!;
    const previewed = await loopxAsync(
      [...next.slice(next.indexOf('loopx ') + 'loopx '.length).split(' '), '--json'],
      onCopy,
    );
    expect(previewed.status, previewed.stderr).toBe(0);
    expect(previewed.json()).toMatchObject({ goal_id: 'g1', restore_detected: true, database_url: 'env:LX_GW_A' });

    const status = await loopxAsync(['db', 'status', '--root', root, '--json'], onCopy);
    expect(status.status, status.stderr).toBe(0);
    expectSchemaValid('db-status.schema.json', status.json());
    expect(status.json()).toMatchObject({ provider: 'sqlite', installation: null });
    expect(status.json().goal_work_schemas).toEqual([
      expect.objectContaining({
        database_url: 'env:LX_GW_A',
        schema,
        goals: ['g1', 'g2'],
        refusal: null,
        installation: expect.objectContaining({ state: 'restored_pending_rotation' }),
      }),
    ]);
    // Without --goal there is nothing to rotate: the root is on SQLite.
    expect((await loopxAsync(['db', 'rotate', '--root', root, '--json'], env)).stderr).toContain('db_not_postgresql');
    const asked = await loopxAsync(['db', 'rotate', '--goal', 'g1', '--root', root], onCopy);
    expect(asked.stderr).toContain('db_rotation_url_required');
    expect(asked.stderr).toContain('loopx db rotate --goal g1 --database-url env:LX_GW_A');
    expect((await loopxAsync(['db', 'rotate', '--goal', 'nope', '--root', root, '--json'], env)).stderr).toContain(
      'goal_not_found',
    );

    const preview = await loopxAsync(
      ['db', 'rotate', '--goal', 'g1', '--database-url', 'env:LX_GW_B', '--root', root, '--json'],
      env,
    );
    expect(preview.status, preview.stderr).toBe(0);
    const plan = preview.json();
    expectSchemaValid('db-rotation-plan.schema.json', plan);
    expect(plan).toMatchObject({
      goal_id: 'g1',
      schema,
      restore_detected: true,
      database_url: 'env:LX_GW_B',
      previous_database_url: 'env:LX_GW_A',
      next_restore_generation: 1,
    });
    expect(plan.goals).toEqual([
      { goal_id: 'g1', active_leases: 1, fenced: false },
      { goal_id: 'g2', active_leases: 0, fenced: false },
    ]);
    // A root plan's digest is not this one: confirming without --goal is refused before anything moves.
    expect(
      (
        await loopxAsync(
          ['db', 'rotate', '--database-url', 'env:LX_GW_B', '--confirm', plan.digest, '--root', root, '--json'],
          env,
        )
      ).stderr,
    ).toContain('db_not_postgresql');
    const wrong = await loopxAsync(
      ['db', 'rotate', '--goal', 'g2', '--database-url', 'env:LX_GW_B', '--confirm', 'f'.repeat(64), '--root', root],
      env,
    );
    expect(wrong.stderr).toContain('loopx db rotate --goal g2 --database-url env:LX_GW_B');

    const rotated = await loopxAsync(
      [
        'db',
        'rotate',
        '--goal',
        'g1',
        '--database-url',
        'env:LX_GW_B',
        '--confirm',
        plan.digest,
        '--root',
        root,
        '--json',
      ],
      env,
    );
    expect(rotated.status, rotated.stderr).toBe(0);
    expectSchemaValid('db-rotation.schema.json', rotated.json());
    expect(rotated.json()).toMatchObject({
      goal_id: 'g1',
      restore_generation: 1,
      original: 'superseded',
      database_url: 'env:LX_GW_B',
    });

    // Every Goal of the root in that schema now names the copy; no record holds a URL.
    for (const g of ['g1', 'g2']) {
      expect(location(g)).toContain('"database_url":"env:LX_GW_B"');
      expect(location(g)).not.toContain('postgres://');
    }
    expect(await original.add('after the rotation, on the original')).toEqual({ ok: false, code: 'store_superseded' });
    expect(await early.add('after the rotation, on the copy')).toEqual({ ok: false, code: 'store_writer_stale' });

    const after = await loopxChild(
      ['todo', 'add', '--goal', 'g1', '--title', 'after the rotation', '--root', root, '--json'],
      env,
    );
    expect(after.status, after.stderr).toBe(0);
    expect(
      (await loopxChild(['todo', 'add', '--goal', 'g2', '--title', 'g2 after', '--root', root, '--json'], env)).status,
    ).toBe(0);
    const work = await openGoalWork({ root, goal_id: 'g1' });
    const t1 = await work.getTodo('t1');
    work.close();
    expect(t1?.lease).toMatchObject({ status: 'released', owner: 'worker-a' });
    const later = (await loopxAsync(['db', 'status', '--root', root, '--json'], env)).json();
    expect(later.goal_work_schemas).toEqual([
      expect.objectContaining({
        database_url: 'env:LX_GW_B',
        installation: expect.objectContaining({ state: 'active', restore_generation: 1 }),
      }),
    ]);
  }, 180_000);

  it('db status names a Goal schema it cannot read, instead of failing', async () => {
    const status = await loopxAsync(['db', 'status', '--root', root, '--json'], { LX_GW_A: env.LX_GW_A });
    // LX_GW_B is unset in this environment: the Goal schema's reference does not resolve.
    const missing = await loopxAsync(['db', 'status', '--root', root, '--json'], { LX_GW_B: '' });
    expect(status.status).toBe(0);
    expect(missing.status, missing.stderr).toBe(0);
    expectSchemaValid('db-status.schema.json', missing.json());
    expect(missing.json().goal_work_schemas[0]).toMatchObject({ installation: null, refusal: 'database_url_missing' });
  });
});
