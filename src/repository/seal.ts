/**
 * The sealed repository format `loopx.sealed/v1` (docs/repository-encryption.md): how a backup's
 * objects (its archive, its manifest) are encrypted into a repository, the cleartext envelope that
 * records and authenticates them, and the checks a reader makes with and without the key.
 *
 * Rules this module keeps:
 *   - Sealing is a STREAM construction: each object is cut into fixed segments, each sealed with
 *     AES-256-GCM under a per-object key (HKDF of the data key, backup id, object name and a random
 *     salt), its nonce and associated data binding its index and a last-segment flag. Memory is one
 *     segment, whatever the object's size.
 *   - The envelope records each segment's ciphertext digest, commits to the data key and is
 *     MAC'd under a key derived from it. A reader verifies commitment then MAC before it trusts
 *     any entry, and checks each segment's digest before it decrypts that segment; no plaintext
 *     leaves `opener` before its segment authenticated.
 *   - Without the key, `checkSealed` still checks every size and digest; it never decrypts.
 *   - Every refusal is a typed code of SEAL_CODES; a failure to seal is an error of the stream,
 *     never cleartext written in its place. No key material in any error, log or document.
 *
 * Hand-written on node:crypto (AES-256-GCM, HKDF-SHA256, HMAC-SHA256): `age-encryption` (npm)
 * implements a similar STREAM, but as one opaque file, with no backup/object binding and no
 * digests a keyless verify can check; no maintained npm package implements this profile.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { canonicalJson, lengthPrefixed, sha256Hex, u64be, utf8 } from '../core/index.js';
import {
  sealedBackupMismatch,
  envelopeInvalid,
  envelopeMacMismatch,
  keyCommitmentMismatch,
  sealedDigestMismatch,
  sealedEntryMismatch,
  sealedObjectTooLarge,
  sealedTrailingBytes,
  sealedTruncated,
  sealIncomplete,
  sealOptionsInvalid,
  segmentAuthFailed,
  segmentDigestMismatch,
} from './seal-codes.js';
import {
  SEAL_BACKUP_ID,
  SEALED_FORMAT,
  checkBackupId,
  checkDataKey,
  derive,
  hexEqual,
  keyCommitment,
  unwrapDataKey,
  validateKeySet,
  type DataKey,
  type Identity,
  type KeySet,
  type Rng,
} from './seal-keys.js';

export { SEAL_CODES, type SealCode } from './seal-codes.js';
export {
  IDENTITY_PREFIX,
  KEY_SET_FORMAT,
  KEY_SET_LIMITS,
  RECIPIENT_PREFIX,
  SCRYPT,
  SEALED_FORMAT,
  generateIdentity,
  keySetFingerprints,
  newDataKey,
  parseKeySet,
  parseRecipient,
  recipientFingerprint,
  recipientOf,
  resolveKeyReference,
  resolveRecipient,
  rewrap,
  unwrapDataKey,
  wrapDataKey,
  type DataKey,
  type Identity,
  type KeySet,
  type Recipient,
  type Rng,
  type ScryptStanza,
  type Stanza,
  type X25519Stanza,
} from './seal-keys.js';

/** AES-256-GCM tag bytes appended to each segment. */
export const TAG_BYTES = 16;

export const SEAL_LIMITS = {
  defaultSegmentBytes: 1 << 20,
  minSegmentBytes: 16,
  maxSegmentBytes: 16 << 20,
  /** Segments of one envelope, all objects together (1 TiB at the default segment size). */
  maxSegments: 1 << 20,
  maxObjects: 16,
  maxEnvelopeBytes: 72 << 20,
};

/** An object name inside a backup ('archive', 'manifest'). */
export const SEAL_OBJECT_NAME = /^[a-z][a-z0-9._-]{0,63}$/;

/** One sealed object as the envelope records it. */
export interface SealedEntry {
  readonly name: string;
  /** 32 random bytes (hex) mixed into the object key: a data key never seals two objects under one key. */
  readonly key_salt: string;
  readonly segment_bytes: number;
  readonly plaintext_size: number;
  readonly sealed_size: number;
  readonly sealed_sha256: string;
  /** SHA-256 (hex) of each sealed segment (ciphertext ‖ tag), in order. */
  readonly segments: readonly string[];
}

