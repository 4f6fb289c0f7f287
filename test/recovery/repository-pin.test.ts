/**
 * A recovery planned from a repository's backup pins it there (`recover plan --repo R`): every
 * forget, on any host, keeps it while the recovery runs; the pin goes when the recovery completes
 * or is abandoned. Through the real CLI, over a directory repository holding the source's backup.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { Repository, pins } from '../../src/repository/index.js';
import { okAsync, sourceWithBackup, type Source } from './support/adopt.js';
import { loopxAsync } from '../support/cli.js';

let sink: WebhookSink;
let s: Source;
let repo: string;

const local = (path: string) => ({
  path,
  size_bytes: statSync(path).size,
  sha256: createHash('sha256').update(readFileSync(path)).digest('hex'),
});
const facts = (at: string) => ({
  created_at: at,
  root_id: 'root_src',
  producer_version: '0.1.0',
  capture_profile: 'quiescent',
});

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  s = await sourceWithBackup(sink);
  // The repository holds the backup the workspace was verified from (b1), and a newer one.
  repo = join(s.dir, 'offsite');
  const r = await Repository.init(repo);
  const pair = {
    archive: local(join(s.dir, 'backups/b1.tar.gz')),
    manifest: local(join(s.dir, 'backups/b1.manifest.json')),
  };
  await r.publish('b1', pair, facts('2026-12-01T00:00:00.000Z'));
  await r.publish('b2', pair, facts('2026-12-02T00:00:00.000Z'));
  await r.close();
}, 240_000);
afterAll(async () => {
  await sink.close();
});

async function pinned(): Promise<string[]> {
  const r = await Repository.open(repo);
  try {
    return (await pins(r)).map((p) => p.backup_id);
  } finally {
    await r.close();
  }
}

const planInto = (name: string) =>
  okAsync(s, [
    'recover',
    'plan',
    '--from',
    s.workspace,
    '--goal',
    'launch',
    '--destination',
    join(s.dir, name),
    '--repo',
    repo,
    '--root',
    s.root,
  ]);

describe('recover plan --repo', () => {
  it('pins the backup until the recovery is abandoned; forget keeps it meanwhile', async () => {
    await planInto('abandoned');
    expect(await pinned()).toEqual(['b1']);
    const dry = await okAsync(s, ['repo', 'forget', '--repo', repo, '--keep-last', '1', '--dry-run']);
    expect(dry.forget).toEqual([]);
    expect(dry.keep.find((k: { backup_id: string }) => k.backup_id === 'b1').reasons).toEqual(['pinned']);
    await okAsync(s, ['recover', 'abort', '--destination', join(s.dir, 'abandoned'), '--root', s.root]);
    expect(await pinned()).toEqual([]);
  }, 180_000);

  it('a repository that cannot take the pin: the plan is refused and not kept, so the same command runs again', async () => {
    const destination = join(s.dir, 'unpinned');
    const args = ['recover', 'plan', '--from', s.workspace, '--goal', 'launch', '--destination', destination];
    const refused = await loopxAsync([
      ...args,
      '--repo',
      join(s.dir, 'no-repository-here'),
      '--root',
      s.root,
      '--authority-dir',
      s.authority,
      '--json',
    ]);
    expect(refused.status, refused.stdout).not.toBe(0);
    expect(refused.json().error.code).toBe('repo_not_initialized');
    expect(existsSync(destination)).toBe(false);
    await planInto('unpinned');
    expect(await pinned()).toEqual(['b1']);
    await okAsync(s, ['recover', 'abort', '--destination', destination, '--root', s.root]);
    expect(await pinned()).toEqual([]);
  }, 180_000);

  it('pins the backup until the recovery completes', async () => {
    const plan = await planInto('completed');
    expect(await pinned()).toEqual(['b1']);
    const st = await okAsync(s, [
      'recover',
      'apply',
      '--destination',
      join(s.dir, 'completed'),
      '--confirm',
      plan.plan_digest,
      '--root',
      s.root,
    ]);
    expect(st.state, JSON.stringify(st.holds)).toBe('complete');
    expect(await pinned()).toEqual([]);
    const after = await okAsync(s, ['repo', 'forget', '--repo', repo, '--keep-last', '1', '--dry-run']);
    expect(after.forget.map((f: { backup_id: string }) => f.backup_id)).toEqual(['b1']);
  }, 180_000);
});
