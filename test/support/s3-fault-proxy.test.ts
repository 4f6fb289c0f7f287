/**
 * The S3 test fixture is only useful if the REAL AWS SDK v3 (client-s3, lib-storage) sees through
 * it what it would see from AWS S3: conditional writes refused with 412 (bare s3rver ignores them,
 * which is pinned here too, so the product knows it must probe a server), one winner of a race,
 * the SDK's own retries over injected 500/503s, a cut upload that leaves nothing behind, a lost
 * answer that the SDK's retry turns into a 412 for its own write, stale listings and held requests.
 * Real bytes on a real s3rver; no mock of the SDK; ordering by latches, never by the clock.
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type PutObjectCommandInput,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ProxiedRequest } from './s3-fault-proxy.js';
import { startS3, startS3WithProxy, type S3ServerWithProxy } from './s3.js';

const MiB = 1024 * 1024;
let s3: S3ServerWithProxy;
/** Through the proxy. */
let client: S3Client;
/** Straight to s3rver, the same store. */
let bare: S3Client;

beforeAll(async () => {
  s3 = await startS3WithProxy({ bucket: 'loopx-proxy-test' });
  client = s3.client();
  bare = new S3Client({
    endpoint: s3.upstreamEndpoint,
    region: s3.region,
    credentials: s3.credentials,
    forcePathStyle: true,
  });
});
afterEach(() => s3.proxy.reset());
afterAll(async () => {
  bare?.destroy();
  await s3?.stop();
});

let counter = 0;
const newKey = (label: string) => `t/${label}-${++counter}`;

const put = (
  key: string,
  body: PutObjectCommandInput['Body'],
  extra: Partial<PutObjectCommandInput> = {},
  via = client,
) => via.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: body, ...extra }));

async function read(key: string, via = client): Promise<Buffer> {
  const answer = await via.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
  return Buffer.from(await answer.Body!.transformToByteArray());
}

async function listed(prefix: string): Promise<string[]> {
  const answer = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }));
  return (answer.Contents ?? []).map((c) => c.Key ?? '');
}

const head = (key: string, via = client) => via.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key }));
const logOf = (key: string, operation: ProxiedRequest['operation']) =>
  s3.proxy.requests.filter((r) => r.key === key && r.operation === operation);
const NOT_FOUND = { name: 'NotFound', $metadata: { httpStatusCode: 404 } };
const PRECONDITION_FAILED = { name: 'PreconditionFailed', $metadata: { httpStatusCode: 412 } };

describe('the s3rver fixture', () => {
  it('serves one bucket to the AWS SDK, and stop() may be called twice', async () => {
    const own = await startS3();
    const c = own.client();
    await c.send(new PutObjectCommand({ Bucket: own.bucket, Key: 'a/b', Body: 'bytes' }));
    const listing = await c.send(new ListObjectsV2Command({ Bucket: own.bucket, Prefix: 'a/' }));
    expect(listing.Contents?.map((o) => o.Key)).toEqual(['a/b']);
    await Promise.all([own.stop(), own.stop()]);
    await own.stop();
  });
});