/** The cleartext envelope of a sealed backup. */
export interface SealedEnvelope {
  readonly format: typeof SEALED_FORMAT;
  readonly backup_id: string;
  readonly objects: readonly SealedEntry[];
  /** HKDF(data key, info = "key commitment"), hex: which data key this envelope belongs to. */
  readonly key_commitment: string;
  /** HMAC-SHA256 under HKDF(data key, info = "envelope mac") of the canonical JSON of every other field. */
  readonly mac: string;
}

// ---- the segment construction --------------------------------------------------------------

const objectKey = (dataKey: DataKey, backupId: string, name: string, keySalt: string): Buffer =>
  derive(dataKey, ['object key', backupId, name, Buffer.from(keySalt, 'hex')]);

/** 12 bytes: the segment index as 11 bytes big-endian, then 1 if it is the last segment, else 0. */
export function segmentNonce(index: number, last: boolean): Buffer {
  const nonce = Buffer.alloc(12);
  nonce.writeUIntBE(index, 5, 6);
  nonce[11] = last ? 1 : 0;
  return nonce;
}

/** Length-prefixed (format id, backup id, object name, u64 index, u8 last flag). */
export const segmentAd = (backupId: string, name: string, index: number, last: boolean): Uint8Array =>
  lengthPrefixed([utf8(SEALED_FORMAT), utf8(backupId), utf8(name), u64be(index), Uint8Array.of(last ? 1 : 0)]);

interface Binding {
  readonly key: Buffer;
  readonly backupId: string;
  readonly name: string;
}

function sealSegment(b: Binding, index: number, last: boolean, plain: Buffer): Buffer {
  const cipher = createCipheriv('aes-256-gcm', b.key, segmentNonce(index, last));
  cipher.setAAD(segmentAd(b.backupId, b.name, index, last));
  return Buffer.concat([cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
}

function openSegment(b: Binding, index: number, last: boolean, sealed: Buffer): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', b.key, segmentNonce(index, last));
  decipher.setAAD(segmentAd(b.backupId, b.name, index, last));
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES)), decipher.final()]);
  } catch {
    throw segmentAuthFailed(b.name, index);
  }
}

const segmentCount = (plaintextSize: number, segmentBytes: number): number =>
  Math.max(1, Math.ceil(plaintextSize / segmentBytes));

// ---- sealing -------------------------------------------------------------------------------

export interface SealerOptions {
  readonly dataKey: DataKey;
  readonly backupId: string;
  readonly objectName: string;
  readonly segmentBytes?: number;
  /** Test vectors only: the source of the object's key salt. */
  readonly rng?: Rng;
}

/** A sealing stream: plaintext in, sealed segments out; `summary()` after 'end' is the envelope entry. */
export type Sealer = Transform & { summary(): SealedEntry };

function checkSegmentBytes(n: number): number {
  const ok = Number.isInteger(n) && n >= SEAL_LIMITS.minSegmentBytes && n <= SEAL_LIMITS.maxSegmentBytes;
  if (!ok) throw sealOptionsInvalid('segment bytes');
  return n;
}

function checkObjectName(name: string): string {
  if (typeof name !== 'string' || !SEAL_OBJECT_NAME.test(name)) throw sealOptionsInvalid('object name');
  return name;
}

/**
 * A Transform that seals one object. It holds at most one segment (plus the chunk being cut): a
 * full segment is sealed as not-last only once more plaintext arrives, so the last segment is
 * known at 'end'. An empty plaintext is one empty last segment.
 */
