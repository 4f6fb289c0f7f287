/**
 * Every recovery has an end. Two recoveries of one backup by one user, into two destinations: the
 * first paused (`stop:recover.host:supersede.before`) after it minted its lifetime, the second run
 * to `complete` meanwhile. Resumed, the first cannot supersede the lifetime the second already
 * did: it ends `abandoned` — its status names the winning recovery and root, and the one next
 * action sends the operator there — and the lifetime it minted in its own destination is retired
 * through the goal owner. Nothing is stranded: running its apply again answers the same end.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { stopped } from '../support/stops.js';
import { CLI, STATE_HOME } from '../support/cli.js';
import { okAsync, planAsync, sourceWithBackup, type Doc, type Source } from './support/adopt.js';

let sink: WebhookSink;
let s: Source;

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  s = await sourceWithBackup(sink, { afterCapture: false });
}, 180_000);
afterAll(async () => {
  await sink.close();
});

describe('a recovery that loses the race for its Goal', () => {
  it('ends abandoned, naming the winner; the lifetime it minted is retired; its apply run again answers the same end', async () => {
    const a = await planAsync(s, 'first');
    const b = await planAsync(s, 'second');
    const first = spawn(
      process.execPath,
      [
        ...CLI,
        'recover',
        'apply',
        '--destination',
        a.destination,
        '--confirm',
        a.doc.plan_digest,
        '--authority-dir',
        s.authority,
        '--json',
      ],
      {
        env: { ...process.env, XDG_STATE_HOME: STATE_HOME, LOOPX_TEST_FAULT: 'stop:recover.host:supersede.before' },
      },
    );
    let out = '';
    first.stdout.on('data', (d) => (out += d));
    const ended = new Promise<number | null>((r) => first.on('close', (code) => r(code)));
    await expect.poll(() => stopped(first.pid!), { timeout: 60_000 }).toBe(true);
    const won = await okAsync(s, ['recover', 'apply', '--destination', b.destination, '--confirm', b.doc.plan_digest]);
    expect(won.state).toBe('complete');
    first.kill('SIGCONT');
    expect(await ended).toBe(0);
    const lost = JSON.parse(out) as Doc;
    expect(lost.state).toBe('abandoned');
    expect(lost.retryable).toBe(false);
    const minted = lost.goal.new_instance_id as string;
    expect(lost.ended).toEqual({
      reason: 'superseded_elsewhere',
      winner_recovery_id: won.recovery_id,
      winner_root: expect.stringMatching(/^root_/),
      retired_instance_id: minted,
    });
    expect(lost.next_action).toMatch(
      /^continue the Goal in the root the other recovery made \(root id root_[0-9a-f]+\)/,
    );
    // Compensation: the lifetime minted in the losing destination is retired.
    expect((await okAsync(s, ['goal', 'show', 'launch', '--root', a.destination])).lifecycle).toBe('retired');
    expect((await okAsync(s, ['goal', 'show', 'launch', '--root', b.destination])).lifecycle).not.toBe('retired');
    // Nothing strands: the status, and the apply run again, answer the same end.
    expect((await okAsync(s, ['recover', 'status', '--destination', a.destination])).state).toBe('abandoned');
    const again = await okAsync(s, [
      'recover',
      'apply',
      '--destination',
      a.destination,
      '--confirm',
      a.doc.plan_digest,
    ]);
    expect(again).toMatchObject({ state: 'abandoned', ended: lost.ended, next_action: lost.next_action });
  }, 120_000);
});
