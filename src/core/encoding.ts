/**
 * Length-prefixed framing (ARCHITECTURE.md "Decisions"): each component is an unsigned 64-bit
 * big-endian byte length followed by the bytes. Fixed-width integers are framed like everything
 * else. Used for the snapshot MAC input and the per-run subkey derivation.
 */
export function u64be(n: number | bigint): Uint8Array {
  const v = BigInt(n);
  if (v < 0n || v > 0xffff_ffff_ffff_ffffn) throw new RangeError('u64 out of range');
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, v, false);
  return b;
}

export function u32be(n: number): Uint8Array {
  if (!Number.isInteger(n) || n < 0 || n > 0xffff_ffff) throw new RangeError('u32 out of range');
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, false);
  return b;
}

export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

export function lengthPrefixed(components: readonly Uint8Array[]): Uint8Array {
  const total = components.reduce((n, c) => n + 8 + c.byteLength, 0);
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of components) {
    out.set(u64be(c.byteLength), off);
    out.set(c, off + 8);
    off += 8 + c.byteLength;
  }
  return out;
}
