/**
 * The sealed repository format (src/repository/seal.ts, docs/repository-encryption.md): round
 * trips at every segment boundary, each attack of the threat model refused with its code (first by
 * the envelope's digests, then — with an entry forged to match the bytes — by the AEAD itself, so
 * neither layer hides the other), the keyless verify, recipients and rotation, hostile key sets,
 * and key references. The published vectors are recomputed in seal-vectors.test.ts.
 */
import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import {
  SEAL_CODES,
  buildEnvelope,
  checkSealed,
  envelopeEntry,
  generateIdentity,
  keySetFingerprints,
  newDataKey,
  opener,
  parseEnvelope,
  parseKeySet,
  parseRecipient,
  recipientFingerprint,
  recipientOf,
  resolveKeyReference,
  resolveRecipient,
  rewrap,
  sealer,
  unlock,
  unwrapDataKey,
  verifyEnvelope,
  wrapDataKey,
  type DataKey,
  type SealedEntry,
  type SealedEnvelope,
} from '../../src/repository/seal.js';

const SEG = 64;
const TAG = 16;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Feeds `bytes` in chunks of `chunk` (odd sizes cut across segment boundaries) through `t`. */
async function run(bytes: Buffer, t: Transform, chunk = 7): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += chunk) parts.push(bytes.subarray(i, i + chunk));
  const out: Buffer[] = [];
  await pipeline(Readable.from(parts), t, async (src: AsyncIterable<Buffer>) => {
    for await (const c of src) out.push(c);
  });
  return Buffer.concat(out);
}

interface Sealed {
  readonly sealed: Buffer;
  readonly entry: SealedEntry;
}

async function seal(dataKey: DataKey, backupId: string, objectName: string, plain: Buffer, segmentBytes = SEG) {
  const s = sealer({ dataKey, backupId, objectName, segmentBytes });
  const sealed = await run(plain, s);
  return { sealed, entry: s.summary() } satisfies Sealed;
}

const open = (dataKey: DataKey, backupId: string, entry: SealedEntry, sealed: Buffer, chunk = 5) =>
  run(sealed, opener({ dataKey, backupId, objectName: entry.name, entry }), chunk);

/** The sealed segments of an object, cut where its entry says. */
function segmentsOf({ sealed, entry }: Sealed): Buffer[] {
  const out: Buffer[] = [];
  for (let off = 0; off < sealed.length; off += entry.segment_bytes + TAG) {
    out.push(sealed.subarray(off, Math.min(sealed.length, off + entry.segment_bytes + TAG)));
  }
  return out;
}

/** An entry forged to describe `segments` exactly: what an attacker without the MAC key could write. */
function forged(entry: SealedEntry, segments: Buffer[]): SealedEntry {
  const sealed = Buffer.concat(segments);
  const plaintext_size = sealed.length - TAG * segments.length;
  return {
    ...entry,
    plaintext_size,
    sealed_size: sealed.length,
    sealed_sha256: sha(sealed),
    segments: segments.map(sha),
  };
}

const code = (c: string) => expect.objectContaining({ code: c });

describe('sealing round trip', () => {
  const key = newDataKey();
  const cases: [string, number][] = [
    ['an empty plaintext is one empty last segment', 0],
    ['a 1-byte plaintext', 1],
    ['exactly one segment', SEG],
    ['one byte over a segment', SEG + 1],
    ['several segments ending on a boundary', SEG * 4],
    ['several segments and a short last one', SEG * 5 + 13],
  ];
  for (const [name, size] of cases) {
    it(`${name} (${size} bytes) opens to the same bytes`, async () => {
      const plain = randomBytes(size);
      const s = await seal(key, 'bk-1', 'archive', plain);
      const count = Math.max(1, Math.ceil(size / SEG));
      expect(s.entry).toMatchObject({ plaintext_size: size, sealed_size: size + TAG * count, segment_bytes: SEG });
      expect(s.entry.segments).toHaveLength(count);
      expect(s.sealed.length).toBe(size + TAG * count);
      if (size > 8) expect(s.sealed.includes(plain)).toBe(false);
      expect(await open(key, 'bk-1', s.entry, s.sealed)).toEqual(plain);
    });
  }

  it('a 2.5 MiB object at the default 1 MiB segment size opens to the same bytes', async () => {
    const plain = randomBytes(5 << 19);
    const s = sealer({ dataKey: key, backupId: 'bk-1', objectName: 'archive' });
    const sealed = await run(plain, s, 100_003);
    expect(s.summary().segments).toHaveLength(3);
    expect(s.summary().segment_bytes).toBe(1 << 20);
    expect((await open(key, 'bk-1', s.summary(), sealed, 65_537)).equals(plain)).toBe(true);
  });

  it('two sealings of one object under one data key never share a key stream (a fresh key salt each)', async () => {
    const plain = Buffer.alloc(SEG * 2, 7);
    const a = await seal(key, 'bk-1', 'archive', plain);
    const b = await seal(key, 'bk-1', 'archive', plain);
    expect(a.entry.key_salt).not.toBe(b.entry.key_salt);
    expect(a.sealed.subarray(0, SEG).equals(b.sealed.subarray(0, SEG))).toBe(false);
  });

  it('a summary read before the stream ended is refused', () => {
    const s = sealer({ dataKey: key, backupId: 'bk-1', objectName: 'archive', segmentBytes: SEG });
    expect(() => s.summary()).toThrow(code(SEAL_CODES.incomplete));
  });

  it('out-of-range options are refused before anything is sealed', () => {
    const base = { dataKey: key, backupId: 'bk-1', objectName: 'archive' };
    for (const bad of [{ segmentBytes: 8 }, { segmentBytes: 1.5 }, { backupId: '../x' }, { objectName: 'A/B' }]) {
      expect(() => sealer({ ...base, ...bad })).toThrow(code(SEAL_CODES.optionsInvalid));
    }
  });
});