export function sealer(options: SealerOptions): Sealer {
  const segmentBytes = checkSegmentBytes(options.segmentBytes ?? SEAL_LIMITS.defaultSegmentBytes);
  const name = checkObjectName(options.objectName);
  const backupId = checkBackupId(options.backupId);
  const keySalt = Buffer.from((options.rng ?? randomBytes)(32)).toString('hex');
  const binding: Binding = { key: objectKey(checkDataKey(options.dataKey), backupId, name, keySalt), backupId, name };
  const whole = createHash('sha256');
  const segments: string[] = [];
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let plaintextSize = 0;
  let sealedSize = 0;
  let done: SealedEntry | undefined;

  const emit = (stream: Transform, last: boolean): void => {
    if (segments.length >= SEAL_LIMITS.maxSegments)
      throw sealedObjectTooLarge(name, `${SEAL_LIMITS.maxSegments} segments`);
    const plain = pending.length === 1 ? pending[0]! : Buffer.concat(pending);
    const sealed = sealSegment(binding, segments.length, last, plain);
    pending = [];
    pendingBytes = 0;
    whole.update(sealed);
    segments.push(sha256Hex(sealed));
    sealedSize += sealed.length;
    stream.push(sealed);
  };

  const stream = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      try {
        for (let off = 0; off < chunk.length;) {
          if (pendingBytes === segmentBytes) emit(this, false);
          const take = Math.min(segmentBytes - pendingBytes, chunk.length - off);
          pending.push(chunk.subarray(off, off + take));
          pendingBytes += take;
          plaintextSize += take;
          off += take;
        }
        callback();
      } catch (e) {
        callback(e as Error);
      }
    },
    flush(callback: TransformCallback) {
      try {
        emit(this, true);
        const sealed_sha256 = whole.digest('hex');
        const sizes = { segment_bytes: segmentBytes, plaintext_size: plaintextSize, sealed_size: sealedSize };
        done = { name, key_salt: keySalt, ...sizes, sealed_sha256, segments };
        binding.key.fill(0);
        callback();
      } catch (e) {
        callback(e as Error);
      }
    },
  });
  return Object.assign(stream, {
    summary(): SealedEntry {
      if (!done) throw sealIncomplete();
      return done;
    },
  });
}

// ---- reading: segment walk, keyless check, opener --------------------------------------------

interface SegmentWalk {
  push(chunk: Buffer): void;
  end(): void;
}

/**
 * Cuts a sealed stream at the boundaries `entry` fixes and checks each segment's digest before
 * handing it on; refuses bytes after the last segment, a stream that ends early, and a whole
 * object whose size or digest differs from the entry.
 */
function segmentWalk(
  entry: SealedEntry,
  onSegment: (sealed: Buffer, index: number, last: boolean) => void,
): SegmentWalk {
  const count = entry.segments.length;
  const sizeOf = (i: number): number =>
    (i < count - 1 ? entry.segment_bytes : entry.plaintext_size - (count - 1) * entry.segment_bytes) + TAG_BYTES;
  const whole = createHash('sha256');
  let index = 0;
  let parts: Buffer[] = [];
  let have = 0;
  let total = 0;
  return {
    push(chunk: Buffer): void {
      for (let off = 0; off < chunk.length;) {
        if (index >= count) throw sealedTrailingBytes(entry.name);
        const size = sizeOf(index);
        const take = Math.min(size - have, chunk.length - off);
        parts.push(chunk.subarray(off, off + take));
        have += take;
        off += take;
        if (have < size) continue;
        const sealed = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
        parts = [];
        have = 0;
        whole.update(sealed);
        total += sealed.length;
        if (sha256Hex(sealed) !== entry.segments[index]) throw segmentDigestMismatch(entry.name, index);
        onSegment(sealed, index, index === count - 1);
        index += 1;
      }
    },
    end(): void {
      if (index < count) throw sealedTruncated(entry.name, index, count);
      if (total !== entry.sealed_size || whole.digest('hex') !== entry.sealed_sha256) {
        throw sealedDigestMismatch(entry.name);
      }
    },
  };
}

const asBuffer = (chunk: unknown): Buffer =>
  Buffer.isBuffer(chunk) ? chunk : typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk as Uint8Array);

/**
 * Verify without the key: every segment's size and digest, the object's size and digest, nothing
 * after the last segment. Resolves with the counts checked, or rejects with the first refusal.
 * It cannot decrypt; an entry is only as trustworthy as the envelope it came from.
 */
export async function checkSealed(
  source: AsyncIterable<unknown>,
  entry: SealedEntry,
): Promise<{ segments: number; sealed_size: number }> {
  const checked = validateEntry(entry, 'entry');
  const walk = segmentWalk(checked, () => {});
  for await (const chunk of source) walk.push(asBuffer(chunk));
  walk.end();
  return { segments: checked.segments.length, sealed_size: checked.sealed_size };
}

export interface OpenerOptions {
  readonly dataKey: DataKey;
  readonly backupId: string;
  readonly objectName: string;
  /** The object's entry from an envelope that `verifyEnvelope` (or `unlock`) accepted. */
  readonly entry: SealedEntry;
}

/**
 * A Transform that opens one sealed object: each segment's digest is checked against the entry,
 * then the segment is authenticated and decrypted at its index and last flag; plaintext is pushed
 * only after its segment authenticated. Truncation, trailing bytes, a reordered, moved or
 * swapped-in segment are refused as errors of the stream.
 */
