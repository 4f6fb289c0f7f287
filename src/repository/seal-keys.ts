/**
 * Keys of the sealed repository format: the per-backup data key, recipients and identities, key
 * references, and the key set that wraps a backup's data key for each recipient (an X25519 public
 * key, or a passphrase through scrypt). Specified byte by byte in docs/repository-encryption.md.
 *
 * Rules this module keeps:
 *   - Secrets live in `KeyObject`s (data keys, private keys, passphrases), which print and
 *     serialize as nothing; raw bytes are exported only at the one call that needs them and
 *     zeroed after. No secret ever reaches an error, a log line or a JSON document.
 *   - Keys are references (`env:NAME`, `file:PATH` or a path to a regular 0600 file of ours);
 *     a secret given literally is refused.
 *   - A key set is untrusted input: its shape and every bound (stanza count, scrypt cost) are
 *     checked before any KDF runs, so a hostile key set cannot make the reader allocate gigabytes.
 *   - Rotation (`rewrap`) writes a new key set for the same data key; data is never re-encrypted.
 *
 * Hand-written on node:crypto primitives (X25519, HKDF-SHA256, scrypt, AES-256-GCM). We considered
 * `age-encryption` (npm): its file format has no place for loopx's backup/object binding, a
 * separately rewritable key set, or ciphertext digests checkable without the key, and it would add
 * a dependency for what is ~300 lines over primitives Node already ships.
 */
import {
  createCipheriv,
  createDecipheriv,
  createPrivateKey,
  createPublicKey,
  createSecretKey,
  diffieHellman,
  hkdfSync,
  randomBytes,
  scrypt,
  timingSafeEqual,
  type KeyObject,
} from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
import { lengthPrefixed, sha256Hex, utf8 } from '../core/index.js';
import {
  sealedBackupMismatch,
  identityInvalid,
  kdfParamsRefused,
  keyCommitmentMismatch,
  keyFileUnsafe,
  keyNotRecipient,
  keyRefInvalid,
  keyRefMissing,
  keySetInvalid,
  noRecipients,
  recipientInvalid,
  sealOptionsInvalid,
} from './seal-codes.js';

export const SEALED_FORMAT = 'loopx.sealed/v1';
export const KEY_SET_FORMAT = 'loopx.sealed-keys/v1';
export const RECIPIENT_PREFIX = 'loopx-x25519-pub:';
export const IDENTITY_PREFIX = 'loopx-x25519-key:';

/** scrypt cost written for new passphrase stanzas, and the bounds a read accepts (at most 256 MiB of memory). */
export const SCRYPT = { logN: 17, r: 8, p: 1, minLogN: 15, maxLogN: 18 } as const;

export const KEY_SET_LIMITS = { maxBytes: 64 * 1024, maxStanzas: 32, maxPassphraseStanzas: 4, maxKeyFileBytes: 4096 };

/** A backup id: the repository's alphabet (src/repository/repository.ts), a superset of backup-state's. */
export const SEAL_BACKUP_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

/** A source of random bytes. Only the test vectors pass one; everything else uses `randomBytes`. */
export type Rng = (bytes: number) => Uint8Array;

/** A backup's data key: 32 secret bytes, held as a KeyObject so it never prints. */
export type DataKey = KeyObject;

/** What can open a key set: an X25519 private key or a passphrase. */
export type Identity =
  | { readonly kind: 'x25519'; readonly privateKey: KeyObject; readonly publicKey: KeyObject }
  | { readonly kind: 'passphrase'; readonly secret: KeyObject };

/** Who a data key is wrapped for: an X25519 public key or a passphrase. */
export type Recipient =
  | { readonly kind: 'x25519'; readonly publicKey: KeyObject }
  | { readonly kind: 'passphrase'; readonly secret: KeyObject };

export interface X25519Stanza {
  readonly type: 'x25519';
  /** `recipientFingerprint` of the recipient's public key: a hint to pick stanzas, never trusted. */
  readonly recipient: string;
  readonly ephemeral: string;
  readonly nonce: string;
  readonly wrapped: string;
}