describe('attacks on sealed objects are refused', () => {
  const key = newDataKey();
  const other = newDataKey();
  let archive: Sealed;
  let manifest: Sealed;
  let segs: Buffer[];
  const plain = randomBytes(SEG * 3 + 8);
  const ready = (async () => {
    archive = await seal(key, 'bk-1', 'archive', plain);
    manifest = await seal(key, 'bk-1', 'manifest', randomBytes(SEG + 30));
    segs = segmentsOf(archive);
  })();

  /** Refused by the digests of the envelope entry, and by the AEAD when the entry is forged to match. */
  async function refusedTwice(bytes: Buffer[], digestCode: string, authIndex: number) {
    await ready;
    const sealed = Buffer.concat(bytes);
    await expect(open(key, 'bk-1', archive.entry, sealed)).rejects.toThrow(code(digestCode));
    await expect(checkSealed(Readable.from([sealed]), archive.entry)).rejects.toThrow(code(digestCode));
    const f = forged(archive.entry, bytes);
    await expect(open(key, 'bk-1', f, sealed)).rejects.toThrow(
      expect.objectContaining({ code: SEAL_CODES.segmentAuth, details: { object: 'archive', index: authIndex } }),
    );
  }

  it('a flipped bit in a segment', async () => {
    await ready;
    const flipped = Buffer.from(segs[1]!);
    flipped[3]! ^= 0x01;
    await refusedTwice([segs[0]!, flipped, segs[2]!, segs[3]!], SEAL_CODES.segmentDigest, 1);
  });

  it('two segments swapped', async () => {
    await ready;
    await refusedTwice([segs[1]!, segs[0]!, segs[2]!, segs[3]!], SEAL_CODES.segmentDigest, 0);
  });

  it('a segment moved from another object of the same backup (same data key)', async () => {
    await ready;
    const moved = segmentsOf(manifest)[0]!;
    await refusedTwice([segs[0]!, moved, segs[2]!, segs[3]!], SEAL_CODES.segmentDigest, 1);
  });

  it('the last segment dropped (truncation): the shorter stream ends early; re-described, its new last is not a last', async () => {
    await ready;
    await refusedTwice(segs.slice(0, 3), SEAL_CODES.truncated, 2);
  });

  it('a segment appended after the last', async () => {
    await ready;
    await expect(open(key, 'bk-1', archive.entry, Buffer.concat([...segs, segs[0]!]))).rejects.toThrow(
      code(SEAL_CODES.trailingBytes),
    );
    const extra = Buffer.concat([...segs, Buffer.from([0])]);
    await expect(checkSealed(Readable.from([extra]), archive.entry)).rejects.toThrow(code(SEAL_CODES.trailingBytes));
  });

  it('a whole object swapped in from another backup sealed under another data key', async () => {
    await ready;
    const theirs = await seal(other, 'bk-2', 'archive', plain);
    await refusedTwice(segmentsOf(theirs), SEAL_CODES.segmentDigest, 0);
    // Even their own entry does not open it here: another backup id, another key.
    await expect(open(key, 'bk-1', theirs.entry, theirs.sealed)).rejects.toThrow(code(SEAL_CODES.segmentAuth));
  });

  it('an object opened against another object’s entry', async () => {
    await ready;
    expect(() => opener({ dataKey: key, backupId: 'bk-1', objectName: 'manifest', entry: archive.entry })).toThrow(
      code(SEAL_CODES.objectMismatch),
    );
  });
});

