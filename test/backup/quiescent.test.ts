/**
 * Quiescent capture, with real processes: admission is closed for the whole capture (a durable
 * gate held by the capturing process), running work drains or the set is downgraded (refused with
 * --require-profile), an effect in flight and a component that moves anyway are downgrades with
 * their codes, and a capturing process SIGKILLed while admission is closed reopens it with its
 * death and publishes nothing.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BACKUP_CAPTURE_FAULT, plan, type RecoverySetCapture } from '../../src/backup/index.js';
import { openSqliteEffectJournal } from '../../src/owners/effect/index.js';
import { admissionState, createBackupWithProfile } from '../../src/runtime/index.js';
import { CLI, STATE_HOME } from '../support/cli.js';
import { commitWork, makeRoot, tempBase } from './support/fixtures.js';

const CHILD = resolve(import.meta.dirname, '../runtime/support/admission-child.ts');
const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

/** A child and a latch on its output lines. */
function child(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): { proc: ChildProcessWithoutNullStreams; line(re: RegExp): Promise<string> } {
  const proc = spawn(process.execPath, ['--import', 'tsx', ...args], {
    env: { ...process.env, XDG_STATE_HOME: STATE_HOME, ...env },
  });
  children.push(proc);
  const lines: string[] = [];
  const waiters: { re: RegExp; res: (l: string) => void }[] = [];
  let buffered = '';
  proc.stdout.on('data', (d: Buffer) => {
    buffered += d.toString();
    const parts = buffered.split('\n');
    buffered = parts.pop()!;
    for (const l of parts) {
      lines.push(l);
      for (const w of waiters.splice(0))
        if (w.re.test(l)) w.res(l);
        else waiters.push(w);
    }
  });
  return {
    proc,
    line: (re) =>
      new Promise((res) =>
        lines.some((l) => re.test(l)) ? res(lines.find((l) => re.test(l))!) : waiters.push({ re, res }),
      ),
  };
}

async function fixture(): Promise<{ base: string; root: string; out: string }> {
  const base = tempBase();
  const root = join(base, 'root');
  await makeRoot(root, { specials: false });
  return { base, root, out: join(base, 'out') };
}

const published = (out: string): string[] =>
  existsSync(out) ? readdirSync(out).filter((n) => n.endsWith('.tar.gz') || n.endsWith('.manifest.json')) : [];

