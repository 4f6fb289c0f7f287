/**
 * Key rotation of encrypted repositories: a recipient added opens every backup, one removed opens
 * none, no data is re-encrypted (the sealed objects keep their bytes), a preview writes nothing,
 * and a removal that would leave a backup unreadable by anyone is refused with the backups named.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isLoopxError } from '../../src/core/index.js';
import {
  Repository,
  changeKeys,
  generateIdentity,
  recipientFingerprint,
  recipientsOf,
  resolveKeyReference,
  type BackupEntry,
} from '../../src/repository/index.js';

const codeOf = (e: unknown): string => (isLoopxError(e) ? e.code : `not a LoopxError: ${String(e)}`);
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => 'no refusal',
    (e: unknown) => codeOf(e),
  );
const scratch = mkdtempSync(join(tmpdir(), 'loopx-rotation-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const [alice, bob, carol] = [generateIdentity(), generateIdentity(), generateIdentity()];
const env = {
  ALICE: alice.identity,
  BOB: bob.identity,
  CAROL: carol.identity,
  PASS: 'a rotation test passphrase',
};
const key = (name: keyof typeof env) => resolveKeyReference(`env:${name}`, env);

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
    archive: write(`${id}.tar.gz`, Buffer.alloc(100_000, 3)),
    manifest: write(`${id}.manifest.json`, Buffer.from('{}')),
  };
}
const facts = {
  created_at: '2026-12-01T10:00:00.000Z',
  root_id: 'root_r',
  producer_version: '0.1.0',
  capture_profile: 'online',
};

/** Which of the named keys open `entry` now. */
async function openers(r: Repository, entry: BackupEntry): Promise<string[]> {
  const out: string[] = [];
  for (const name of ['ALICE', 'BOB', 'CAROL', 'PASS'] as const) {
    const ok = await r.fetch(entry, mkdtempSync(join(scratch, 'spool-')), { key: `env:${name}`, env }).then(
      () => true,
      () => false,
    );
    if (ok) out.push(name);
  }
  return out;
}

describe('repo key add, remove and rotate', () => {
  it('add, then remove, then refuse to strand — each backup keeps its sealed bytes', async () => {
    const dir = join(scratch, 'repo-1');
    const r = await Repository.init(dir, { encrypt: true });
    const a = await r.publish('k1', pair('k1'), facts, { recipients: recipientsOf([alice.recipient], env) });
    const b = await r.publish('k2', pair('k2'), facts, { recipients: recipientsOf(['env:PASS'], env) });
    const sealed = readFileSync(join(dir, 'backups/k1/k1.tar.gz.sealed'));
    expect(await openers(r, a)).toEqual(['ALICE']);

    const add = {
      add: recipientsOf([bob.recipient], env),
      removeRecipients: [],
      removePassphrases: [],
      key: key('ALICE'),
    };
    const preview = await changeKeys(r, add, { execute: false });
    expect(preview.backups.map((x) => [x.backup_id, x.outcome])).toEqual([
      ['k1', 'changed'],
      ['k2', 'not_opened'],
    ]);
    expect(await openers(r, a), 'a preview writes nothing').toEqual(['ALICE']);
    await changeKeys(r, add, { execute: true });
    expect(await openers(r, a)).toEqual(['ALICE', 'BOB']);
    expect(await openers(r, b), 'a backup the key does not open is left as it is').toEqual(['PASS']);

    const remove = { add: [], removeRecipients: [recipientFingerprint(alice.recipient)], removePassphrases: [] };
    await changeKeys(r, remove, { execute: true });
    expect(await openers(r, a)).toEqual(['BOB']);
    expect(
      (await r.keySets('k1')).keys.map((k) => k.key.split('/').pop()),
      'older generations are gone',
    ).toEqual(['000003.json']);
    expect(readFileSync(join(dir, 'backups/k1/k1.tar.gz.sealed')).equals(sealed), 'no data re-encrypted').toBe(true);

    const strand = { add: [], removeRecipients: [], removePassphrases: [key('PASS')] };
    expect(await refusal(changeKeys(r, strand, { execute: true }))).toBe('repo_key_removal_strands');
    const e = await changeKeys(r, strand, { execute: true }).catch((x: unknown) => x);
    expect(isLoopxError(e) && e.details).toEqual({ backup_ids: ['k2'] });
    expect(await openers(r, b), 'a refused removal changes nothing').toEqual(['PASS']);
    await r.close();
  });

  it('rotate adds the new key and removes the old one in one generation; a passphrase can be removed by reference', async () => {
    const dir = join(scratch, 'repo-2');
    const r = await Repository.init(dir, { encrypt: true });
    const a = await r.publish('k3', pair('k3'), facts, {
      recipients: recipientsOf([alice.recipient, 'env:PASS'], env),
    });
    const rotate = {
      add: recipientsOf([carol.recipient], env),
      removeRecipients: [recipientFingerprint(alice.recipient)],
      removePassphrases: [key('PASS')],
      key: key('ALICE'),
    };
    const done = await changeKeys(r, rotate, { execute: true });
    expect(done.backups).toEqual([
      {
        backup_id: 'k3',
        outcome: 'changed',
        generation: 2,
        recipients: { x25519: [recipientFingerprint(carol.recipient)], passphrases: 0 },
      },
    ]);
    expect(await openers(r, a)).toEqual(['CAROL']);
    await r.close();
  });
});
