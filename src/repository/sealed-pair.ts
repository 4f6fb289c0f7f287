/**
 * A backup's pair in the encrypted profile (docs/repository-encryption.md): the archive and the
 * manifest each sealed under the backup's own random data key, the cleartext envelope of their
 * ciphertext digests (committed to and authenticated under that key), and the key set that wraps
 * the data key for each recipient. This module turns a local plaintext pair into those files and
 * back; the repository publishes and fetches them (repository.ts).
 *
 * Fail closed: sealing refuses before anything is written when a recipient does not resolve, and
 * a publication never falls back to the plaintext. Opening checks the binding (envelope and key
 * set of this backup), unwraps, checks the key commitment and the envelope's MAC, then each
 * segment's digest before it is authenticated and decrypted — a moved, reordered, truncated or
 * swapped segment or object is refused before any plaintext is written.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  buildEnvelope,
  checkEnvelopeBinding,
  checkSealed,
  encodeSealedJson,
  envelopeEntry,
  newDataKey,
  opener,
  parseEnvelope,
  parseKeySet,
  resolveKeyReference,
  resolveRecipient,
  sealer,
  unlock,
  wrapDataKey,
  type KeySet,
  type Recipient,
  type SealedEnvelope,
} from './seal.js';
import type { LocalObject } from './repository.js';

/** The names of a pair's objects inside the sealed profile (the envelope's object names). */
export const SEALED_NAMES = { archive: 'archive', manifest: 'manifest' } as const;

export interface SealedPair {
  readonly archive: LocalObject;
  readonly manifest: LocalObject;
  readonly envelope: Uint8Array;
  readonly keySet: Uint8Array;
}

/** Every recipient resolved first (public keys as written; passphrases and identities by reference): a bad one writes nothing. */
export function recipientsOf(texts: readonly string[], env: NodeJS.ProcessEnv = process.env): Recipient[] {
  return texts.map((t) => resolveRecipient(t, env));
}

async function sealFile(
  plain: LocalObject,
  out: string,
  options: { dataKey: ReturnType<typeof newDataKey>; backupId: string; name: string },
) {
  const s = sealer({ dataKey: options.dataKey, backupId: options.backupId, objectName: options.name });
  await pipeline(createReadStream(plain.path), s, createWriteStream(out, { flags: 'wx', mode: 0o600 }));
  const entry = s.summary();
  return { file: { path: out, size_bytes: entry.sealed_size, sha256: entry.sealed_sha256 }, entry };
}

/** Seal a local pair into `dir` for `recipients` (at least one). */
export async function sealPair(
  backupId: string,
  pair: { readonly archive: LocalObject; readonly manifest: LocalObject },
  recipients: readonly Recipient[],
  dir: string,
): Promise<SealedPair> {
  const dataKey = newDataKey();
  // The key set first: with no usable recipient nothing is sealed at all.
  const keySet = await wrapDataKey(dataKey, backupId, recipients);
  const archive = await sealFile(pair.archive, join(dir, 'archive.sealed'), {
    dataKey,
    backupId,
    name: SEALED_NAMES.archive,
  });
  const manifest = await sealFile(pair.manifest, join(dir, 'manifest.sealed'), {
    dataKey,
    backupId,
    name: SEALED_NAMES.manifest,
  });
  const envelope = buildEnvelope({ dataKey, backupId, objects: [archive.entry, manifest.entry] });
  return {
    archive: archive.file,
    manifest: manifest.file,
    envelope: encodeSealedJson(envelope),
    keySet: encodeSealedJson(keySet),
  };
}

export interface SealedRead {
  readonly envelope: SealedEnvelope;
  readonly keySet: KeySet;
}

export const readSealed = (envelope: Uint8Array, keySet: Uint8Array): SealedRead => ({
  envelope: parseEnvelope(envelope),
  keySet: parseKeySet(keySet),
});

/**
 * Without the key: the envelope and key set belong to this backup, and each sealed file has every
 * segment and byte its envelope records. Nothing is decrypted.
 */
export async function checkSealedPair(
  backupId: string,
  read: SealedRead,
  files: { readonly archive: string; readonly manifest: string },
): Promise<void> {
  checkEnvelopeBinding(read.envelope, read.keySet, backupId);
  for (const role of ['archive', 'manifest'] as const)
    await checkSealed(createReadStream(files[role]), envelopeEntry(read.envelope, SEALED_NAMES[role]));
}

/** With the key (a reference): the plaintext pair, opened into `dir`; nothing partial is left on a refusal. */
export async function openSealedPair(
  backupId: string,
  read: SealedRead,
  files: { readonly archive: string; readonly manifest: string },
  keyReference: string,
  dir: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ readonly archive: string; readonly manifest: string }> {
  const identity = resolveKeyReference(keyReference, env);
  const dataKey = await unlock({ envelope: read.envelope, keySet: read.keySet, identity, backupId });
  const out = { archive: join(dir, `${backupId}.tar.gz`), manifest: join(dir, `${backupId}.manifest.json`) };
  for (const role of ['archive', 'manifest'] as const) {
    const entry = envelopeEntry(read.envelope, SEALED_NAMES[role]);
    try {
      await pipeline(
        createReadStream(files[role]),
        opener({ dataKey, backupId, objectName: entry.name, entry }),
        createWriteStream(out[role], { flags: 'wx', mode: 0o600 }),
      );
    } catch (e) {
      await unlink(out[role]).catch(() => {});
      throw e;
    }
  }
  return out;
}

/** One sealed object's ciphertext, read afresh each time it is asked for (a repository object's GET). */
export type SealedBytes = () => Promise<AsyncIterable<Uint8Array> | Iterable<Uint8Array>>;

/**
 * Without the key, from the repository itself: the binding, and every segment and byte of each
 * sealed object as its envelope records them. Nothing is decrypted, nothing written locally.
 */
export async function checkSealedObjects(
  backupId: string,
  read: SealedRead,
  objects: { readonly archive: SealedBytes; readonly manifest: SealedBytes },
): Promise<void> {
  checkEnvelopeBinding(read.envelope, read.keySet, backupId);
  for (const role of ['archive', 'manifest'] as const)
    await checkSealed(Readable.from(await objects[role]()), envelopeEntry(read.envelope, SEALED_NAMES[role]));
}

/**
 * With the key (a reference): the data key is unlocked once, and each call of the returned
 * function opens one sealed object on the fly — every segment checked against the envelope and
 * authenticated before its plaintext is handed on; a refusal is an error of the iteration.
 */
export async function sealedOpener(
  backupId: string,
  read: SealedRead,
  keyReference: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<(role: 'archive' | 'manifest', sealed: SealedBytes) => AsyncGenerator<Buffer>> {
  const identity = resolveKeyReference(keyReference, env);
  const dataKey = await unlock({ envelope: read.envelope, keySet: read.keySet, identity, backupId });
  return async function* open(role, sealed) {
    const entry = envelopeEntry(read.envelope, SEALED_NAMES[role]);
    const plain = opener({ dataKey, backupId, objectName: entry.name, entry });
    const source = Readable.from(await sealed());
    // The pipeline's failure (a cut read, a refused segment) ends the iteration below with it.
    pipeline(source, plain).catch(() => undefined);
    try {
      for await (const chunk of plain as AsyncIterable<Buffer>) yield chunk;
    } finally {
      source.destroy();
      plain.destroy();
    }
  };
}