export function opener(options: OpenerOptions): Transform {
  const entry = validateEntry(options.entry, 'entry');
  if (entry.name !== options.objectName) throw sealedEntryMismatch(options.objectName);
  const backupId = checkBackupId(options.backupId);
  const key = objectKey(checkDataKey(options.dataKey), backupId, entry.name, entry.key_salt);
  const binding: Binding = { key, backupId, name: entry.name };
  const stream: Transform = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      try {
        walk.push(chunk);
        callback();
      } catch (e) {
        callback(e as Error);
      }
    },
    flush(callback: TransformCallback) {
      try {
        walk.end();
        key.fill(0);
        callback();
      } catch (e) {
        callback(e as Error);
      }
    },
  });
  const walk = segmentWalk(entry, (sealed, index, last) => {
    stream.push(openSegment(binding, index, last, sealed));
  });
  return stream;
}

// ---- the envelope --------------------------------------------------------------------------

const macOf = (dataKey: DataKey, body: Omit<SealedEnvelope, 'mac'>): string =>
  createHmac('sha256', derive(dataKey, ['envelope mac']))
    .update(canonicalJson(body))
    .digest('hex');

/** The envelope of a backup's sealed objects (sorted by name), committed to and MAC'd under its data key. */
export function buildEnvelope(input: {
  readonly dataKey: DataKey;
  readonly backupId: string;
  readonly objects: readonly SealedEntry[];
}): SealedEnvelope {
  const dataKey = checkDataKey(input.dataKey);
  const objects = [...input.objects].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const body = {
    format: SEALED_FORMAT,
    backup_id: checkBackupId(input.backupId),
    objects: objects.map((o) => ({ ...o, segments: [...o.segments] })),
    key_commitment: keyCommitment(dataKey),
  } as const;
  validateEnvelope({ ...body, mac: '0'.repeat(64) });
  return { ...body, mac: macOf(dataKey, body) };
}

/**
 * Accept an envelope under `dataKey`: its shape, its backup (when `backupId` is given), the key
 * commitment (is this the envelope's data key?), then the MAC (was anything edited?).
 */
export function verifyEnvelope(envelope: SealedEnvelope, dataKey: DataKey, options: { backupId?: string } = {}): void {
  const checked = validateEnvelope(envelope);
  if (options.backupId !== undefined && checked.backup_id !== options.backupId) throw sealedBackupMismatch('envelope');
  if (!hexEqual(keyCommitment(checkDataKey(dataKey)), checked.key_commitment)) throw keyCommitmentMismatch();
  const { mac, ...body } = checked;
  if (!hexEqual(macOf(dataKey, body), mac)) throw envelopeMacMismatch();
}

/**
 * What a reader without the key can check of the binding: the envelope and the key set both
 * belong to the backup being read. (Each object's digests are then `checkSealed`'s.)
 */
export function checkEnvelopeBinding(envelope: SealedEnvelope, keySet: KeySet, backupId: string): void {
  if (validateEnvelope(envelope).backup_id !== backupId) throw sealedBackupMismatch('envelope');
  if (validateKeySet(keySet).backup_id !== backupId) throw sealedBackupMismatch('key set');
}

/**
 * The data key of a sealed backup, ready to open its objects: the key set and envelope belong to
 * `backupId`, the identity unwraps a stanza whose key matches the envelope's commitment, and the
 * envelope's MAC verifies under it — all before anything is decrypted.
 */
export async function unlock(input: {
  readonly envelope: SealedEnvelope;
  readonly keySet: KeySet;
  readonly identity: Identity;
  readonly backupId: string;
}): Promise<DataKey> {
  checkEnvelopeBinding(input.envelope, input.keySet, input.backupId);
  const commitment = input.envelope.key_commitment;
  const dataKey = await unwrapDataKey(input.keySet, input.backupId, input.identity, { commitment });
  verifyEnvelope(input.envelope, dataKey, { backupId: input.backupId });
  return dataKey;
}

/** The entry of object `name`, or a refusal when the envelope has none. */
export function envelopeEntry(envelope: SealedEnvelope, name: string): SealedEntry {
  const entry = envelope.objects.find((o) => o.name === name);
  if (!entry) throw sealedEntryMismatch(name);
  return entry;
}

/** The bytes a repository stores for an envelope or a key set: canonical JSON, UTF-8. */
export const encodeSealedJson = (document: SealedEnvelope | KeySet): Uint8Array => utf8(canonicalJson(document));