export interface ScryptStanza {
  readonly type: 'scrypt';
  readonly log_n: number;
  readonly r: number;
  readonly p: number;
  readonly salt: string;
  readonly nonce: string;
  readonly wrapped: string;
}

export type Stanza = X25519Stanza | ScryptStanza;

export interface KeySet {
  readonly format: typeof KEY_SET_FORMAT;
  readonly backup_id: string;
  /** 1 when written with the backup; each rotation adds one. Not authenticated: see the threat model. */
  readonly generation: number;
  readonly stanzas: readonly Stanza[];
}

const PKCS8_X25519 = Buffer.from('302e020100300506032b656e04220420', 'hex');
const SPKI_X25519 = Buffer.from('302a300506032b656e032100', 'hex');
const B64URL_32 = /^[A-Za-z0-9_-]{43}$/;
const HEX = (bytes: number) => new RegExp(`^[0-9a-f]{${bytes * 2}}$`);
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** HKDF-SHA256 over `ikm` with the format id as salt (unless given) and a length-prefixed info. */
export function derive(ikm: KeyObject | Uint8Array, info: readonly (string | Uint8Array)[], salt?: Uint8Array): Buffer {
  const parts = info.map((p) => (typeof p === 'string' ? utf8(p) : p));
  return Buffer.from(hkdfSync('sha256', ikm, salt ?? utf8(SEALED_FORMAT), lengthPrefixed(parts), 32));
}

/** The envelope's key commitment to a data key (hex): HKDF(data key, info = "key commitment"). */
export const keyCommitment = (dataKey: DataKey): string => derive(dataKey, ['key commitment']).toString('hex');

/** Constant-time equality of two lowercase-hex strings of equal length. */
export function hexEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length * 2 === a.length && timingSafeEqual(x, y);
}

/** A fresh random data key for one backup. */
export function newDataKey(rng: Rng = randomBytes): DataKey {
  const bytes = Buffer.from(rng(32));
  try {
    return createSecretKey(bytes);
  } finally {
    bytes.fill(0);
  }
}

export function checkDataKey(dataKey: DataKey): DataKey {
  if (dataKey?.type !== 'secret' || dataKey.symmetricKeySize !== 32) throw sealOptionsInvalid('data key');
  return dataKey;
}

export function checkBackupId(backupId: string): string {
  if (typeof backupId !== 'string' || !SEAL_BACKUP_ID.test(backupId)) throw sealOptionsInvalid('backup id');
  return backupId;
}

// ---- X25519 identities and recipients ------------------------------------------------------

const privateFromRaw = (raw: Uint8Array): KeyObject =>
  createPrivateKey({ key: Buffer.concat([PKCS8_X25519, raw]), format: 'der', type: 'pkcs8' });
const publicFromRaw = (raw: Uint8Array): KeyObject =>
  createPublicKey({ key: Buffer.concat([SPKI_X25519, raw]), format: 'der', type: 'spki' });
const rawPublic = (key: KeyObject): Buffer => key.export({ format: 'der', type: 'spki' }).subarray(SPKI_X25519.length);

function decode32(text: string): Buffer | undefined {
  if (!B64URL_32.test(text)) return undefined;
  const raw = Buffer.from(text, 'base64url');
  return raw.length === 32 && raw.toString('base64url') === text ? raw : undefined;
}

/** A new X25519 key pair as text: the public `recipient` to seal to, the secret `identity` to store in a 0600 file. */
export function generateIdentity(rng: Rng = randomBytes): { recipient: string; identity: string } {
  const raw = Buffer.from(rng(32));
  const identity = `${IDENTITY_PREFIX}${raw.toString('base64url')}`;
  const recipient = recipientText(createPublicKey(privateFromRaw(raw)));
  raw.fill(0);
  return { recipient, identity };
}

const recipientText = (publicKey: KeyObject): string =>
  `${RECIPIENT_PREFIX}${rawPublic(publicKey).toString('base64url')}`;

/** The public recipient text of an identity text (`loopx-x25519-key:…` → `loopx-x25519-pub:…`). */
export function recipientOf(identity: string): string {
  const parsed = identityFromText(identity);
  if (parsed.kind !== 'x25519') throw identityInvalid('it is not an X25519 identity');
  return recipientText(parsed.publicKey);
}

