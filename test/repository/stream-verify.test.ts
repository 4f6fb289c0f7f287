/**
 * Verifying straight from an S3 repository, without a spool: the archive object is read twice —
 * the digest pass, then the witnessed scan — and nothing of it (nor, encrypted, any plaintext) is
 * written locally but what the verification extracts into its destination. Bytes that change
 * between the two reads are refused as a change, a server that stops answering mid-way is a
 * typed refusal, and in both cases the destination is gone. Real s3rver behind the fault proxy,
 * the real AWS SDK, the real verifier, in process.
 */
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { verifyFromRepository } from '../../src/runtime/index.js';
import { loopxAsync, tempRoot } from '../support/cli.js';
import { startS3WithProxy, type S3ServerWithProxy } from '../support/s3.js';

const PASSPHRASE = 'stream verify passphrase';
let s3: S3ServerWithProxy;
let n = 0;
const env = () => ({
  STREAM_TEST_CREDENTIALS: `${s3.credentials.accessKeyId}:${s3.credentials.secretAccessKey}`,
  STREAM_TEST_PASSPHRASE: PASSPHRASE,
});

beforeAll(async () => {
  s3 = await startS3WithProxy();
  Object.assign(process.env, env());
});
afterAll(() => s3?.stop());
afterEach(() => s3.proxy.reset());

/** An S3 repository holding one backup `b1` of a root with a finished run; encrypted for the passphrase when asked. */
async function backedUp(encrypt: boolean) {
  const prefix = `stream-${++n}`;
  const repo = `s3://${s3.bucket}/${prefix}?endpoint=${s3.endpoint}&path_style=true&credentials=env:STREAM_TEST_CREDENTIALS`;
  const root = tempRoot('loopx-stream-verify-');
  const at = ['--root', root, '--authority-dir', join(dirname(root), 'authority')];
  const ok = async (args: string[]) => {
    const r = await loopxAsync([...args, ...at, '--json'], env());
    expect(r.status, r.stderr + r.stdout).toBe(0);
  };
  await ok(['run', 'start', '--agent', 'examples/agents/minimal.json']);
  await ok(['repo', 'init', '--repo', repo, ...(encrypt ? ['--encrypt'] : [])]);
  const seal = encrypt ? ['--encrypt', '--recipient', 'env:STREAM_TEST_PASSPHRASE'] : [];
  await ok(['backup-state', '--execute', '--repo', repo, '--backup-id', 'b1', ...seal]);
  const archiveKey = `${prefix}/backups/b1/b1.tar.gz${encrypt ? '.sealed' : ''}`;
  return { repo, root, archiveKey, destination: join(dirname(root), 'verified') };
}

/** What the last successful verification's audit says of the repository its backup came from. */
let from: { repository_id: string; encrypted: boolean } | undefined;

/** Verify b1 with TMPDIR pointed at an empty private directory; what it left there, and the refusal code if any. */
async function verify(b: Awaited<ReturnType<typeof backedUp>>, key?: string) {
  const scratch = mkdtempSync(join(tmpdir(), 'loopx-stream-tmp-'));
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = scratch;
  try {
    const done = await verifyFromRepository(
      b.repo,
      'b1',
      { destination: b.destination, protect: { liveRoot: b.root, authorityDir: join(dirname(b.root), 'authority') } },
      { execute: true, ...(key !== undefined ? { key } : {}) },
    ).then(
      (r) => {
        if (r.executed) from = r.outcome.summary.backup.repository;
        return { code: undefined, audited: r.executed ? r.outcome.summary.phase : undefined };
      },
      (e: { code?: string }) => ({ code: e.code, audited: undefined }),
    );
    return { ...done, leftInTmp: readdirSync(scratch) };
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
}

const archiveReads = (key: string) =>
  s3.proxy.requests.filter((r) => r.operation === 'GetObject' && r.key === key && r.status === 200);

describe('verify from an S3 repository without a spool', () => {
  for (const encrypted of [false, true]) {
    it(`${encrypted ? 'encrypted' : 'plaintext'}: the archive is read twice from the bucket and nothing of it is written locally`, async () => {
      const b = await backedUp(encrypted);
      await s3.proxy.reset();
      const r = await verify(b, encrypted ? 'env:STREAM_TEST_PASSPHRASE' : undefined);
      expect(r).toEqual({ code: undefined, audited: 'audited', leftInTmp: [] });
      expect(archiveReads(b.archiveKey)).toHaveLength(2);
      // The audit says where the backup came from, and whether it was encrypted there.
      expect(from).toEqual({ repository_id: expect.stringMatching(/^repo_[0-9a-f]{24}$/), encrypted });
    });
  }

  it('encrypted, without the key: every sealed segment is checked from the bucket, nothing is extracted or written', async () => {
    const b = await backedUp(true);
    const r = await verify(b);
    expect(r).toEqual({ code: 'repo_key_required', audited: undefined, leftInTmp: [] });
    expect(existsSync(b.destination)).toBe(false);
  });

  it('bytes that change between the digest pass and the scan: refused as a change, the destination removed', async () => {
    const b = await backedUp(false);
    const match = { operation: 'GetObject' as const, key: b.archiveKey };
    const first = s3.proxy.delay(match, { times: 1 });
    const running = verify(b);
    await first.held();
    // The first read goes on; the second one is held until the object has been replaced behind the proxy.
    const second = s3.proxy.delay(match, { times: 1 });
    first.release();
    await second.held();
    const upstream = new S3Client({
      endpoint: s3.upstreamEndpoint,
      region: s3.region,
      credentials: s3.credentials,
      forcePathStyle: true,
    });
    const got = await upstream.send(new GetObjectCommand({ Bucket: s3.bucket, Key: b.archiveKey }));
    const bytes = Buffer.from(await got.Body!.transformToByteArray());
    bytes[bytes.length >> 1] = bytes[bytes.length >> 1]! ^ 0xff;
    await upstream.send(new PutObjectCommand({ Bucket: s3.bucket, Key: b.archiveKey, Body: bytes }));
    upstream.destroy();
    second.release();
    const r = await running;
    expect(r.code).toBe('verify_archive_witness_mismatch');
    expect(existsSync(b.destination)).toBe(false);
    expect(r.leftInTmp).toEqual([]);
  });

  it('a server that stops answering the scan’s read: a typed refusal, the destination removed', async () => {
    const b = await backedUp(false);
    const match = { operation: 'GetObject' as const, key: b.archiveKey };
    const first = s3.proxy.delay(match, { times: 1 });
    const running = verify(b);
    await first.held();
    s3.proxy.failNext(match, { status: 503, times: Infinity });
    first.release();
    const r = await running;
    expect(r.code).toMatch(/^repo_/);
    expect(existsSync(b.destination)).toBe(false);
  });
});