/** An envelope read from a repository: JSON of the published schema, every bound checked. */
export function parseEnvelope(json: string | Uint8Array): SealedEnvelope {
  const size = typeof json === 'string' ? Buffer.byteLength(json, 'utf8') : json.byteLength;
  if (size > SEAL_LIMITS.maxEnvelopeBytes) throw envelopeInvalid('size');
  let value: unknown;
  try {
    value = JSON.parse(typeof json === 'string' ? json : Buffer.from(json).toString('utf8'));
  } catch {
    throw envelopeInvalid('JSON');
  }
  return validateEnvelope(value);
}

// ---- shape and bounds ----------------------------------------------------------------------

const HEX32 = /^[0-9a-f]{64}$/;
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isSize = (v: unknown, max: number): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max;

function exactKeys(v: Record<string, unknown>, keys: readonly string[], at: string): void {
  const have = Object.keys(v);
  if (have.length !== keys.length || !keys.every((k) => Object.hasOwn(v, k))) throw envelopeInvalid(at);
}

const ENTRY_KEYS = ['name', 'key_salt', 'segment_bytes', 'plaintext_size', 'sealed_size', 'sealed_sha256', 'segments'];

/** One entry's shape, and the sizes and segment count it implies agreeing with each other. */
function validateEntry(v: unknown, at: string): SealedEntry {
  if (!isRecord(v)) throw envelopeInvalid(at);
  exactKeys(v, ENTRY_KEYS, at);
  if (typeof v.name !== 'string' || !SEAL_OBJECT_NAME.test(v.name)) throw envelopeInvalid(`${at}.name`);
  if (typeof v.key_salt !== 'string' || !HEX32.test(v.key_salt)) throw envelopeInvalid(`${at}.key_salt`);
  const seg = v.segment_bytes;
  if (!isSize(seg, SEAL_LIMITS.maxSegmentBytes) || seg < SEAL_LIMITS.minSegmentBytes) {
    throw envelopeInvalid(`${at}.segment_bytes`);
  }
  if (!isSize(v.plaintext_size, SEAL_LIMITS.maxSegments * seg)) throw envelopeInvalid(`${at}.plaintext_size`);
  const count = segmentCount(v.plaintext_size, seg);
  const segments = v.segments;
  if (!Array.isArray(segments) || segments.length !== count || count > SEAL_LIMITS.maxSegments) {
    throw envelopeInvalid(`${at}.segments`);
  }
  if (!segments.every((d) => typeof d === 'string' && HEX32.test(d))) throw envelopeInvalid(`${at}.segments`);
  if (v.sealed_size !== v.plaintext_size + count * TAG_BYTES) throw envelopeInvalid(`${at}.sealed_size`);
  if (typeof v.sealed_sha256 !== 'string' || !HEX32.test(v.sealed_sha256)) throw envelopeInvalid(`${at}.sealed_sha256`);
  return v as unknown as SealedEntry;
}

function validateEnvelope(v: unknown): SealedEnvelope {
  if (!isRecord(v)) throw envelopeInvalid('document');
  exactKeys(v, ['format', 'backup_id', 'objects', 'key_commitment', 'mac'], 'document');
  if (v.format !== SEALED_FORMAT) throw envelopeInvalid('format');
  if (typeof v.backup_id !== 'string' || !SEAL_BACKUP_ID.test(v.backup_id)) throw envelopeInvalid('backup_id');
  if (typeof v.key_commitment !== 'string' || !HEX32.test(v.key_commitment)) throw envelopeInvalid('key_commitment');
  if (typeof v.mac !== 'string' || !HEX32.test(v.mac)) throw envelopeInvalid('mac');
  const objects = v.objects;
  if (!Array.isArray(objects) || objects.length < 1 || objects.length > SEAL_LIMITS.maxObjects) {
    throw envelopeInvalid('objects');
  }
  let total = 0;
  objects.forEach((o, i) => {
    const entry = validateEntry(o, `objects[${i}]`);
    const previous = i > 0 ? (objects[i - 1] as SealedEntry).name : '';
    if (i > 0 && !(previous < entry.name)) throw envelopeInvalid(`objects[${i}].name`);
    total += entry.segments.length;
  });
  if (total > SEAL_LIMITS.maxSegments) throw envelopeInvalid('objects');
  return v as unknown as SealedEnvelope;
}