describe('the envelope', () => {
  const key = newDataKey();
  let envelope: SealedEnvelope;
  const ready = (async () => {
    const a = await seal(key, 'bk-1', 'archive', randomBytes(SEG * 2 + 8));
    const m = await seal(key, 'bk-1', 'manifest', randomBytes(20));
    envelope = buildEnvelope({ dataKey: key, backupId: 'bk-1', objects: [m.entry, a.entry] });
  })();
  const edited = (edit: (e: { objects: SealedEntry[]; backup_id: string }) => void): SealedEnvelope => {
    const copy = structuredClone(envelope) as unknown as { objects: SealedEntry[]; backup_id: string };
    edit(copy);
    return parseEnvelope(JSON.stringify(copy));
  };

  it('verifies under its data key, through its published JSON, objects sorted by name', async () => {
    await ready;
    const back = parseEnvelope(JSON.stringify(envelope));
    expect(() => verifyEnvelope(back, key, { backupId: 'bk-1' })).not.toThrow();
    expect(back.objects.map((o) => o.name)).toEqual(['archive', 'manifest']);
    expect(envelopeEntry(back, 'manifest').plaintext_size).toBe(20);
  });

  it('an edited size, digest or backup id is refused by the MAC', async () => {
    await ready;
    const edits = [
      (e: { objects: SealedEntry[] }) =>
        Object.assign(e.objects[0]!, { plaintext_size: SEG * 2 + 7 }, { sealed_size: SEG * 2 + 7 + 48 }),
      (e: { objects: SealedEntry[] }) => Object.assign(e.objects[0]!, { sealed_sha256: 'ab'.repeat(32) }),
      (e: { objects: SealedEntry[] }) => Object.assign(e.objects[1]!, { segments: ['cd'.repeat(32)] }),
      (e: { backup_id: string }) => Object.assign(e, { backup_id: 'bk-2' }),
    ];
    for (const edit of edits) expect(() => verifyEnvelope(edited(edit), key)).toThrow(code(SEAL_CODES.envelopeMac));
    expect(() => verifyEnvelope(edited(edits[3]!), key, { backupId: 'bk-1' })).toThrow(code(SEAL_CODES.backupMismatch));
  });

  it('an envelope recomputed under another data key is refused by the key commitment', async () => {
    await ready;
    const forgedEnvelope = buildEnvelope({ dataKey: newDataKey(), backupId: 'bk-1', objects: envelope.objects });
    expect(() => verifyEnvelope(forgedEnvelope, key)).toThrow(code(SEAL_CODES.keyCommitment));
  });

  it('a malformed or unbounded envelope is refused by its shape, never trusted', async () => {
    await ready;
    expect(() => parseEnvelope('{')).toThrow(code(SEAL_CODES.envelopeInvalid));
    const bad = [
      (e: { objects: SealedEntry[] }) => Object.assign(e.objects[0]!, { segments: e.objects[0]!.segments.slice(1) }),
      (e: { objects: SealedEntry[] }) => Object.assign(e.objects[0]!, { segment_bytes: 1 << 30 }),
      (e: { objects: SealedEntry[] }) => Object.assign(e.objects[0]!, { extra: 1 }),
      (e: { objects: SealedEntry[] }) => e.objects.reverse(),
    ];
    for (const edit of bad) expect(() => edited(edit)).toThrow(code(SEAL_CODES.envelopeInvalid));
  });
});

describe('verify without the key', () => {
  it('checks every size and digest, reports counts only, and cannot open a segment', async () => {
    const key = newDataKey();
    const s = await seal(key, 'bk-1', 'archive', randomBytes(SEG * 2 + 1));
    const result = await checkSealed(Readable.from([s.sealed]), s.entry);
    expect(result).toEqual({ segments: 3, sealed_size: s.sealed.length });
    const flipped = Buffer.from(s.sealed);
    flipped[flipped.length - 1]! ^= 0x80;
    await expect(checkSealed(Readable.from([flipped]), s.entry)).rejects.toThrow(code(SEAL_CODES.segmentDigest));
    const short = s.sealed.subarray(0, SEG + TAG);
    await expect(checkSealed(Readable.from([short]), s.entry)).rejects.toThrow(code(SEAL_CODES.truncated));
    await expect(open(newDataKey(), 'bk-1', s.entry, s.sealed)).rejects.toThrow(code(SEAL_CODES.segmentAuth));
  });
});

