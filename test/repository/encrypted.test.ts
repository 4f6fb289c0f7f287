/**
 * The encrypted profile of repositories (docs/repository-encryption.md), end to end over real
 * storage (a directory, and s3rver behind the fault proxy): a backup sealed for its recipients is
 * stored with no plaintext in it, opened back only with a key, checked whole without one, and
 * refused when anything sealed is moved, swapped or damaged. Asked to encrypt and unable to,
 * nothing is published.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isLoopxError } from '../../src/core/index.js';
import { Repository, generateIdentity, recipientsOf } from '../../src/repository/index.js';
import { startS3WithProxy, type S3ServerWithProxy } from '../support/s3.js';

const codeOf = (e: unknown): string => (isLoopxError(e) ? e.code : `not a LoopxError: ${String(e)}`);
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => 'no refusal',
    (e: unknown) => codeOf(e),
  );

let s3: S3ServerWithProxy;
const scratch = mkdtempSync(join(tmpdir(), 'loopx-encrypted-'));
const PASSPHRASE = 'correct horse battery staple, for tests only';
const alice = generateIdentity();
const bob = generateIdentity();
beforeAll(async () => {
  s3 = await startS3WithProxy();
  process.env.S3_TEST_CREDENTIALS = `${s3.credentials.accessKeyId}:${s3.credentials.secretAccessKey}`;
  process.env.ENC_TEST_PASSPHRASE = PASSPHRASE;
  process.env.ENC_TEST_ALICE = alice.identity;
  process.env.ENC_TEST_BOB = bob.identity;
});
afterAll(async () => {
  await s3?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

let n = 0;
const urls = () => [
  join(scratch, `dir-${++n}`),
  `s3://${s3.bucket}/enc-${++n}?endpoint=${s3.endpoint}&path_style=true&credentials=env:S3_TEST_CREDENTIALS`,
];
/** A plaintext pair with recognisable bytes (a real archive would be gzip; the repository does not care). */
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
  const marker = Buffer.from('PLAINTEXT-MARKER-'.repeat(4096));
  return {
    archive: write(`${id}.tar.gz`, Buffer.concat([marker, Buffer.alloc(3 * 1024 * 1024, 5)])),
    manifest: write(`${id}.manifest.json`, Buffer.from(JSON.stringify({ backup_id: id, secret: 'MANIFEST-MARKER' }))),
  };
}
const facts = {
  created_at: '2026-12-01T10:00:00.000Z',
  root_id: 'root_x',
  producer_version: '0.1.0',
  capture_profile: 'online',
};

