/**
 * The repository format over real storage: a directory, and s3rver on loopback — bare (which
 * ignores conditional writes, so `init` must refuse it) and behind the fault proxy (which honours
 * them as S3 does, and injects what a network does). Each case checks what the storage holds.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isLoopxError } from '../../src/core/index.js';
import { Repository, openRepositoryObjects } from '../../src/repository/index.js';
import { startS3WithProxy, type S3ServerWithProxy } from '../support/s3.js';

const codeOf = (e: unknown): string => (isLoopxError(e) ? e.code : `not a LoopxError: ${String(e)}`);
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => 'no refusal',
    (e: unknown) => codeOf(e),
  );

let s3: S3ServerWithProxy;
const scratch = mkdtempSync(join(tmpdir(), 'loopx-repository-'));
beforeAll(async () => {
  s3 = await startS3WithProxy();
  process.env.S3_TEST_CREDENTIALS = `${s3.credentials.accessKeyId}:${s3.credentials.secretAccessKey}`;
});
afterAll(async () => {
  await s3?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

let n = 0;
const s3Url = (endpoint = s3.endpoint) =>
  `s3://${s3.bucket}/repo-${++n}?endpoint=${endpoint}&path_style=true&credentials=env:S3_TEST_CREDENTIALS`;
const dirUrl = () => join(scratch, `dir-${++n}`);

/** A backup's pair as local files (any bytes: the repository does not read them). */
function pair(id: string, fill = 9) {
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
    archive: write(`${id}.tar.gz`, Buffer.alloc(200_000, fill)),
    manifest: write(`${id}.manifest.json`, Buffer.from(JSON.stringify({ backup_id: id }))),
  };
}
const facts = (at = '2026-12-01T10:00:00.000Z') => ({
  created_at: at,
  root_id: 'root_test',
  producer_version: '0.1.0',
  capture_profile: 'online',
});

describe('repo init', () => {
  it('refuses a server that overwrites under If-None-Match: * (bare s3rver), and leaves no repository there', async () => {
    const url = s3Url(s3.upstreamEndpoint);
    expect(await refusal(Repository.init(url))).toBe('repo_conditional_write_unsupported');
    const { objects } = await openRepositoryObjects(url);
    const left: string[] = [];
    for await (const o of objects.list('')) left.push(o.key);
    expect(left).toEqual([]);
    await objects.close();
  });

  it('creates one repository on a server that honours conditional writes, and a second init is refused', async () => {
    for (const url of [s3Url(), dirUrl()]) {
      const r = await Repository.init(url);
      expect(r.config.repository_id).toMatch(/^repo_[0-9a-f]{24}$/);
      await r.close();
      expect(await refusal(Repository.init(url))).toBe('repo_already_initialized');
      const again = await Repository.open(url);
      expect(again.config.repository_id).toBe(r.config.repository_id);
      await again.close();
    }
  });

  it('refuses a location that already holds other objects, and opening an empty one names init', async () => {
    const dir = dirUrl();
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'someone-elses'), 'x');
    expect(await refusal(Repository.init(dir))).toBe('repo_already_initialized');
    expect(await refusal(Repository.open(dirUrl()))).toBe('repo_not_initialized');
    expect(await refusal(Repository.open(s3Url()))).toBe('repo_not_initialized');
  });
});