describe('conditional writes, enforced by the proxy as S3 does', () => {
  it('a second If-None-Match: * put of an existing key is refused 412 and the first bytes stay', async () => {
    const key = newKey('create-once');
    await put(key, 'first', { IfNoneMatch: '*' });
    await expect(put(key, 'second', { IfNoneMatch: '*' })).rejects.toMatchObject(PRECONDITION_FAILED);
    expect((await read(key)).toString()).toBe('first');
    // Only `*` is modelled; anything else is refused loudly rather than ignored.
    await expect(put(key, 'third', { IfNoneMatch: '"abc"' })).rejects.toMatchObject({
      name: 'NotImplemented',
      $metadata: { httpStatusCode: 501 },
    });
    expect(logOf(key, 'PutObject')).toMatchObject([
      { status: 200, ifNoneMatch: '*', answeredBy: 'upstream' },
      { status: 412, ifNoneMatch: '*', answeredBy: 'proxy', errorCode: 'PreconditionFailed' },
      { status: 501, ifNoneMatch: '"abc"', answeredBy: 'proxy', errorCode: 'NotImplemented' },
    ]);
  });

  it('bare s3rver ignores If-None-Match: * and overwrites — why the product must probe its server', async () => {
    const key = newKey('bare-overwrite');
    await put(key, 'first', { IfNoneMatch: '*' }, bare);
    await put(key, 'second', { IfNoneMatch: '*' }, bare);
    expect((await read(key, bare)).toString()).toBe('second');
  });

  it('of two concurrent If-None-Match: * puts of one key exactly one wins', async () => {
    const key = newKey('race');
    const gate = s3.proxy.delay({ operation: 'PutObject', key });
    const bodies = ['a', 'b'].map((fill) => Buffer.alloc(256 * 1024, fill));
    const puts = bodies.map((body) => put(key, body, { IfNoneMatch: '*' }));
    await gate.held(2);
    gate.release();
    const results = await Promise.allSettled(puts);
    const winners = results.flatMap((r, i) => (r.status === 'fulfilled' ? [bodies[i]] : []));
    const losers = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    expect(winners).toHaveLength(1);
    expect(losers).toMatchObject([PRECONDITION_FAILED]);
    expect((await read(key)).equals(winners[0]!)).toBe(true);
  });

  it('an If-Match put with a wrong ETag is refused 412, the right ETag replaces, a missing key is NoSuchKey', async () => {
    const key = newKey('if-match');
    const first = await put(key, 'one');
    const wrong = '"00000000000000000000000000000000"';
    await expect(put(key, 'two', { IfMatch: wrong })).rejects.toMatchObject(PRECONDITION_FAILED);
    expect((await read(key)).toString()).toBe('one');
    const stale = new GetObjectCommand({ Bucket: s3.bucket, Key: key, IfMatch: wrong });
    await expect(client.send(stale)).rejects.toMatchObject(PRECONDITION_FAILED);
    const second = await put(key, 'two', { IfMatch: first.ETag });
    expect(second.$metadata.httpStatusCode).toBe(200);
    expect((await read(key)).toString()).toBe('two');
    const missing = newKey('if-match-missing');
    await expect(put(missing, 'x', { IfMatch: first.ETag })).rejects.toMatchObject({
      name: 'NoSuchKey',
      $metadata: { httpStatusCode: 404 },
    });
    await expect(head(missing)).rejects.toMatchObject(NOT_FOUND);
  });

  it('an If-Match delete with a wrong ETag is refused 412 and the object stays; the right ETag deletes', async () => {
    const key = newKey('delete-if-match');
    const { ETag } = await put(key, 'keep me');
    const del = (IfMatch: string | undefined) =>
      client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: key, IfMatch }));
    await expect(del('"ffffffffffffffffffffffffffffffff"')).rejects.toMatchObject(PRECONDITION_FAILED);
    expect((await read(key)).toString()).toBe('keep me');
    expect((await del(ETag)).$metadata.httpStatusCode).toBe(204);
    await expect(head(key)).rejects.toMatchObject(NOT_FOUND);
    await expect(del(ETag)).rejects.toMatchObject({ name: 'NoSuchKey', $metadata: { httpStatusCode: 404 } });
  });
});

describe('atomic objects', () => {
  it('concurrent plain puts and a read of one key see whole bodies, never a mix (s3rver alone writes in place)', async () => {
    const key = newKey('last-writer');
    const old = Buffer.alloc(8 * MiB, 'o');
    await put(key, old);
    const gate = s3.proxy.delay({ operation: ['PutObject', 'GetObject'], key });
    const bodies = ['w', 'x', 'y', 'z'].map((fill) => Buffer.alloc(8 * MiB, fill));
    const puts = bodies.map((body) => put(key, body));
    const during = read(key);
    await gate.held(bodies.length + 1);
    gate.release();
    await Promise.all(puts);
    const whole = (b: Buffer) => [old, ...bodies].some((candidate) => candidate.equals(b));
    expect(whole(await during)).toBe(true);
    expect(whole(await read(key))).toBe(true);
  });
});