describe('recipients, unwrapping and rotation', () => {
  const env = { SEAL_PASS: 'a long passphrase for the tests', SEAL_WRONG: 'not the passphrase' };
  const alice = generateIdentity();
  const bob = generateIdentity();
  const key = newDataKey();
  const idOf = (text: string) => resolveKeyReference('env:ID', { ID: text });
  let envelope: SealedEnvelope;
  const ready = (async () => {
    const s = await seal(key, 'bk-1', 'archive', Buffer.from('the archive'));
    envelope = buildEnvelope({ dataKey: key, backupId: 'bk-1', objects: [s.entry] });
  })();
  const recipients = [
    parseRecipient(alice.recipient),
    parseRecipient(bob.recipient),
    resolveRecipient('env:SEAL_PASS', env),
  ];
  const keySetP = wrapDataKey(key, 'bk-1', recipients);

  it('two X25519 recipients and a passphrase each unlock the backup', async () => {
    await ready;
    const keySet = parseKeySet(JSON.stringify(await keySetP));
    for (const identity of [idOf(alice.identity), idOf(bob.identity), resolveKeyReference('env:SEAL_PASS', env)]) {
      const got = await unlock({ envelope, keySet, identity, backupId: 'bk-1' });
      expect(got.equals(key)).toBe(true);
    }
    expect(keySetFingerprints(keySet)).toEqual({
      x25519: [recipientFingerprint(alice.recipient), recipientFingerprint(bob.recipient)],
      passphrases: 1,
    });
  });

  it('rotation drops a recipient without touching data: that identity is refused, the others still open', async () => {
    await ready;
    const before = await keySetP;
    const keep = [parseRecipient(alice.recipient), resolveRecipient('env:SEAL_PASS', env)];
    const { key_commitment: commitment } = envelope;
    await expect(rewrap(before, newDataKey(), keep, { commitment })).rejects.toThrow(code(SEAL_CODES.keyCommitment));
    const after = await rewrap(before, key, keep, { commitment });
    expect(after.generation).toBe(before.generation + 1);
    await expect(unlock({ envelope, keySet: after, identity: idOf(bob.identity), backupId: 'bk-1' })).rejects.toThrow(
      code(SEAL_CODES.keyNotRecipient),
    );
    const got = await unlock({ envelope, keySet: after, identity: idOf(alice.identity), backupId: 'bk-1' });
    expect(got.equals(key)).toBe(true);
    expect(keySetFingerprints(after).x25519).toEqual([recipientFingerprint(alice.recipient)]);
  });

  it('a wrong passphrase and a stranger’s identity are refused', async () => {
    const keySet = await keySetP;
    await expect(unwrapDataKey(keySet, 'bk-1', resolveKeyReference('env:SEAL_WRONG', env))).rejects.toThrow(
      code(SEAL_CODES.keyNotRecipient),
    );
    await expect(unwrapDataKey(keySet, 'bk-1', idOf(generateIdentity().identity))).rejects.toThrow(
      code(SEAL_CODES.keyNotRecipient),
    );
  });

  it('a key set from another backup is refused, also when relabelled (its stanzas bind their backup)', async () => {
    await ready;
    const theirs = await wrapDataKey(newDataKey(), 'bk-2', [parseRecipient(alice.recipient)]);
    const identity = idOf(alice.identity);
    await expect(unlock({ envelope, keySet: theirs, identity, backupId: 'bk-1' })).rejects.toThrow(
      code(SEAL_CODES.backupMismatch),
    );
    const relabelled = { ...theirs, backup_id: 'bk-1' };
    await expect(unwrapDataKey(relabelled, 'bk-1', identity)).rejects.toThrow(code(SEAL_CODES.keyNotRecipient));
  });

  it('a key set whose key does not match the envelope is refused by the commitment before anything is opened', async () => {
    await ready;
    const wrong = await wrapDataKey(newDataKey(), 'bk-1', [parseRecipient(alice.recipient)]);
    await expect(unlock({ envelope, keySet: wrong, identity: idOf(alice.identity), backupId: 'bk-1' })).rejects.toThrow(
      code(SEAL_CODES.keyCommitment),
    );
  });

  it('hostile scrypt parameters are refused before any KDF work', async () => {
    const keySet = await keySetP;
    const scrypt = keySet.stanzas.find((s) => s.type === 'scrypt')!;
    const started = performance.now();
    for (const bad of [{ log_n: 30 }, { log_n: 19 }, { log_n: 10 }, { r: 1024 }, { p: 64 }, { log_n: 17.5 }]) {
      const hostile = { ...keySet, stanzas: [{ ...scrypt, ...bad }] };
      expect(() => parseKeySet(JSON.stringify(hostile))).toThrow(code(SEAL_CODES.kdfParams));
      await expect(unwrapDataKey(hostile, 'bk-1', resolveKeyReference('env:SEAL_PASS', env))).rejects.toThrow(
        code(SEAL_CODES.kdfParams),
      );
    }
    expect(performance.now() - started).toBeLessThan(250); // one 2^17 scrypt alone takes longer
  });

  it('encryption without a recipient, or to a malformed one, is refused', async () => {
    await expect(wrapDataKey(key, 'bk-1', [])).rejects.toThrow(code(SEAL_CODES.noRecipients));
    for (const bad of ['loopx-x25519-pub:short', 'loopx-x25519-pub:' + 'A'.repeat(42) + '=', 'ssh-ed25519 AAAA']) {
      expect(() => parseRecipient(bad)).toThrow(code(SEAL_CODES.recipientInvalid));
    }
    const lowOrder = `loopx-x25519-pub:${Buffer.alloc(32).toString('base64url')}`;
    await expect(wrapDataKey(key, 'bk-1', [parseRecipient(lowOrder)])).rejects.toThrow(
      code(SEAL_CODES.recipientInvalid),
    );
  });

  it('no key material reaches a key set, an envelope, an error or an inspected value', async () => {
    await ready;
    const keySet = await keySetP;
    const secrets = [key.export().toString('hex'), alice.identity.slice(17), env.SEAL_PASS];
    const errors: unknown[] = [];
    await unwrapDataKey(keySet, 'bk-1', resolveKeyReference('env:SEAL_WRONG', env)).catch((e: unknown) =>
      errors.push(e),
    );
    const shown = [JSON.stringify(keySet), JSON.stringify(envelope), inspect(idOf(alice.identity)), inspect(key)];
    shown.push(...errors.map((e) => JSON.stringify(e) + String(e)));
    for (const text of shown) for (const s of secrets) expect(text).not.toContain(s);
  });
});

