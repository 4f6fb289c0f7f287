/**
 * What `loopx recover` refuses, and that a refusal changes nothing: a Goal the backup does not
 * hold, an occupied or misplaced destination (in a root, in the run authority — named or the default —), a legacy (v0) backup, a plan whose world changed
 * before its first step (a destination no longer empty, a workspace member altered), a planned
 * destination opened as a root before its apply, a writer in a half-adopted root, an abandoned
 * recovery, an abort after the first step, and a second recovery of a lifetime another recovery
 * already superseded. Each case as its own user (its own run authority) where the run authority
 * matters.
 */
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { STATE_HOME, loopxAsync } from '../support/cli.js';
import { okAsync, sourceWithBackup, type Source } from './support/adopt.js';

let sink: WebhookSink;
let s: Source;
beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  s = await sourceWithBackup(sink, { afterCapture: false });
}, 240_000);
afterAll(async () => {
  await sink.close();
});

/** A fresh user (run authority) and a destination path that does not exist yet. */
const fresh = () => {
  const dir = mkdtempSync(join(tmpdir(), 'loopx-adopt-refuse-'));
  return { authority: join(dir, 'authority'), destination: join(dir, 'recovered'), dir };
};
const refused = async (authority: string, args: readonly string[]) => {
  const r = await loopxAsync([...args, '--authority-dir', authority, '--json']);
  return { status: r.status, code: r.status === 0 ? undefined : (r.json().error.code as string) };
};
const planIn = (u: ReturnType<typeof fresh>) =>
  okAsync(u, [
    'recover',
    'plan',
    '--from',
    s.workspace,
    '--goal',
    'launch',
    '--destination',
    u.destination,
    '--root',
    s.root,
  ]);

