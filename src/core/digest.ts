/** SHA-256 helpers. Digests in public output are lowercase hex. */
import { createHash } from 'node:crypto';

export const sha256 = (data: Uint8Array | string): Uint8Array => new Uint8Array(createHash('sha256').update(data).digest());

export const sha256Hex = (data: Uint8Array | string): string => createHash('sha256').update(data).digest('hex');

export const toHex = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');

export const fromHex = (hex: string): Uint8Array => {
  if (!/^(?:[0-9a-f]{2})*$/.test(hex)) throw new TypeError('not lowercase hex');
  return new Uint8Array(Buffer.from(hex, 'hex'));
};