/** The stanza hint of an X25519 public key: the first 32 hex digits of SHA-256 of its 32 raw bytes. */
export const recipientFingerprint = (recipient: string | KeyObject): string =>
  sha256Hex(rawPublic(typeof recipient === 'string' ? parseRecipient(recipient).publicKey : recipient)).slice(0, 32);

/** A public recipient `loopx-x25519-pub:<base64url 32 bytes>`. */
export function parseRecipient(text: string): Extract<Recipient, { kind: 'x25519' }> {
  const raw =
    typeof text === 'string' && text.startsWith(RECIPIENT_PREFIX) && decode32(text.slice(RECIPIENT_PREFIX.length));
  if (!raw) throw recipientInvalid(`it is not ${RECIPIENT_PREFIX}<43 base64url characters>`);
  return { kind: 'x25519', publicKey: publicFromRaw(raw) };
}

/** The identity held by a referenced secret: an X25519 identity text, or else a passphrase. */
function identityFromText(text: string): Identity {
  const value = text.replace(/\r?\n$/, '');
  if (value.startsWith(RECIPIENT_PREFIX)) throw identityInvalid('it is a public recipient, not a private key');
  if (value.startsWith(IDENTITY_PREFIX)) {
    const raw = decode32(value.slice(IDENTITY_PREFIX.length));
    if (!raw) throw identityInvalid(`it is not ${IDENTITY_PREFIX}<43 base64url characters>`);
    const privateKey = privateFromRaw(raw);
    raw.fill(0);
    return { kind: 'x25519', privateKey, publicKey: createPublicKey(privateKey) };
  }
  if (value.length === 0) throw identityInvalid('it is empty');
  const bytes = Buffer.from(value, 'utf8');
  const secret = createSecretKey(bytes);
  bytes.fill(0);
  return { kind: 'passphrase', secret };
}

// ---- key references ------------------------------------------------------------------------

/**
 * The identity a key reference names: `env:NAME` (the variable's value), `file:PATH` or a plain
 * path (a regular file of this user, not a link, mode 0600 or stricter, at most 4 KiB). One
 * trailing line ending is not part of the key. A literal secret is refused, never used.
 */
export function resolveKeyReference(reference: string, env: NodeJS.ProcessEnv = process.env): Identity {
  if (typeof reference !== 'string' || reference.length === 0 || reference.includes('\0')) throw keyRefInvalid();
  if (reference.startsWith(IDENTITY_PREFIX)) throw keyRefInvalid();
  if (reference.startsWith('env:')) {
    const name = reference.slice(4);
    if (!ENV_NAME.test(name)) throw keyRefInvalid();
    const value = env[name];
    if (value === undefined) throw keyRefMissing(`env:${name}`);
    return identityFromText(value);
  }
  const path = reference.startsWith('file:') ? reference.slice(5) : reference;
  if (path.length === 0) throw keyRefInvalid();
  return identityFromText(readKeyFile(path));
}

function readKeyFile(path: string): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw keyRefMissing('a key file');
    throw keyFileUnsafe(code === 'ELOOP' ? 'it is a symbolic link' : `it cannot be opened (${code ?? 'I/O error'})`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw keyFileUnsafe('it is not a regular file');
    if (typeof process.getuid === 'function' && st.uid !== process.getuid())
      throw keyFileUnsafe('another user owns it');
    if ((st.mode & 0o077) !== 0) throw keyFileUnsafe('its mode lets others read it (want 0600)');
    if (st.size > KEY_SET_LIMITS.maxKeyFileBytes) throw keyFileUnsafe('it is larger than a key');
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * A recipient to seal to: a public `loopx-x25519-pub:…` as is, or a key reference whose secret is a
 * passphrase (sealed through scrypt) or an X25519 identity (sealed to its public key).
 */
export function resolveRecipient(text: string, env: NodeJS.ProcessEnv = process.env): Recipient {
  if (typeof text === 'string' && text.startsWith(RECIPIENT_PREFIX)) return parseRecipient(text);
  const identity = resolveKeyReference(text, env);
  return identity.kind === 'x25519' ? { kind: 'x25519', publicKey: identity.publicKey } : identity;
}

// ---- wrapping ------------------------------------------------------------------------------

const stanzaAd = (backupId: string, type: Stanza['type']): Uint8Array =>
  lengthPrefixed([utf8(KEY_SET_FORMAT), utf8(backupId), utf8(type)]);

function gcmSeal(key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, plain: Uint8Array): string {
  const cipher = createCipheriv('aes-256-gcm', key, nonce).setAAD(ad);
  return Buffer.concat([cipher.update(plain), cipher.final(), cipher.getAuthTag()]).toString('hex');
}

/** The plaintext, or undefined when the tag does not verify (not our stanza, or tampered). */
function gcmOpen(key: Uint8Array, nonceHex: string, ad: Uint8Array, sealedHex: string): Buffer | undefined {
  const sealed = Buffer.from(sealedHex, 'hex');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(nonceHex, 'hex')).setAAD(ad);
  decipher.setAuthTag(sealed.subarray(32));
  try {
    return Buffer.concat([decipher.update(sealed.subarray(0, 32)), decipher.final()]);
  } catch {
    return undefined;
  }
}

