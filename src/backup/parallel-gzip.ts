/**
 * Gzip on every core, as pigz does it: the input is cut into fixed blocks, each block is
 * raw-deflated on the libuv threadpool (several at once) with the 32 KiB before it as its
 * dictionary, every block but the last ends with a sync flush (byte-aligned, not final) and the
 * last with Z_FINISH, and the pieces are stitched in input order into ONE standard gzip member
 * (RFC 1952: header, deflate data, CRC-32 and ISIZE of the whole input). Any gzip reader (gzip -t,
 * tar xzf, zlib's gunzip) reads it unchanged; the bytes depend only on the input, the level and
 * BLOCK_BYTES, never on timing.
 *
 * Hand-written because Node's zlib streams compress one call at a time (one core) and no npm
 * package does this; pigz itself is a binary we would have to ship. Memory is bounded: at most
 * `maxInFlight` blocks (input and output) are held, and the transform takes no more input until
 * the oldest block is out.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { availableParallelism } from 'node:os';
import { constants, crc32, deflateRaw } from 'node:zlib';

/** Block size: large enough that re-hashing a 32 KiB dictionary costs ~3%, small enough to spread. */
export const BLOCK_BYTES = 1024 * 1024;
const WINDOW = 32 * 1024;
/** zlib's output buffer per threadpool call: fewer round trips than the 16 KiB default. */
const OUTPUT_CHUNK = 256 * 1024;

export interface ParallelGzipOptions {
  readonly level?: number;
  /** Blocks compressed at once; default one more than the cores (the main thread feeds them). */
  readonly maxInFlight?: number;
  /** Tests only: a smaller block to cross many boundaries with little data (≥ 32 KiB). */
  readonly blockBytes?: number;
}

/** The 10-byte gzip header zlib itself writes: no name, no mtime, OS unix, XFL from the level. */
function gzipHeader(level: number): Buffer {
  const xfl = level === 9 ? 2 : level === 1 ? 4 : 0;
  return Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, xfl, 3]);
}

function deflateBlock(input: Buffer, level: number, dictionary: Buffer | undefined, last: boolean): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const opts = {
      level,
      chunkSize: OUTPUT_CHUNK,
      finishFlush: last ? constants.Z_FINISH : constants.Z_SYNC_FLUSH,
      ...(dictionary ? { dictionary } : {}),
    };
    deflateRaw(input, opts, (err, out) => (err ? reject(err) : resolve(out)));
  });
}

export class ParallelGzip extends Transform {
  private readonly level: number;
  private readonly maxInFlight: number;
  private readonly blockBytes: number;
  private readonly inFlight: Promise<Buffer>[] = [];
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private dictionary: Buffer | undefined;
  private crc = 0;
  private size = 0;

  constructor(options: ParallelGzipOptions = {}) {
    super();
    this.level = options.level ?? 6;
    this.maxInFlight = Math.max(1, options.maxInFlight ?? availableParallelism() + 1);
    this.blockBytes = Math.max(WINDOW, options.blockBytes ?? BLOCK_BYTES);
    this.push(gzipHeader(this.level));
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.pending.push(chunk);
    this.pendingBytes += chunk.byteLength;
    if (this.pendingBytes < this.blockBytes) return cb();
    this.cutBlocks().then(() => cb(), cb);
  }

  /** Submit every whole pending block, waiting for room before each (a large chunk never floods the pool). */
  private async cutBlocks(): Promise<void> {
    const all = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    let off = 0;
    for (; all.byteLength - off >= this.blockBytes; off += this.blockBytes) {
      await this.drain(this.maxInFlight - 1);
      this.submit(all.subarray(off, off + this.blockBytes), false);
    }
    const rest = all.subarray(off);
    this.pending = rest.byteLength > 0 ? [rest] : [];
    this.pendingBytes = rest.byteLength;
  }

  override _flush(cb: TransformCallback): void {
    this.submit(Buffer.concat(this.pending, this.pendingBytes), true);
    this.pending = [];
    this.drain(0).then(() => {
      const trailer = Buffer.allocUnsafe(8);
      trailer.writeUInt32LE(this.crc >>> 0, 0);
      trailer.writeUInt32LE(this.size % 2 ** 32, 4);
      cb(null, trailer);
    }, cb);
  }

  /** Start compressing one block; the CRC and the next block's dictionary follow the input order. */
  private submit(block: Buffer, last: boolean): void {
    this.crc = crc32(block, this.crc);
    this.size += block.byteLength;
    const job = deflateBlock(block, this.level, this.dictionary, last);
    job.catch(() => undefined); // awaited in order by drain(); never an unhandled rejection meanwhile
    this.inFlight.push(job);
    // A copy, so the block it came from can be freed once compressed.
    this.dictionary = block.byteLength >= WINDOW ? Buffer.from(block.subarray(block.byteLength - WINDOW)) : undefined;
  }

  /** Emit finished blocks in order until at most `keep` are still compressing. */
  private async drain(keep: number): Promise<void> {
    while (this.inFlight.length > keep) {
      const out = await this.inFlight[0]!;
      this.inFlight.shift();
      if (out.byteLength > 0) this.push(out);
    }
  }
}