describe('encrypted backups in a repository', () => {
  it('are stored without plaintext, listed as encrypted, and open back byte for byte with any recipient’s key', async () => {
    for (const url of urls()) {
      const r = await Repository.init(url, { encrypt: true });
      const files = pair('e1');
      const recipients = recipientsOf([alice.recipient, 'env:ENC_TEST_BOB', 'env:ENC_TEST_PASSPHRASE']);
      const entry = await r.publish('e1', files, facts, { recipients });
      expect(entry.encrypted).toBe(true);
      expect((await r.list()).backups.map((b) => b.encrypted)).toEqual([true]);
      // Nothing stored holds the plaintext, a key, or the passphrase.
      for await (const o of r.objects.list('')) {
        const chunks: Buffer[] = [];
        for await (const c of await r.objects.read(o.key)) chunks.push(c as Buffer);
        const stored = Buffer.concat(chunks).toString('latin1');
        for (const secret of ['PLAINTEXT-MARKER', 'MANIFEST-MARKER', PASSPHRASE, alice.identity, bob.identity])
          expect(stored.includes(secret), `${o.key} holds ${secret.slice(0, 16)}`).toBe(false);
      }
      for (const key of ['env:ENC_TEST_ALICE', 'env:ENC_TEST_BOB', 'env:ENC_TEST_PASSPHRASE']) {
        const spool = mkdtempSync(join(scratch, 'spool-'));
        const opened = await r.fetch(entry, spool, { key });
        expect(readFileSync(opened.archive).equals(readFileSync(files.archive.path))).toBe(true);
        expect(readFileSync(opened.manifest).equals(readFileSync(files.manifest.path))).toBe(true);
      }
      await r.close();
    }
  });

  it('without a key, every ciphertext digest and the binding are checked and extraction is refused; a wrong key opens nothing', async () => {
    for (const url of urls()) {
      const r = await Repository.init(url);
      const entry = await r.publish('e2', pair('e2'), facts, { recipients: recipientsOf([alice.recipient]) });
      const spool = mkdtempSync(join(scratch, 'spool-'));
      expect(await refusal(r.fetch(entry, spool))).toBe('repo_key_required');
      expect(await refusal(r.fetch(entry, mkdtempSync(join(scratch, 'spool-')), { key: 'env:ENC_TEST_BOB' }))).toBe(
        'seal_key_not_recipient',
      );
      expect(
        await refusal(r.fetch(entry, mkdtempSync(join(scratch, 'spool-')), { key: 'env:ENC_TEST_PASSPHRASE' })),
      ).toBe('seal_key_not_recipient');
      await r.close();
    }
  });

  it('a sealed archive swapped in from another backup, or damaged in place, is refused — with or without the key', async () => {
    const dir = join(scratch, `dir-${++n}`);
    const r = await Repository.init(dir);
    const recipients = recipientsOf([alice.recipient]);
    const a = await r.publish('ea', pair('ea'), facts, { recipients });
    await r.publish('eb', pair('eb'), facts, { recipients });
    const sealedA = join(dir, 'backups/ea/ea.tar.gz.sealed');
    const original = readFileSync(sealedA);
    // Swapped: backup eb's sealed archive (same recipients, another data key) under ea's name.
    writeFileSync(sealedA, readFileSync(join(dir, 'backups/eb/eb.tar.gz.sealed')));
    const swapped = [
      await refusal(r.fetch(a, mkdtempSync(join(scratch, 'spool-')))),
      await refusal(r.fetch(a, mkdtempSync(join(scratch, 'spool-')), { key: 'env:ENC_TEST_ALICE' })),
    ];
    expect(
      swapped.every((c) => c.startsWith('seal_')),
      swapped.join(),
    ).toBe(true);
    // Damaged: one flipped bit in the middle of the first segment.
    const damaged = Buffer.from(original);
    damaged[1000] = damaged[1000]! ^ 1;
    writeFileSync(sealedA, damaged);
    const spool = mkdtempSync(join(scratch, 'spool-'));
    expect(await refusal(r.fetch(a, spool, { key: 'env:ENC_TEST_ALICE' }))).toBe('seal_segment_digest');
    expect(
      readdirSync(spool).flatMap((d) => readdirSync(join(spool, d))),
      'no plaintext is left',
    ).toEqual([]);
    writeFileSync(sealedA, original);
    expect(await refusal(r.fetch(a, mkdtempSync(join(scratch, 'spool-')), { key: 'env:ENC_TEST_ALICE' }))).toBe(
      'no refusal',
    );
    await r.close();
  });

  it('check reports an encrypted backup whose key set or envelope is gone (it could never be opened)', async () => {
    const dir = join(scratch, `dir-${++n}`);
    const r = await Repository.init(dir);
    await r.publish('ek', pair('ek'), facts, { recipients: recipientsOf([alice.recipient]) });
    expect((await r.check({ readData: true })).ok).toBe(true);
    rmSync(join(dir, 'backups/ek/keys'), { recursive: true });
    const check = await r.check();
    expect(check.findings.map((f) => [f.code, f.backup_id])).toEqual([['repo_object_missing', 'ek']]);
    await r.close();
  });

  it('asked to encrypt and unable to, nothing is published; a repository that requires encryption refuses plaintext', async () => {
    for (const url of urls()) {
      const r = await Repository.init(url, { encrypt: true });
      expect(await refusal(r.publish('p1', pair('p1'), facts))).toBe('repo_encryption_required');
      expect(await refusal(r.publish('p2', pair('p2'), facts, { recipients: [] }))).toBe('seal_no_recipients');
      expect(await refusal(Promise.resolve().then(() => recipientsOf(['env:ENC_TEST_UNSET'])))).toBe(
        'seal_key_ref_missing',
      );
      const left: string[] = [];
      for await (const o of r.objects.list('backups/')) left.push(o.key);
      expect(left).toEqual([]);
      await r.close();
    }
  });
});
