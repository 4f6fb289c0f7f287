/**
 * A recovery whose destination fills during `loopx recover apply` is refused
 * `recover_capacity_free_space` (exit 3) with the one next action — free space, run the same apply
 * — never `internal_error` or an owner's own code; what it had done is kept, and the same apply,
 * once there is room, completes. The destination is a real tmpfs mounted by this test.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { loopxAsync } from '../support/cli.js';
import { mountTmpfs, type Tmpfs } from '../support/tmpfs.js';
import { okAsync, sourceWithBackup, type Doc, type Source } from './support/adopt.js';

const MiB = 1024 * 1024;
let sink: WebhookSink;
let s: Source;
let fs: Tmpfs | undefined;

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  s = await sourceWithBackup(sink, { afterCapture: false });
  fs = mountTmpfs(join(s.dir, 'small'), 16 * MiB);
}, 180_000);
afterAll(async () => {
  fs?.unmount();
  await sink.close();
});

describe('a destination that fills during apply', () => {
  it('is recover_capacity_free_space with its next action; freed, the same apply completes', async (ctx) => {
    if (!fs) return ctx.skip(); // no tmpfs here (mountTmpfs throws under CI=true instead)
    const destination = join(fs!.dir, 'recovered');
    const doc = await okAsync(s, [
      'recover',
      'plan',
      '--from',
      s.workspace,
      '--goal',
      'launch',
      '--destination',
      destination,
      '--root',
      s.root,
    ]);
    fs!.leave(48 * 1024, 'filler');
    const r = await loopxAsync([
      'recover',
      'apply',
      '--destination',
      destination,
      '--confirm',
      doc.plan_digest,
      '--authority-dir',
      s.authority,
      '--json',
    ]);
    expect(r.status, r.stdout + r.stderr).toBe(3);
    const err = (JSON.parse(r.stdout) as Doc).error;
    expect(err.code).toBe('recover_capacity_free_space');
    expect(err.next_action).toMatch(
      /^free space, then run the same apply: loopx recover apply --destination .* --confirm [0-9a-f]{64}/,
    );
    rmSync(join(fs!.dir, 'filler'));
    const done = await okAsync(s, ['recover', 'apply', '--destination', destination, '--confirm', doc.plan_digest]);
    expect(done.state).toBe('complete');
  }, 120_000);
});
