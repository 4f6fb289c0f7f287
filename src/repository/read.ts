/**
 * Reading objects back: a small object whole (bounded), and a backup's object into a local private
 * file, checked against the size and SHA-256 its entry records while it streams. A file whose bytes
 * differ is removed and refused; nothing read back is trusted beyond that — the verifier checks the
 * rest.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, unlink } from 'node:fs/promises';
import type { RepositoryObjects } from './contract.js';
import { objectDigestMismatch } from './codes.js';

/** The whole of a small object; refused (as a digest mismatch) when it exceeds `max` bytes. */
export async function readAll(objects: RepositoryObjects, key: string, max: number): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of await objects.read(key)) {
    total += (chunk as Buffer).byteLength;
    if (total > max) throw objectDigestMismatch(key);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Stream `key` into a new 0600 file at `path` (never replacing one), checking its size and SHA-256. */
export async function download(
  objects: RepositoryObjects,
  key: string,
  path: string,
  expected: { readonly size_bytes: number; readonly sha256: string },
): Promise<void> {
  const fh = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  let ok = false;
  try {
    const hash = createHash('sha256');
    let total = 0;
    for await (const chunk of await objects.read(key)) {
      const buf = chunk as Buffer;
      total += buf.byteLength;
      if (total > expected.size_bytes) throw objectDigestMismatch(key);
      hash.update(buf);
      await fh.write(buf);
    }
    if (total !== expected.size_bytes || hash.digest('hex') !== expected.sha256) throw objectDigestMismatch(key);
    await fh.sync();
    ok = true;
  } finally {
    await fh.close();
    if (!ok) await unlink(path).catch(() => {});
  }
}
