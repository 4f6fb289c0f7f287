/**
 * One conformance suite for the storage port of repositories (src/repository/contract.ts), run
 * against every provider row: memory, a directory, and S3 — s3rver on loopback behind the fault
 * proxy of test/support/, which enforces the conditional writes s3rver ignores (as S3 does). Each
 * case states a rule of the contract and checks what the storage holds afterwards.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isLoopxError } from '../../src/core/index.js';
import { openRepositoryObjects, type RepositoryObjects } from '../../src/repository/index.js';
import { startS3WithProxy, type S3ServerWithProxy } from '../support/s3.js';

const codeOf = (e: unknown): string => (isLoopxError(e) ? e.code : `not a LoopxError: ${String(e)}`);
const text = (s: string) => new TextEncoder().encode(s);
async function bytesOf(objects: RepositoryObjects, key: string): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of await objects.read(key)) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString();
}
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => 'no refusal',
    (e: unknown) => codeOf(e),
  );

let s3: S3ServerWithProxy;
const scratch = mkdtempSync(join(tmpdir(), 'loopx-objects-'));
beforeAll(async () => {
  s3 = await startS3WithProxy();
  process.env.S3_TEST_CREDENTIALS = `${s3.credentials.accessKeyId}:${s3.credentials.secretAccessKey}`;
});
afterAll(async () => {
  await s3?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

let n = 0;
const PROVIDERS: Record<string, () => string> = {
  memory: () => `memory:conformance-${++n}`,
  dir: () => join(scratch, `dir-${++n}`),
  s3: () =>
    `s3://${s3.bucket}/conformance-${++n}?endpoint=${s3.endpoint}&region=us-east-1&path_style=true&credentials=env:S3_TEST_CREDENTIALS`,
};

describe.each(Object.keys(PROVIDERS))('the repository storage port: %s', (provider) => {
  const open = async () => (await openRepositoryObjects(PROVIDERS[provider]!(), { create: true })).objects;

  it('create publishes the whole object once; a second create of the key is refused and changes nothing', async () => {
    const o = await open();
    const info = await o.create('a/b/one.json', text('first'));
    expect(info.size).toBe(5);
    expect(await refusal(o.create('a/b/one.json', text('second')))).toBe('repo_object_exists');
    expect(await bytesOf(o, 'a/b/one.json')).toBe('first');
    expect((await o.head('a/b/one.json'))?.etag).toBe(info.etag);
    await o.close();
  });

  it('a local file is published by path, bytes for bytes', async () => {
    const o = await open();
    const file = join(scratch, `body-${provider}`);
    const body = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    writeFileSync(file, body);
    await o.create('big/archive.tar.gz', { path: file, size: body.byteLength });
    expect((await o.head('big/archive.tar.gz'))?.size).toBe(body.byteLength);
    expect(Buffer.from(await bytesOf(o, 'big/archive.tar.gz'), 'binary').byteLength).toBeGreaterThan(0);
    const chunks: Buffer[] = [];
    for await (const c of await o.read('big/archive.tar.gz')) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).equals(body)).toBe(true);
    await o.close();
  });

  it('an empty local file is published as an empty object', async () => {
    const o = await open();
    const file = join(scratch, `empty-${provider}`);
    writeFileSync(file, '');
    expect((await o.create('empty.bin', { path: file, size: 0 })).size).toBe(0);
    expect(await bytesOf(o, 'empty.bin')).toBe('');
    expect(await refusal(o.create('empty.bin', { path: file, size: 0 }))).toBe('repo_object_exists');
    await o.close();
  });

  it('replace is a compare-and-swap on the tag: a stale tag is refused, the current one wins once', async () => {
    const o = await open();
    const first = await o.create('locks/maintenance.json', text('v1'));
    const second = await o.replace('locks/maintenance.json', first.etag, text('v2'));
    expect(second.etag).not.toBe(first.etag);
    expect(await refusal(o.replace('locks/maintenance.json', first.etag, text('v3')))).toBe('repo_object_changed');
    expect(await bytesOf(o, 'locks/maintenance.json')).toBe('v2');
    expect(await refusal(o.replace('locks/absent.json', first.etag, text('x')))).toBe('repo_object_changed');
    await o.close();
  });

  it('remove with a stale tag is refused; remove is idempotent', async () => {
    const o = await open();
    const first = await o.create('x.json', text('1'));
    await o.replace('x.json', first.etag, text('2'));
    expect(await refusal(o.remove('x.json', first.etag))).toBe('repo_object_changed');
    expect(await o.head('x.json')).toBeDefined();
    await o.remove('x.json');
    await o.remove('x.json');
    expect(await o.head('x.json')).toBeUndefined();
    expect(await refusal(o.read('x.json'))).toBe('repo_object_missing');
    await o.close();
  });

  it('list yields every object under a prefix, with sizes, and nothing else', async () => {
    const o = await open();
    for (const k of ['backups/1/a', 'backups/1/b', 'backups/2/a', 'backupsX/c', 'other']) await o.create(k, text(k));
    const keys: string[] = [];
    for await (const i of o.list('backups/')) keys.push(i.key);
    expect(keys.sort()).toEqual(['backups/1/a', 'backups/1/b', 'backups/2/a']);
    const all: string[] = [];
    for await (const i of o.list('')) all.push(`${i.key}:${i.size}`);
    expect(all.sort()).toEqual(['backups/1/a:11', 'backups/1/b:11', 'backups/2/a:11', 'backupsX/c:10', 'other:5']);
    await o.close();
  });

  it('keys outside the safe alphabet are refused before any storage is touched', async () => {
    const o = await open();
    for (const k of ['../escape', '/abs', 'a//b', '.hidden', 'a/../b', 'sp ace', ''])
      expect(await refusal(o.create(k, text('x'))), k).toBe('repo_object_key_invalid');
    await o.close();
  });

  it('two concurrent creates of one key: exactly one wins', async () => {
    const o = await open();
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) => refusal(o.create('race.json', text(`writer ${i}`)))),
    );
    expect(results.filter((r) => r === 'no refusal')).toHaveLength(1);
    expect(results.filter((r) => r === 'repo_object_exists')).toHaveLength(3);
    await o.close();
  });
});

describe('the S3 provider through faults (S3 behaviour s3rver lacks, supplied by the fault proxy)', () => {
  const open = async () => (await openRepositoryObjects(PROVIDERS.s3!(), { create: true })).objects;

  it('a create whose answer is lost is retried by the SDK, meets its own object, and is our create', async () => {
    const o = await open();
    s3.proxy.dropAnswer({ operation: 'PutObject', key: 'lost.json' });
    const info = await o.create('lost.json', text('mine'));
    expect(info.size).toBe(4);
    expect(await bytesOf(o, 'lost.json')).toBe('mine');
    expect(s3.proxy.requests.filter((r) => r.key?.endsWith('lost.json') && r.operation === 'PutObject').length).toBe(2);
    await s3.proxy.reset();
    await o.close();
  });

  it('…but a lost answer followed by someone else’s object is still refused', async () => {
    const o = await open();
    await o.create('theirs.json', text('theirs'));
    expect(await refusal(o.create('theirs.json', text('mine!!')))).toBe('repo_object_exists');
    expect(await bytesOf(o, 'theirs.json')).toBe('theirs');
    await o.close();
  });

  it('503 answers are retried; a server that keeps failing is repo_unreachable and leaves no object', async () => {
    const o = await open();
    s3.proxy.failNext({ operation: 'PutObject', key: 'flaky.json' }, { status: 503, times: 2 });
    await o.create('flaky.json', text('ok'));
    expect(await bytesOf(o, 'flaky.json')).toBe('ok');
    s3.proxy.failNext({ operation: 'PutObject', key: 'down.json' }, { status: 500, times: Infinity });
    expect(await refusal(o.create('down.json', text('x')))).toBe('repo_unreachable');
    await s3.proxy.reset();
    expect(await o.head('down.json')).toBeUndefined();
    await o.close();
  });

  it('an upload cut mid-body leaves no object under the key', async () => {
    const o = await open();
    const file = join(scratch, 'cut-body');
    writeFileSync(file, Buffer.alloc(2 * 1024 * 1024, 3));
    s3.proxy.cutUpload({ operation: 'PutObject', key: 'cut.bin' }, { afterBytes: 64 * 1024, times: Infinity });
    expect(await refusal(o.create('cut.bin', { path: file, size: 2 * 1024 * 1024 }))).toBe('repo_unreachable');
    await s3.proxy.reset();
    expect(await o.head('cut.bin')).toBeUndefined();
    await o.close();
  });
});