describe('key references', () => {
  const dir = mkdtempSync(join(tmpdir(), 'loopx-seal-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const { identity, recipient } = generateIdentity();
  const file = (name: string, text: string, mode: number) => {
    const path = join(dir, name);
    writeFileSync(path, text, { mode });
    chmodSync(path, mode);
    return path;
  };

  it('a 0600 file (plain path or file:) and env:NAME resolve; one trailing newline is not part of the key', () => {
    const path = file('id', `${identity}\n`, 0o600);
    expect(recipientOf(identity)).toBe(recipient);
    for (const ref of [path, `file:${path}`, 'env:K']) {
      const id = resolveKeyReference(ref, { K: identity });
      expect(id.kind).toBe('x25519');
      expect(resolveRecipient(ref, { K: identity })).toMatchObject({ kind: 'x25519' });
    }
    expect(resolveKeyReference('env:P', { P: 'passphrase\n' }).kind).toBe('passphrase');
  });

  it('a key file readable by others, or a symbolic link to a good one, is refused without naming its path', () => {
    const open = file('open', identity, 0o644);
    const good = file('good', identity, 0o600);
    const link = join(dir, 'link');
    symlinkSync(good, link);
    for (const ref of [open, link]) {
      const err = (() => {
        try {
          resolveKeyReference(ref);
        } catch (e) {
          return e as Error;
        }
        throw new Error('not refused');
      })();
      expect(err).toMatchObject({ code: SEAL_CODES.keyFileUnsafe });
      expect(JSON.stringify(err) + err.message).not.toContain(dir);
    }
  });

  it('a missing reference, a malformed one, a literal key or an empty secret is refused', () => {
    expect(() => resolveKeyReference('env:UNSET_SEAL_VAR', {})).toThrow(code(SEAL_CODES.keyRefMissing));
    expect(() => resolveKeyReference(join(dir, 'absent'))).toThrow(code(SEAL_CODES.keyRefMissing));
    expect(() => resolveKeyReference('env:1BAD')).toThrow(code(SEAL_CODES.keyRefInvalid));
    expect(() => resolveKeyReference(identity)).toThrow(code(SEAL_CODES.keyRefInvalid));
    expect(() => resolveKeyReference('env:E', { E: '' })).toThrow(code(SEAL_CODES.identityInvalid));
    expect(() => resolveKeyReference('env:E', { E: recipient })).toThrow(code(SEAL_CODES.identityInvalid));
  });
});