/** The X25519 wrap key, or undefined for a low-order point (an all-zero shared secret). */
function x25519WrapKey(privateKey: KeyObject, publicKey: KeyObject, ephemeral: Buffer, recipient: Buffer) {
  let shared: Buffer;
  try {
    shared = diffieHellman({ privateKey, publicKey });
  } catch {
    return undefined;
  }
  if (shared.every((b) => b === 0)) return undefined;
  const key = derive(shared, ['loopx.sealed/v1 x25519'], Buffer.concat([ephemeral, recipient]));
  shared.fill(0);
  return key;
}

function scryptKey(secret: KeyObject, salt: Buffer, logN: number, r: number, p: number): Promise<Buffer> {
  const password = secret.export();
  const fullSalt = Buffer.concat([utf8('loopx.sealed/v1 scrypt'), salt]);
  const maxmem = 128 * 2 ** logN * r + 2 ** 20;
  return new Promise((resolve, reject) => {
    scrypt(password, fullSalt, 32, { N: 2 ** logN, r, p, maxmem }, (err, key) => {
      password.fill(0);
      if (err) reject(err);
      else resolve(key);
    });
  });
}

async function wrapOne(raw: Buffer, backupId: string, recipient: Recipient, rng: Rng): Promise<Stanza> {
  if (recipient.kind === 'x25519') {
    const ephemeralRaw = Buffer.from(rng(32));
    const ephemeralKey = privateFromRaw(ephemeralRaw);
    ephemeralRaw.fill(0);
    const ephemeral = rawPublic(createPublicKey(ephemeralKey));
    const key = x25519WrapKey(ephemeralKey, recipient.publicKey, ephemeral, rawPublic(recipient.publicKey));
    if (!key) throw recipientInvalid('its X25519 key is a low-order point');
    const nonce = Buffer.from(rng(12));
    const wrapped = gcmSeal(key, nonce, stanzaAd(backupId, 'x25519'), raw);
    key.fill(0);
    const fp = recipientFingerprint(recipient.publicKey);
    return {
      type: 'x25519',
      recipient: fp,
      ephemeral: ephemeral.toString('hex'),
      nonce: nonce.toString('hex'),
      wrapped,
    };
  }
  const salt = Buffer.from(rng(16));
  const key = await scryptKey(recipient.secret, salt, SCRYPT.logN, SCRYPT.r, SCRYPT.p);
  const nonce = Buffer.from(rng(12));
  const wrapped = gcmSeal(key, nonce, stanzaAd(backupId, 'scrypt'), raw);
  key.fill(0);
  const { logN: log_n, r, p } = SCRYPT;
  return { type: 'scrypt', log_n, r, p, salt: salt.toString('hex'), nonce: nonce.toString('hex'), wrapped };
}