describe('publication', () => {
  it('creates archive, manifest, then the entry — each conditionally — and lists the backup', async () => {
    const url = s3Url();
    const r = await Repository.init(url);
    await s3.proxy.reset();
    const files = pair('b1');
    const entry = await r.publish('b1', files, facts());
    const writes = s3.proxy.requests.filter(
      (q) => q.operation === 'PutObject' || q.operation === 'CompleteMultipartUpload',
    );
    expect(writes.map((q) => q.key!.split('/').pop())).toEqual(['b1.tar.gz', 'b1.manifest.json', 'entry.json']);
    expect(writes.every((q) => q.ifNoneMatch === '*')).toBe(true);
    expect(entry.objects.map((o) => o.sha256)).toEqual([files.archive.sha256, files.manifest.sha256]);
    const listed = await r.list();
    expect(listed.backups.map((b) => b.backup_id)).toEqual(['b1']);
    expect(await refusal(r.publish('b1', pair('b1'), facts()))).toBe('repo_backup_exists');
    await r.close();
  });

  it('an interrupted publication is never listed as a backup; check reports it; the id stays taken', async () => {
    const url = s3Url();
    const r = await Repository.init(url);
    s3.proxy.cutUpload({ operation: 'PutObject', key: 'b2.manifest.json' }, { afterBytes: 4, times: Infinity });
    expect(await refusal(r.publish('b2', pair('b2'), facts()))).toBe('repo_unreachable');
    await s3.proxy.reset();
    const listed = await r.list();
    expect(listed.backups).toEqual([]);
    expect(listed.incomplete).toEqual(['b2']);
    const check = await r.check();
    expect(check.findings.map((f) => [f.code, f.severity, f.backup_id])).toEqual([
      ['repo_backup_incomplete', 'warning', 'b2'],
    ]);
    // A later attempt under the id (other bytes: a backup's capture time is in them) is refused.
    expect(await refusal(r.publish('b2', pair('b2', 7), facts()))).toBe('repo_backup_exists');
    await r.close();
  });

  it('two publishers of one id: exactly one backup, and it is one publisher’s whole pair', async () => {
    const r = await Repository.init(dirUrl());
    const [a, b] = [pair('same'), pair('same')];
    const outcomes = await Promise.all([
      refusal(r.publish('same', a, facts())),
      refusal(r.publish('same', b, facts())),
    ]);
    expect(outcomes.sort()).toEqual(['no refusal', 'repo_backup_exists']);
    expect((await r.list()).backups).toHaveLength(1);
    await r.close();
  });
});

describe('reading back', () => {
  it('check --read-data finds a damaged archive; the listing alone does not', async () => {
    const dir = dirUrl();
    const r = await Repository.init(dir);
    await r.publish('b3', pair('b3'), facts());
    expect((await r.check({ readData: true })).ok).toBe(true);
    writeFileSync(join(dir, 'backups/b3/b3.tar.gz'), Buffer.alloc(200_000, 8)); // same size, other bytes
    expect((await r.check()).ok).toBe(true);
    const deep = await r.check({ readData: true });
    expect(deep.ok).toBe(false);
    expect(deep.findings.map((f) => [f.code, f.object])).toEqual([['repo_object_digest_mismatch', 'archive']]);
    await r.close();
  });

  it('fetch streams an S3 backup into the spool, checked against its entry; a substituted object is refused and not kept', async () => {
    const url = s3Url();
    const r = await Repository.init(url);
    const entry = await r.publish('b4', pair('b4'), facts());
    const spool = mkdtempSync(join(scratch, 'spool-'));
    const got = await r.fetch(entry, spool);
    expect(existsSync(got.archive) && existsSync(got.manifest)).toBe(true);
    // Someone with write access replaces the archive behind the proxy (as a server without conditions allows).
    const upstream = new S3Client({
      endpoint: s3.upstreamEndpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: s3.credentials,
    });
    await upstream.send(
      new PutObjectCommand({
        Bucket: s3.bucket,
        Key: `repo-${n}/backups/b4/b4.tar.gz`,
        Body: Buffer.alloc(200_000, 1),
      }),
    );
    upstream.destroy();
    const spool2 = mkdtempSync(join(scratch, 'spool-'));
    expect(await refusal(r.fetch(entry, spool2))).toBe('repo_object_digest_mismatch');
    expect(readdirSync(spool2)).toEqual([]);
    await r.close();
  });
});

describe('the maintenance lock', () => {
  it('is held by one process; a live holder refuses others; an expired one is taken over by its tag, once', async () => {
    for (const url of [s3Url(), dirUrl()]) {
      const r = await Repository.init(url);
      const first = await r.lock('repo prune', 60_000);
      expect(await refusal(r.lock('repo forget', 60_000))).toBe('repo_locked');
      await first.release();
      const short = await r.lock('repo prune', 1);
      await new Promise((res) => setTimeout(res, 20)); // its expiry has passed
      const takers = await Promise.all([refusal(r.lock('a', 60_000)), refusal(r.lock('b', 60_000))]);
      expect(takers.sort()).toEqual(['no refusal', 'repo_locked']);
      await short.release(); // taken over: releasing it removes nothing
      expect(await refusal(r.lock('c', 60_000))).toBe('repo_locked');
      await r.close();
    }
  });
});
