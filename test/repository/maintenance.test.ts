/**
 * Repository maintenance over real storage: forget (the retention policy) removes entries and
 * never a root's newest verified backup or a pinned one; prune removes what is not a backup once
 * older than its grace period; and a forget and prune running while a backup is being published
 * (held mid-publication by the fault proxy in front of s3rver) leave that backup whole.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isLoopxError } from '../../src/core/index.js';
import { Repository, forget, pin, pins, prune, unpin } from '../../src/repository/index.js';
import { startS3WithProxy, type S3ServerWithProxy } from '../support/s3.js';

const codeOf = (e: unknown): string => (isLoopxError(e) ? e.code : `not a LoopxError: ${String(e)}`);
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => 'no refusal',
    (e: unknown) => codeOf(e),
  );

let s3: S3ServerWithProxy;
const scratch = mkdtempSync(join(tmpdir(), 'loopx-maintenance-'));
beforeAll(async () => {
  s3 = await startS3WithProxy();
  process.env.S3_TEST_CREDENTIALS = `${s3.credentials.accessKeyId}:${s3.credentials.secretAccessKey}`;
});
afterAll(async () => {
  await s3?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

let n = 0;
const s3Url = () =>
  `s3://${s3.bucket}/m-${++n}?endpoint=${s3.endpoint}&path_style=true&credentials=env:S3_TEST_CREDENTIALS`;
const dirUrl = () => join(scratch, `dir-${++n}`);
function pair(id: string) {
  const dir = mkdtempSync(join(scratch, 'pair-'));
  const write = (name: string, bytes: Buffer) => {
    writeFileSync(join(dir, name), bytes);
    return {
      path: join(dir, name),
      size_bytes: bytes.byteLength,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    };
  };
  return {
    archive: write(`${id}.tar.gz`, Buffer.from(`archive ${id}`)),
    manifest: write(`${id}.manifest.json`, Buffer.from(`{"id":"${id}"}`)),
  };
}
const at = (day: number, root = 'root_a') => ({
  created_at: `2026-11-${String(day).padStart(2, '0')}T12:00:00.000Z`,
  root_id: root,
  producer_version: '0.1.0',
  capture_profile: 'online',
});
const ids = async (r: Repository) => (await r.list()).backups.map((b) => b.backup_id);

describe('repo forget and prune', () => {
  it('forget keeps what the policy keeps and the root’s newest verified backup; dry run changes nothing; prune then frees the rest', async () => {
    for (const url of [dirUrl(), s3Url()]) {
      const r = await Repository.init(url);
      for (const d of [1, 2, 3, 4]) await r.publish(`b${d}`, pair(`b${d}`), at(d));
      await r.publish('other', pair('other'), at(1, 'root_b'));
      await r.markVerified('b2', 'rec_test');
      const dry = await forget(r, { keepLast: 1 }, { dryRun: true });
      expect(dry.forget.map((f) => f.backup_id).sort()).toEqual(['b1', 'b3']);
      expect(dry.keep.map((k) => [k.backup_id, k.reasons.join('+')])).toEqual([
        ['b4', 'last'],
        ['b2', 'newest_verified'],
        ['other', 'last'],
      ]);
      expect(await ids(r)).toEqual(['b1', 'other', 'b2', 'b3', 'b4']);
      await forget(r, { keepLast: 1 });
      expect(await ids(r)).toEqual(['other', 'b2', 'b4']);
      expect((await r.list()).incomplete).toEqual(['b1', 'b3']);
      const young = await prune(r); // default grace: they were written seconds ago
      expect(young.removed).toEqual([]);
      expect(young.too_recent).toEqual(['b1', 'b3']);
      const pruned = await prune(r, { graceMs: 0 });
      expect(pruned.removed.map((x) => x.backup_id)).toEqual(['b1', 'b3']);
      expect((await r.list()).incomplete).toEqual([]);
      expect((await r.check({ readData: true })).ok).toBe(true);
      await r.close();
    }
  });

  it('a pinned backup is kept and its pin listed; unpinned, the policy may let it go', async () => {
    const r = await Repository.init(dirUrl());
    for (const d of [1, 2]) await r.publish(`b${d}`, pair(`b${d}`), at(d));
    const p = await pin(r, 'b1', 'recovery planned on another host');
    expect(await refusal(pin(r, 'nope', 'x'))).toBe('repo_backup_not_found');
    const dry = await forget(r, { keepLast: 1 }, { dryRun: true });
    expect(dry.forget).toEqual([]);
    expect(dry.keep.find((k) => k.backup_id === 'b1')).toMatchObject({ reasons: ['pinned'], pins: [p.pin_id] });
    expect(dry.pins).toEqual([p]);
    await unpin(r, 'b1', p.pin_id);
    expect(await pins(r)).toEqual([]);
    expect((await forget(r, { keepLast: 1 })).forget.map((f) => f.backup_id)).toEqual(['b1']);
    await r.close();
  });

  it('a forget and a prune while a backup is being published leave it whole, and it is listed once published', async () => {
    const r = await Repository.init(s3Url());
    for (const d of [1, 2]) await r.publish(`b${d}`, pair(`b${d}`), at(d));
    // Hold the new backup's publication after its archive and manifest, before its entry.
    const hold = s3.proxy.delay({ operation: 'PutObject', key: 'b9/entry.json' });
    const publishing = r.publish('b9', pair('b9'), at(9));
    await hold.held();
    const forgot = await forget(r, { keepLast: 1 });
    expect(forgot.forget.map((f) => f.backup_id)).toEqual(['b1']);
    const pruned = await prune(r);
    expect(pruned.removed).toEqual([]);
    expect([...pruned.too_recent].sort()).toEqual(['b1', 'b9']);
    hold.release();
    await publishing;
    await s3.proxy.reset();
    expect(await ids(r)).toEqual(['b2', 'b9']);
    expect((await r.check({ readData: true })).ok).toBe(true);
    await r.close();
  });

  it('maintenance is one at a time: a forget while another holds the lock is refused; a dry run needs no lock', async () => {
    const r = await Repository.init(dirUrl());
    await r.publish('b1', pair('b1'), at(1));
    const held = await r.lock('repo prune', 60_000);
    expect(await refusal(forget(r, { keepLast: 1 }))).toBe('repo_locked');
    expect(await refusal(prune(r))).toBe('repo_locked');
    expect(await refusal(forget(r, { keepLast: 1 }, { dryRun: true }))).toBe('no refusal');
    await held.release();
    expect(await refusal(forget(r, {}))).toBe('repo_forget_policy_empty');
    await r.close();
  });
});