describe('quiescent capture', () => {
  it('with nothing running: every component quiescent under one epoch, and admission open again afterwards', async () => {
    const { root, out } = await fixture();
    const r = await createBackupWithProfile(plan(root, { outputDir: out, backupId: 'q' }), {
      profile: 'quiescent',
      quiesceTimeoutMs: 5_000,
    });
    const set = r.manifest_doc.capture as RecoverySetCapture;
    expect(set).toMatchObject({
      requested_profile: 'quiescent',
      achieved_profile: 'quiescent',
      cross_owner_point_in_time: true,
      downgrades: [],
    });
    expect(set.quiescence).toMatchObject({ drained: true });
    expect(set.quiescence!.epoch).toMatch(/^[0-9a-f]{16,}$/);
    expect(r.manifest_doc.components!.every((c) => c.achieved_profile === 'quiescent')).toBe(true);
    expect(admissionState(root).open).toBe(true);
  });

  it('admission is closed while it captures: a writer in another process is refused with admission_closed', async () => {
    const { root, out } = await fixture();
    let refused = '';
    await createBackupWithProfile(plan(root, { outputDir: out, backupId: 'q' }), {
      profile: 'quiescent',
      quiesceTimeoutMs: 5_000,
      hooks: {
        afterComponent: async (id) => {
          if (id !== 'registry') return;
          refused = await child([CHILD, 'write', root]).line(/^(admitted|refused)/);
        },
      },
    });
    expect(refused).toBe('refused admission_closed');
  });

  it('a writer that drains: the capture waits for it and achieves quiescent', async () => {
    const { root, out } = await fixture();
    const writer = child([CHILD, 'write', root]);
    await writer.line(/^admitted$/);
    const backup = createBackupWithProfile(plan(root, { outputDir: out, backupId: 'q' }), {
      profile: 'quiescent',
      quiesceTimeoutMs: 60_000,
    });
    // The gate closes first (new writers refused) while the admitted writer still runs.
    await expect.poll(() => admissionState(root).open).toBe(false);
    writer.proc.stdin.write('release\n');
    const r = await backup;
    expect((r.manifest_doc.capture as RecoverySetCapture).quiescence!.drained).toBe(true);
    expect((r.manifest_doc.capture as RecoverySetCapture).achieved_profile).toBe('quiescent');
  });

  it('a writer that will not drain: every component downgraded to online (capture_writers_not_drained); --require-profile refuses', async () => {
    const { root, out } = await fixture();
    await child([CHILD, 'write', root]).line(/^admitted$/);
    const r = await createBackupWithProfile(plan(root, { outputDir: out, backupId: 'q' }), {
      profile: 'quiescent',
      quiesceTimeoutMs: 200,
    });
    const set = r.manifest_doc.capture as RecoverySetCapture;
    expect(set.quiescence!.drained).toBe(false);
    expect(set.achieved_profile).toBe('online');
    expect(
      r.manifest_doc.components!.every(
        (c) => c.achieved_profile === 'online' && c.downgrades.includes('capture_writers_not_drained'),
      ),
    ).toBe(true);
    expect(set.downgrades.map((d) => d.code)).toContain('capture_profile_downgraded');
    expect(admissionState(root).open).toBe(true);

    await expect(
      createBackupWithProfile(plan(root, { outputDir: out, backupId: 'q2' }), {
        profile: 'quiescent',
        quiesceTimeoutMs: 200,
        requireProfile: true,
      }),
    ).rejects.toMatchObject({
      code: 'backup_profile_not_achieved',
      details: { requested: 'quiescent', achieved: 'online' },
    });
    expect(published(out).filter((n) => n.startsWith('q2'))).toEqual([]);
    expect(admissionState(root).open).toBe(true);
  });

  it('an effect dispatched without an outcome downgrades the effect component (capture_effect_in_flight)', async () => {
    const { root, out } = await fixture();
    const effects = openSqliteEffectJournal(join(root, 'effects.db'));
    await effects.recordIntent({
      operation_id: 'op-1',
      idempotency_key: 'k-1',
      goal_id: 'alpha',
      kind: 'webhook.deliver',
      target: 'webhook:127.0.0.1:1',
      intent: { n: 1 },
    });
    await effects.beginDispatch('op-1');
    effects.close();
    const r = await createBackupWithProfile(plan(root, { outputDir: out, backupId: 'q' }), {
      profile: 'quiescent',
      quiesceTimeoutMs: 5_000,
    });
    const effect = r.manifest_doc.components!.find((c) => c.owner_kind === 'effect')!;
    expect([effect.in_flight, effect.achieved_profile, effect.downgrades]).toEqual([
      1,
      'online',
      ['capture_effect_in_flight'],
    ]);
    expect((r.manifest_doc.capture as RecoverySetCapture).achieved_profile).toBe('online');
  });

  it('a component that moves anyway (a writer that bypasses admission) is capture_component_moved', async () => {
    const { root, out } = await fixture();
    let workId = '';
    const r = await createBackupWithProfile(plan(root, { outputDir: out, backupId: 'q' }), {
      profile: 'quiescent',
      quiesceTimeoutMs: 5_000,
      hooks: {
        afterComponent: async (id) => {
          if (id.startsWith('work-') && workId === '') {
            workId = id;
            await commitWork(root, 'alpha', 1, { todoId: 't1' });
          }
        },
      },
    });
    const moved = r.manifest_doc.components!.find((c) => c.component_id === workId)!;
    expect([moved.achieved_profile, moved.downgrades, moved.skew.cursor_delta]).toEqual([
      'online',
      ['capture_component_moved'],
      1,
    ]);
    expect(
      r.manifest_doc
        .components!.filter((c) => c.component_id !== workId)
        .every((c) => c.achieved_profile === 'quiescent'),
    ).toBe(true);
    // The set is its weakest required component's.
    expect((r.manifest_doc.capture as RecoverySetCapture).achieved_profile).toBe('online');
  });

  it('the capturing process SIGKILLed while admission is closed: admission reopens with its death, and nothing is published', async () => {
    const { root, out } = await fixture();
    const backup = spawn(
      process.execPath,
      [
        ...CLI,
        'backup-state',
        '--execute',
        '--profile',
        'quiescent',
        '--root',
        root,
        '--output-dir',
        out,
        '--backup-id',
        'killed',
      ],
      {
        env: { ...process.env, XDG_STATE_HOME: STATE_HOME, LOOPX_TEST_FAULT: BACKUP_CAPTURE_FAULT },
      },
    );
    children.push(backup as ChildProcessWithoutNullStreams);
    const exit = await new Promise<NodeJS.Signals | null>((res) => backup.on('exit', (_code, signal) => res(signal)));
    expect(exit).toBe('SIGKILL');
    expect(admissionState(root).open).toBe(true);
    expect(published(out)).toEqual([]);
    // The next writer is admitted at once.
    expect(await child([CHILD, 'write', root]).line(/^(admitted|refused)/)).toBe('admitted');
  });
});