async function stanzasFor(dataKey: DataKey, backupId: string, recipients: readonly Recipient[], rng: Rng) {
  if (recipients.length === 0) throw noRecipients();
  if (recipients.length > KEY_SET_LIMITS.maxStanzas) throw recipientInvalid('too many recipients');
  const passphrases = recipients.filter((r) => r.kind === 'passphrase').length;
  if (passphrases > KEY_SET_LIMITS.maxPassphraseStanzas) throw recipientInvalid('too many passphrases');
  const raw = checkDataKey(dataKey).export();
  try {
    const stanzas: Stanza[] = [];
    for (const recipient of recipients) stanzas.push(await wrapOne(raw, backupId, recipient, rng));
    return stanzas;
  } finally {
    raw.fill(0);
  }
}

/** The key set of a new backup: its data key wrapped for each recipient (at least one), generation 1. */
export async function wrapDataKey(
  dataKey: DataKey,
  backupId: string,
  recipients: readonly Recipient[],
  options: { rng?: Rng } = {},
): Promise<KeySet> {
  const stanzas = await stanzasFor(dataKey, checkBackupId(backupId), recipients, options.rng ?? randomBytes);
  return { format: KEY_SET_FORMAT, backup_id: backupId, generation: 1, stanzas };
}

/**
 * Rotation: a new key set (generation + 1) wrapping the same data key for `recipients`. The data
 * key must match `commitment` (the envelope's `key_commitment`): a rotation with the wrong key
 * would otherwise replace the only way into the backup. No data is re-encrypted.
 */
export async function rewrap(
  keySet: KeySet,
  dataKey: DataKey,
  recipients: readonly Recipient[],
  options: { commitment: string; rng?: Rng },
): Promise<KeySet> {
  const checked = validateKeySet(keySet);
  if (!hexEqual(keyCommitment(checkDataKey(dataKey)), options.commitment)) throw keyCommitmentMismatch();
  const stanzas = await stanzasFor(dataKey, checked.backup_id, recipients, options.rng ?? randomBytes);
  return { format: KEY_SET_FORMAT, backup_id: checked.backup_id, generation: checked.generation + 1, stanzas };
}

async function unwrapOne(stanza: Stanza, backupId: string, identity: Identity): Promise<Buffer | undefined> {
  if (stanza.type === 'x25519' && identity.kind === 'x25519') {
    if (stanza.recipient !== recipientFingerprint(identity.publicKey)) return undefined;
    const ephemeral = Buffer.from(stanza.ephemeral, 'hex');
    let ephemeralKey: KeyObject;
    try {
      ephemeralKey = publicFromRaw(ephemeral);
    } catch {
      return undefined;
    }
    const key = x25519WrapKey(identity.privateKey, ephemeralKey, ephemeral, rawPublic(identity.publicKey));
    if (!key) return undefined;
    const raw = gcmOpen(key, stanza.nonce, stanzaAd(backupId, 'x25519'), stanza.wrapped);
    key.fill(0);
    return raw;
  }
  if (stanza.type === 'scrypt' && identity.kind === 'passphrase') {
    const key = await scryptKey(identity.secret, Buffer.from(stanza.salt, 'hex'), stanza.log_n, stanza.r, stanza.p);
    const raw = gcmOpen(key, stanza.nonce, stanzaAd(backupId, 'scrypt'), stanza.wrapped);
    key.fill(0);
    return raw;
  }
  return undefined;
}

/**
 * The data key of backup `backupId`, unwrapped with `identity` from the first stanza that opens
 * and — when `commitment` (the envelope's `key_commitment`) is given — matches it. A key set of
 * another backup, or one naming unbounded scrypt costs, is refused before any KDF work.
 */
export async function unwrapDataKey(
  keySet: KeySet,
  backupId: string,
  identity: Identity,
  options: { commitment?: string } = {},
): Promise<DataKey> {
  const checked = validateKeySet(keySet);
  if (checked.backup_id !== backupId) throw sealedBackupMismatch('key set');
  let uncommitted = false;
  for (const stanza of checked.stanzas) {
    const raw = await unwrapOne(stanza, backupId, identity);
    if (!raw) continue;
    const dataKey = createSecretKey(raw);
    raw.fill(0);
    if (options.commitment === undefined || hexEqual(keyCommitment(dataKey), options.commitment)) return dataKey;
    uncommitted = true;
  }
  throw uncommitted ? keyCommitmentMismatch() : keyNotRecipient();
}