describe('multipart uploads', () => {
  it('lib-storage completes an upload over 5 MiB, and refuses a second one with IfNoneMatch * at completion', async () => {
    const key = newKey('lib-storage');
    const first = randomBytes(6 * MiB);
    const upload = (body: Buffer, extra: Partial<PutObjectCommandInput>) =>
      new Upload({ client, params: { Bucket: s3.bucket, Key: key, Body: body, ...extra }, partSize: 5 * MiB }).done();
    await upload(first, {});
    expect((await read(key)).equals(first)).toBe(true);
    expect(logOf(key, 'UploadPart').map((r) => r.status)).toEqual([200, 200]);

    // lib-storage spreads its params into CompleteMultipartUpload, so IfNoneMatch reaches it.
    await expect(upload(randomBytes(6 * MiB), { IfNoneMatch: '*' })).rejects.toMatchObject(PRECONDITION_FAILED);
    expect(logOf(key, 'CompleteMultipartUpload')).toMatchObject([
      { status: 200, ifNoneMatch: undefined },
      { status: 412, ifNoneMatch: '*', errorCode: 'PreconditionFailed' },
    ]);
    // The SDK's serializers drop it from CreateMultipartUpload and UploadPart (S3 accepts it on neither).
    expect(logOf(key, 'UploadPart').every((r) => r.ifNoneMatch === undefined)).toBe(true);
    expect(logOf(key, 'AbortMultipartUpload')).toMatchObject([{ status: 204, answeredBy: 'proxy' }]);
    expect((await read(key)).equals(first)).toBe(true);
  });

  it('a hand-driven CompleteMultipartUpload with IfNoneMatch * creates a new key once; an aborted upload is gone', async () => {
    const key = newKey('by-hand');
    const Bucket = s3.bucket;
    const begin = async (body: Buffer) => {
      const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket, Key: key }));
      const part = await client.send(new UploadPartCommand({ Bucket, Key: key, UploadId, PartNumber: 1, Body: body }));
      const Parts = [{ PartNumber: 1, ETag: part.ETag }];
      return {
        UploadId,
        complete: new CompleteMultipartUploadCommand({
          Bucket,
          Key: key,
          UploadId,
          IfNoneMatch: '*',
          MultipartUpload: { Parts },
        }),
      };
    };
    const first = await begin(Buffer.from('first'));
    expect((await client.send(first.complete)).$metadata.httpStatusCode).toBe(200);
    const second = await begin(Buffer.from('second'));
    await expect(client.send(second.complete)).rejects.toMatchObject(PRECONDITION_FAILED);
    await client.send(new AbortMultipartUploadCommand({ Bucket, Key: key, UploadId: second.UploadId }));
    const late = new UploadPartCommand({ Bucket, Key: key, UploadId: second.UploadId, PartNumber: 2, Body: 'late' });
    await expect(client.send(late)).rejects.toMatchObject({ name: 'NoSuchUpload', $metadata: { httpStatusCode: 404 } });
    expect((await read(key)).toString()).toBe('first');
  });
});

describe('streamed bodies', () => {
  // (Bare s3rver stores the aws-chunked framing itself as the object's bytes, and a streamed request
  // to it cannot be retried when s3rver closes a reused socket; the proxy decodes the framing as S3 does.)
  it('a streamed put (aws-chunked, trailing checksum) stores its payload', async () => {
    const stream = () => Readable.from([Buffer.from('hello '), Buffer.from('streamed world')]);
    const key = newKey('chunked');
    await put(key, stream(), { ContentLength: 20 });
    expect((await read(key)).toString()).toBe('hello streamed world');
  });
});

