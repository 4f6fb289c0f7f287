/**
 * A rotation never drops the original's later writes without a word. The schema is copied with
 * `pg_dump` / `pg_restore` into a new database; Todos are then written on the original. Rotating
 * the copy previews the original's work past the copy's heads (Goal by Goal) inside the digest —
 * another later write changes the digest — and is refused `db_rotation_later_writes` until the
 * operator names their count with `--abandon-later-writes`; the receipt records the copy's heads
 * and the abandoned count. An original that cannot be reached is said to be so.
 */
import { beforeAll, expect, it } from 'vitest';
import { loopxAsync, loopxChild, tempRoot } from '../support/cli.js';
import { PG_URL, describePg, pgSchemas } from '../support/pg.js';
import { expectSchemaValid as valid, restoreScene } from '../support/pg-restore.js';

describePg('db rotate and the original’s later writes', () => {
  // Writers after the restore run in children: a process admits itself to a schema once, for its life
  // (admissionOf, src/store/pg-installation.ts), so in-process commands would share one admission.
  const schema = pgSchemas()();
  const scene = restoreScene('loopx_later');
  const env = { LX_LW_A: PG_URL, LX_LW_B: scene.url };
  let root: string;

  beforeAll(async () => {
    Object.assign(process.env, env);
    root = tempRoot('loopx-db-later-');
    expect(
      (
        await loopxAsync(
          ['init', '--root', root, '--store', 'postgresql', '--database-url', 'env:LX_LW_A', '--pg-schema', schema],
          env,
        )
      ).status,
    ).toBe(0);
    expect((await loopxAsync(['db', 'migrate', '--root', root], env)).status).toBe(0);
    expect((await loopxAsync(['goal', 'create', 'g1', '--title', 'restored goal', '--root', root], env)).status).toBe(
      0,
    );
    expect(
      (await loopxAsync(['todo', 'add', '--goal', 'g1', '--title', 'in the copy', '--root', root], env)).status,
    ).toBe(0);
    await scene.restoreInto(schema);
    // Written on the original after the copy was taken (the root still points at the original).
    expect(
      (await loopxChild(['todo', 'add', '--goal', 'g1', '--title', 'after the copy', '--root', root], env)).status,
    ).toBe(0);
  }, 120_000);

  const preview = async (extra: Record<string, string> = {}) => {
    const r = await loopxAsync(['db', 'rotate', '--database-url', 'env:LX_LW_B', '--root', root, '--json'], {
      ...env,
      ...extra,
    });
    expect(r.status, r.stderr).toBe(0);
    valid('db-rotation-plan.schema.json', r.json());
    return r.json();
  };

  it('previews the later writes inside the digest, refuses without their count, and rotates with it', async () => {
    const first = await preview();
    expect(first.copy_heads).toEqual([{ goal_id: 'g1', cursor: expect.any(Number) }]);
    const copied = first.copy_heads[0].cursor as number;
    expect(first.later_writes).toEqual({
      original: 'compared',
      count: 1,
      goals: [{ goal_id: 'g1', copy_cursor: copied, original_cursor: copied + 1, later: 1 }],
    });
    const human = await loopxAsync(['db', 'rotate', '--database-url', 'env:LX_LW_B', '--root', root], env);
    expect(human.stdout).toContain('the original database has 1 work write(s) made after this copy was taken');
    expect(human.stdout).toContain('--abandon-later-writes 1');

    // One more write on the original: another count, another digest.
    expect(
      (await loopxChild(['todo', 'add', '--goal', 'g1', '--title', 'later still', '--root', root], env)).status,
    ).toBe(0);
    const plan = await preview();
    expect(plan.later_writes.count).toBe(2);
    expect(plan.digest).not.toBe(first.digest);
    expect(
      (
        await loopxAsync(
          [
            'db',
            'rotate',
            '--database-url',
            'env:LX_LW_B',
            '--confirm',
            first.digest,
            '--abandon-later-writes',
            '1',
            '--root',
            root,
            '--json',
          ],
          env,
        )
      ).json().error.code,
    ).toBe('db_rotation_confirm_mismatch');

    // Confirmed without the count, or with another one: refused, nothing rotated.
    for (const extra of [[], ['--abandon-later-writes', '1']]) {
      const refused = await loopxAsync(
        ['db', 'rotate', '--database-url', 'env:LX_LW_B', '--confirm', plan.digest, ...extra, '--root', root, '--json'],
        env,
      );
      expect(refused.status, refused.stdout).toBe(3);
      expect(refused.json().error).toMatchObject({
        code: 'db_rotation_later_writes',
        details: { later_writes: 2, goals: [{ goal_id: 'g1', later: 2 }] },
      });
    }
    expect(
      (await loopxAsync(['db', 'status', '--root', root, '--json'], { ...env, LX_LW_A: env.LX_LW_B })).json()
        .installation,
    ).toMatchObject({
      state: 'restored_pending_rotation',
    });

    // The refusal's next action, run as printed, rotates and records what it abandoned.
    const next = (
      await loopxAsync(
        ['db', 'rotate', '--database-url', 'env:LX_LW_B', '--confirm', plan.digest, '--root', root, '--json'],
        env,
      )
    ).json().error.next_action as string;
    expect(next).toContain(`--confirm ${plan.digest} --abandon-later-writes 2`);
    const rotated = await loopxAsync(
      [...next.slice(next.indexOf('loopx ') + 'loopx '.length).split(' '), '--json'],
      env,
    );
    expect(rotated.status, rotated.stderr).toBe(0);
    valid('db-rotation.schema.json', rotated.json());
    expect(rotated.json()).toMatchObject({
      original: 'superseded',
      copy_heads: [{ goal_id: 'g1', cursor: copied }],
      abandoned_later_writes: 2,
    });
  }, 180_000);

  it('says so when the original cannot be reached, or is not named: the later writes cannot be counted', async () => {
    // The root is bound to the rotated copy (LX_LW_B); named through another reference, the previous one reaches nothing.
    const gone = { ...env, LX_LW_C: env.LX_LW_B, LX_LW_B: 'postgres://127.0.0.1:9/nothing' };
    const r = await loopxAsync(['db', 'rotate', '--database-url', 'env:LX_LW_C', '--root', root, '--json'], gone);
    expect(r.status, r.stderr).toBe(0);
    expect(r.json().later_writes).toEqual({ original: 'unreachable', count: null, goals: [] });
    expect(
      (await loopxAsync(['db', 'rotate', '--database-url', 'env:LX_LW_C', '--root', root], gone)).stdout,
    ).toContain('the original database cannot be reached');
    const unnamed = await preview();
    expect(unnamed.later_writes).toEqual({ original: 'not_named', count: null, goals: [] });
  }, 60_000);
});
