/** SHA-256 helpers. Digests in public output are lowercase hex. */
import { createHash, hash } from 'node:crypto';
import { closeSync, constants, openSync, readSync } from 'node:fs';

export const sha256 = (data: Uint8Array | string): Uint8Array =>
  new Uint8Array(createHash('sha256').update(data).digest());

/** One-shot (`crypto.hash`: no Hash object per call; a string is hashed as its UTF-8 bytes, as `update` hashes it). */
export const sha256Hex = (data: Uint8Array | string): string => hash('sha256', data, 'hex');

/** SHA-256 (hex) of a file, read in 1 MiB blocks (bounded memory whatever its size), never following a link. */
export function sha256FileHex(path: string): string {
  const hash = createHash('sha256');
  const block = Buffer.allocUnsafe(1 << 20);
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    for (let n = readSync(fd, block); n > 0; n = readSync(fd, block)) hash.update(block.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}

export const toHex = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');

export const fromHex = (hex: string): Uint8Array => {
  if (!/^(?:[0-9a-f]{2})*$/.test(hex)) throw new TypeError('not lowercase hex');
  return new Uint8Array(Buffer.from(hex, 'hex'));
};