describe('injected failures, cuts and lost answers', () => {
  it('an injected 503 on PutObject is retried by the SDK and the put then succeeds', async () => {
    const key = newKey('slow-down');
    s3.proxy.failNext({ operation: 'PutObject', key }, { status: 503 });
    const out = await put(key, 'eventually');
    expect(out.$metadata.attempts).toBe(2);
    expect(logOf(key, 'PutObject')).toMatchObject([
      { status: 503, errorCode: 'SlowDown', fault: 'error' },
      { status: 200, fault: undefined },
    ]);
    expect((await read(key)).toString()).toBe('eventually');
  });

  it('failures beyond the retry budget surface as the S3 error, and nothing is written', async () => {
    const key = newKey('internal-error');
    s3.proxy.failNext({ operation: 'PutObject', key }, { status: 500, times: Infinity });
    const impatient = s3.client({ maxAttempts: 2 });
    await expect(put(key, 'never', {}, impatient)).rejects.toMatchObject({
      name: 'InternalError',
      $metadata: { httpStatusCode: 500, attempts: 2 },
    });
    expect(logOf(key, 'PutObject').map((r) => r.status)).toEqual([500, 500]);
    await expect(head(key)).rejects.toMatchObject(NOT_FOUND);
  });

  it('an upload cut mid-body fails the SDK call and leaves no object (HEAD 404, not listed)', async () => {
    const key = newKey('cut');
    s3.proxy.cutUpload({ operation: 'PutObject', key }, { afterBytes: 64 * 1024, times: Infinity });
    await expect(put(key, randomBytes(MiB))).rejects.toThrow();
    const attempts = logOf(key, 'PutObject');
    expect(attempts).toHaveLength(3); // the SDK's default: three attempts
    expect(attempts.every((r) => r.fault === 'cut' && r.status === undefined && r.answeredBy === 'nobody')).toBe(true);
    await expect(head(key)).rejects.toMatchObject(NOT_FOUND);
    await expect(head(key, bare)).rejects.toMatchObject(NOT_FOUND);
    expect(await listed(key)).toEqual([]);
  });

  it('a single cut is retried by the SDK and the object arrives whole', async () => {
    const key = newKey('cut-once');
    const bytes = randomBytes(MiB);
    s3.proxy.cutUpload({ operation: 'PutObject', key }, { afterBytes: 1 });
    await put(key, bytes);
    expect(logOf(key, 'PutObject').map((r) => r.fault)).toEqual(['cut', undefined]);
    expect((await read(key)).equals(bytes)).toBe(true);
  });

  it('a lost answer to a conditional put makes the SDK retry refuse its own write: 412, yet the bytes are ours', async () => {
    const key = newKey('lost-answer');
    s3.proxy.dropAnswer({ operation: 'PutObject', key });
    await expect(put(key, 'ours', { IfNoneMatch: '*' })).rejects.toMatchObject(PRECONDITION_FAILED);
    expect(logOf(key, 'PutObject')).toMatchObject([
      { fault: 'drop-answer', answeredBy: 'nobody', status: undefined },
      { status: 412, answeredBy: 'proxy' },
    ]);
    expect((await read(key)).toString()).toBe('ours');
  });
});

describe('stale listings and delays', () => {
  it('a frozen listing hides objects created and keeps objects deleted since, until thawed; reads stay live', async () => {
    const prefix = `${newKey('frozen')}/`;
    await put(`${prefix}old`, 'old');
    await s3.proxy.freezeListings();
    await put(`${prefix}new`, 'new');
    await client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: `${prefix}old` }));
    expect(await listed(prefix)).toEqual([`${prefix}old`]);
    expect((await read(`${prefix}new`)).toString()).toBe('new');
    await expect(head(`${prefix}old`)).rejects.toMatchObject(NOT_FOUND);
    expect(s3.proxy.requests.filter((r) => r.operation === 'ListObjectsV2').at(-1)?.answeredBy).toBe('frozen-listing');
    await s3.proxy.thawListings();
    expect(await listed(prefix)).toEqual([`${prefix}new`]);
  });

  it('a held request waits for its release while other requests pass', async () => {
    const [slow, fast] = [newKey('held'), newKey('passing')];
    await Promise.all([put(slow, 'slow'), put(fast, 'fast')]);
    const hold = s3.proxy.delay({ operation: 'GetObject', key: slow });
    const finished: string[] = [];
    const slowRead = read(slow).then((b) => finished.push(b.toString()));
    await hold.held();
    finished.push((await read(fast)).toString());
    expect(finished).toEqual(['fast']);
    hold.release();
    await slowRead;
    expect(finished).toEqual(['fast', 'slow']);
    expect(logOf(slow, 'GetObject')).toMatchObject([{ delayed: true, status: 200 }]);
  });

  it('a timed delay holds the matching request and lets it through; reset clears faults and the log', async () => {
    const key = newKey('timed');
    await put(key, 'x');
    s3.proxy.delay({ operation: 'HeadObject', key }, { ms: 10, times: 1 });
    expect((await head(key)).$metadata.httpStatusCode).toBe(200);
    expect(logOf(key, 'HeadObject')).toMatchObject([{ delayed: true, status: 200 }]);
    s3.proxy.failNext({ operation: 'GetObject', key }, { status: 500 });
    await s3.proxy.reset();
    expect(s3.proxy.requests).toEqual([]);
    expect((await read(key)).toString()).toBe('x');
    expect(logOf(key, 'GetObject')).toMatchObject([{ status: 200, fault: undefined }]);
  });
});