describe('loopx recover refuses, and a refusal changes nothing', () => {
  it('plan: a Goal the backup does not hold, an occupied destination, a destination inside a root', async () => {
    const u = fresh();
    expect(
      await refused(u.authority, [
        'recover',
        'plan',
        '--from',
        s.workspace,
        '--goal',
        'nope',
        '--destination',
        u.destination,
      ]),
    ).toEqual({
      status: 3,
      code: 'recover_goal_not_in_backup',
    });
    expect(existsSync(u.destination)).toBe(false);
    mkdirSync(u.destination, { mode: 0o700 });
    writeFileSync(join(u.destination, 'keep.txt'), 'mine');
    expect(
      await refused(u.authority, [
        'recover',
        'plan',
        '--from',
        s.workspace,
        '--goal',
        'launch',
        '--destination',
        u.destination,
      ]),
    ).toEqual({
      status: 4,
      code: 'recover_destination_not_empty',
    });
    expect(readdirSync(u.destination)).toEqual(['keep.txt']);
    const inside = await refused(u.authority, [
      'recover',
      'plan',
      '--from',
      s.workspace,
      '--goal',
      'launch',
      '--destination',
      join(s.root, 'nested'),
      '--root',
      s.root,
    ]);
    expect(inside).toEqual({ status: 3, code: 'verify_destination_inside_runtime_root' });
    expect(existsSync(join(s.root, 'nested'))).toBe(false);
    // Inside the run authority, named or the default one ($XDG_STATE_HOME/loopx/run-authority, the suite's private one).
    const named = await refused(u.authority, [
      'recover',
      'plan',
      '--from',
      s.workspace,
      '--goal',
      'launch',
      '--destination',
      join(u.authority, 'restored'),
    ]);
    expect(named).toEqual({ status: 3, code: 'verify_destination_inside_run_authority' });
    const dflt = join(STATE_HOME, 'loopx', 'run-authority');
    const byDefault = await loopxAsync([
      'recover',
      'plan',
      '--from',
      s.workspace,
      '--goal',
      'launch',
      '--destination',
      join(dflt, 'restored'),
      '--json',
    ]);
    expect(byDefault.status, byDefault.stdout).toBe(3);
    expect(byDefault.json().error.code).toBe('verify_destination_inside_run_authority');
    expect(existsSync(join(dflt, 'restored'))).toBe(false);
  }, 180_000);

  it('apply: a plan whose destination is no longer empty is stale; abort abandons it for good', async () => {
    const u = fresh();
    const plan = await planIn(u);
    writeFileSync(join(u.destination, 'intruder'), 'x');
    expect(
      await refused(u.authority, ['recover', 'apply', '--destination', u.destination, '--confirm', plan.plan_digest]),
    ).toEqual({ status: 4, code: 'recover_plan_stale' });
    expect(existsSync(join(u.destination, 'registry.json'))).toBe(false);
    expect((await okAsync(u, ['recover', 'abort', '--destination', u.destination])).state).toBe('abandoned');
    expect(
      await refused(u.authority, ['recover', 'apply', '--destination', u.destination, '--confirm', plan.plan_digest]),
    ).toEqual({ status: 4, code: 'recover_abandoned' });
  }, 180_000);

  it('a planned destination is no root until the apply makes it one: reads, writers and init are refused, and change nothing', async () => {
    const u = fresh();
    const plan = await planIn(u);
    for (const args of [
      ['goal', 'show', 'launch', '--root', u.destination],
      ['goal', 'list', '--root', u.destination],
      ['todo', 'list', '--goal', 'launch', '--root', u.destination],
      ['todo', 'add', '--goal', 'launch', '--title', 'early', '--root', u.destination],
      ['run', 'list', '--root', u.destination],
      ['init', '--root', u.destination],
    ]) {
      expect(await refused(u.authority, args), args.join(' ')).toEqual({
        status: 4,
        code: 'recover_destination_not_applied',
      });
    }
    expect(readdirSync(u.destination)).toEqual(['recovery']);
    const applied = await loopxAsync([
      'recover',
      'apply',
      '--destination',
      u.destination,
      '--confirm',
      plan.plan_digest,
      '--authority-dir',
      u.authority,
      '--json',
    ]);
    expect(applied.status, applied.stderr).toBe(0);
    expect((await okAsync(u, ['goal', 'show', 'launch', '--root', u.destination])).goal_id).toBe('launch');
  }, 180_000);

  it('a half-adopted root takes no writer until the adoption finishes; the refusal names the way forward', async () => {
    const u = fresh();
    const plan = await planIn(u);
    const crashed = await loopxAsync(
      [
        'recover',
        'apply',
        '--destination',
        u.destination,
        '--confirm',
        plan.plan_digest,
        '--authority-dir',
        u.authority,
        '--json',
      ],
      {
        LOOPX_TEST_FAULT: 'recover.work:import_inert.after',
      },
    );
    expect(crashed.signal).toBe('SIGKILL');
    for (const args of [
      ['todo', 'add', '--goal', 'launch', '--title', 'too early', '--root', u.destination],
      ['todo', 'update', 't3', '--goal', 'launch', '--status', 'done', '--root', u.destination],
      ['goal', 'pause', 'launch', '--root', u.destination],
    ]) {
      expect(await refused(u.authority, args), args.join(' ')).toEqual({
        status: 4,
        code: 'recover_adoption_incomplete',
      });
    }
    const run = await loopxAsync([
      'work',
      'run',
      '--goal',
      'launch',
      '--agent',
      s.agents.cont,
      '--root',
      u.destination,
      '--authority-dir',
      u.authority,
      '--json',
    ]);
    expect(run.status).toBe(4);
    // The refusal names no digest read from the plan file: it points at the status, which names the one `recover plan` printed.
    const toStatus = run.json().error.next_action as string;
    expect(toStatus).toContain('loopx recover status --destination');
    expect(toStatus).not.toContain(plan.plan_digest);
    const next = (await okAsync(u, ['recover', 'status', '--destination', u.destination])).next_action as string;
    expect(next).toContain(`--confirm ${plan.plan_digest}`);
    // Reads still answer; the history is as the crash left it.
    expect((await okAsync(u, ['goal', 'show', 'launch', '--root', u.destination])).goal_id).toBe('launch');
    const finished = await loopxAsync([
      ...next.slice(next.indexOf('loopx ') + 'loopx '.length).split(' '),
      '--authority-dir',
      u.authority,
      '--json',
    ]);
    expect(finished.status, finished.stderr).toBe(0);
    // Every step is done. The other cases here recover the same backup under other run authorities
    // against the same receiver, which follows whichever lifetime raised its fence first: this
    // recovery may be held there (`receiver_fence_conflict`), and by nothing else.
    const done = finished.json();
    expect(done.phase.completed_steps).toBe(done.phase.total_steps);
    expect(['complete', 'reconciliation_held']).toContain(done.state);
    expect(done.holds.filter((h: { code: string }) => h.code !== 'receiver_fence_conflict')).toEqual([]);
    // Writers are admitted once it is complete; while held, none is (its effects are not reconciled).
    const now = ['todo', 'add', '--goal', 'launch', '--title', 'now', '--root', u.destination];
    if (done.state === 'complete') expect((await okAsync(u, now)).result).toBe('applied');
    else expect(await refused(u.authority, now)).toEqual({ status: 4, code: 'recover_reconciliation_held' });
  }, 180_000);

  it('apply: a workspace member altered after the plan is refused before any change', async () => {
    const u = fresh();
    const plan = await planIn(u);
    const member = join(s.workspace, 'workspace', 'configuration-backup.json');
    const original = readFileSync(member);
    appendFileSync(member, ' ');
    try {
      expect(
        await refused(u.authority, ['recover', 'apply', '--destination', u.destination, '--confirm', plan.plan_digest]),
      ).toEqual({
        status: 3,
        code: 'recover_workspace_changed',
      });
      expect(readdirSync(u.destination)).toEqual(['recovery']);
    } finally {
      writeFileSync(member, original);
    }
  }, 180_000);

  it('a lifetime is recovered once: a second recovery of it is refused, and abort after the first step is too late', async () => {
    const u = fresh();
    const first = await planIn(u);
    const second = { ...fresh(), authority: u.authority };
    const other = await planIn(second);
    const applied = await loopxAsync([
      'recover',
      'apply',
      '--destination',
      u.destination,
      '--confirm',
      first.plan_digest,
      '--authority-dir',
      u.authority,
      '--json',
    ]);
    expect(applied.status, applied.stderr).toBe(0);
    expect(
      await refused(u.authority, [
        'recover',
        'apply',
        '--destination',
        second.destination,
        '--confirm',
        other.plan_digest,
      ]),
    ).toEqual({
      status: 4,
      code: 'recover_lifetime_superseded_elsewhere',
    });
    expect(readdirSync(second.destination)).toEqual(['recovery']);
    expect(await refused(u.authority, ['recover', 'abort', '--destination', u.destination])).toEqual({
      status: 4,
      code: 'recover_abort_too_late',
    });
  }, 180_000);
});