/** Who can open a key set, without any key: X25519 recipient fingerprints (in stanza order, unique) and the passphrase count. */
export function keySetFingerprints(keySet: KeySet): { x25519: string[]; passphrases: number } {
  const checked = validateKeySet(keySet);
  const x25519 = [...new Set(checked.stanzas.flatMap((s) => (s.type === 'x25519' ? [s.recipient] : [])))];
  return { x25519, passphrases: checked.stanzas.filter((s) => s.type === 'scrypt').length };
}

// ---- key set parsing -----------------------------------------------------------------------

/** A key set read from a repository: JSON of the published schema, every bound checked. */
export function parseKeySet(json: string | Uint8Array): KeySet {
  const text = typeof json === 'string' ? json : Buffer.from(json).toString('utf8');
  if (Buffer.byteLength(text, 'utf8') > KEY_SET_LIMITS.maxBytes) throw keySetInvalid('size');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw keySetInvalid('JSON');
  }
  return validateKeySet(value);
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function exactKeys(v: Record<string, unknown>, keys: readonly string[], where: string): void {
  const have = Object.keys(v);
  if (have.length !== keys.length || !keys.every((k) => Object.hasOwn(v, k))) throw keySetInvalid(where);
}

function validateStanza(s: unknown, i: number): Stanza {
  const at = `stanzas[${i}]`;
  if (!isRecord(s)) throw keySetInvalid(at);
  if (typeof s.nonce !== 'string' || !HEX(12).test(s.nonce)) throw keySetInvalid(`${at}.nonce`);
  if (typeof s.wrapped !== 'string' || !HEX(48).test(s.wrapped)) throw keySetInvalid(`${at}.wrapped`);
  if (s.type === 'x25519') {
    exactKeys(s, ['type', 'recipient', 'ephemeral', 'nonce', 'wrapped'], at);
    if (typeof s.recipient !== 'string' || !HEX(16).test(s.recipient)) throw keySetInvalid(`${at}.recipient`);
    if (typeof s.ephemeral !== 'string' || !HEX(32).test(s.ephemeral)) throw keySetInvalid(`${at}.ephemeral`);
    return s as unknown as X25519Stanza;
  }
  if (s.type !== 'scrypt') throw keySetInvalid(`${at}.type`);
  exactKeys(s, ['type', 'log_n', 'r', 'p', 'salt', 'nonce', 'wrapped'], at);
  if (typeof s.salt !== 'string' || !HEX(16).test(s.salt)) throw keySetInvalid(`${at}.salt`);
  const { log_n: logN, r, p } = s;
  if (typeof logN !== 'number' || logN < SCRYPT.minLogN || logN > SCRYPT.maxLogN || !Number.isInteger(logN)) {
    throw kdfParamsRefused();
  }
  if (r !== SCRYPT.r || p !== SCRYPT.p) throw kdfParamsRefused();
  return s as unknown as ScryptStanza;
}

/** The shape and bounds of a key set (also of one built in memory): refused before any KDF work. */
export function validateKeySet(value: unknown): KeySet {
  if (!isRecord(value)) throw keySetInvalid('document');
  exactKeys(value, ['format', 'backup_id', 'generation', 'stanzas'], 'document');
  if (value.format !== KEY_SET_FORMAT) throw keySetInvalid('format');
  if (typeof value.backup_id !== 'string' || !SEAL_BACKUP_ID.test(value.backup_id)) throw keySetInvalid('backup_id');
  const g = value.generation;
  if (typeof g !== 'number' || !Number.isInteger(g) || g < 1 || g > 2 ** 31) throw keySetInvalid('generation');
  const stanzas = value.stanzas;
  if (!Array.isArray(stanzas) || stanzas.length < 1 || stanzas.length > KEY_SET_LIMITS.maxStanzas) {
    throw keySetInvalid('stanzas');
  }
  const checked = stanzas.map(validateStanza);
  if (checked.filter((s) => s.type === 'scrypt').length > KEY_SET_LIMITS.maxPassphraseStanzas) {
    throw keySetInvalid('stanzas');
  }
  return value as unknown as KeySet;
}
