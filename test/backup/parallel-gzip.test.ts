/**
 * The archive's block-parallel gzip (src/backup/parallel-gzip.ts) writes ONE standard gzip member
 * whose decompressed bytes are exactly its input, whatever the block boundaries: checked by zlib
 * (one deflate stream that ends where the trailer starts, CRC-32 and ISIZE of the input), by
 * `gzip -t` and by `tar -tzf` on a real archive.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32, gunzipSync, gzipSync, inflateRawSync } from 'node:zlib';
import tar from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { BLOCK_BYTES, ParallelGzip, type ParallelGzipOptions } from '../../src/backup/parallel-gzip.js';
import { ArchiveWriter } from '../../src/backup/tar-writer.js';

const KiB = 1024;
const SMALL_BLOCK = 32 * KiB;

/** Deterministic, partly compressible bytes (xorshift words and runs). */
function sample(bytes: number, seed = 7): Buffer {
  const b = Buffer.alloc(bytes);
  let x = seed;
  for (let i = 0; i < bytes; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = (x & 3) === 0 ? x & 0xff : 97 + ((i >> 4) % 26);
  }
  return b;
}

/** Feed `input` in chunks of `chunk` bytes through a ParallelGzip and collect what it writes. */
async function compress(input: Buffer, chunk: number, options: ParallelGzipOptions = {}): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (let off = 0; off < input.byteLength; off += chunk) parts.push(input.subarray(off, off + chunk));
  const out: Buffer[] = [];
  const sink = new Writable({
    write(c: Buffer, _e, cb) {
      out.push(c);
      cb();
    },
  });
  await pipeline(Readable.from(parts), new ParallelGzip(options), sink);
  return Buffer.concat(out);
}

/** Assert `gz` is exactly one gzip member (header, one deflate stream, trailer, nothing after) of `input`. */
function expectOneMember(gz: Buffer, input: Buffer): void {
  expect([...gz.subarray(0, 4)]).toEqual([0x1f, 0x8b, 8, 0]);
  const body = gz.subarray(10, gz.byteLength - 8);
  const { buffer, engine } = inflateRawSync(body, { info: true }) as unknown as {
    buffer: Buffer;
    engine: { bytesWritten: number };
  };
  expect(engine.bytesWritten).toBe(body.byteLength); // the deflate stream ends exactly where the trailer starts
  expect(buffer.equals(input)).toBe(true);
  expect(gz.readUInt32LE(gz.byteLength - 8)).toBe(crc32(input));
  expect(gz.readUInt32LE(gz.byteLength - 4)).toBe(input.byteLength % 2 ** 32);
  expect(gunzipSync(gz).equals(input)).toBe(true);
}

function gzipTest(gz: Buffer): { status: number | null; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), 'loopx-pgzip-'));
  const path = join(dir, 'a.gz');
  writeFileSync(path, gz);
  const r = spawnSync('gzip', ['-t', path], { encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr };
}

describe('block-parallel gzip writes one standard gzip member', () => {
  const cases: Array<[string, number, number]> = [
    ['empty input', 0, 4 * KiB],
    ['less than one block', 1000, 333],
    ['exactly one block', SMALL_BLOCK, 4 * KiB],
    ['one block and one byte', SMALL_BLOCK + 1, 5 * KiB],
    ['exactly two blocks (the last block is empty)', 2 * SMALL_BLOCK, SMALL_BLOCK],
    ['many blocks, chunks that straddle every boundary', 40 * SMALL_BLOCK + 12_345, 7 * KiB + 3],
    ['many blocks in one large chunk', 20 * SMALL_BLOCK + 17, 20 * SMALL_BLOCK + 17],
  ];
  for (const [name, size, chunk] of cases) {
    it(`${name}: decompresses to exactly its input and gzip -t accepts it`, async () => {
      const input = sample(size);
      const gz = await compress(input, chunk, { blockBytes: SMALL_BLOCK });
      expectOneMember(gz, input);
      expect(gzipTest(gz)).toEqual({ status: 0, stderr: '' });
    });
  }

  it('an empty input is the same member zlib writes for it', async () => {
    expect((await compress(Buffer.alloc(0), 1)).equals(gzipSync(Buffer.alloc(0)))).toBe(true);
  });

  it('at the default block size, a multi-block input is one member', async () => {
    const input = sample(3 * BLOCK_BYTES + 999);
    expectOneMember(await compress(input, 64 * KiB), input);
  });

  it('the bytes depend only on the input, the level and the block size: never on chunking or how many blocks run at once', async () => {
    const input = sample(25 * SMALL_BLOCK + 5);
    const a = await compress(input, 1000, { blockBytes: SMALL_BLOCK, maxInFlight: 1 });
    const b = await compress(input, 100 * KiB, { blockBytes: SMALL_BLOCK, maxInFlight: 5 });
    expect(a.equals(b)).toBe(true);
  });

  it('each block is compressed with the previous 32 KiB as its dictionary (the ratio of one stream is kept)', async () => {
    // A 20 KiB pattern repeated: blocks without a dictionary would each pay for it again.
    const input = Buffer.concat(Array.from({ length: 64 }, () => sample(20 * KiB, 3)));
    const ours = await compress(input, 64 * KiB, { blockBytes: SMALL_BLOCK });
    expectOneMember(ours, input);
    expect(ours.byteLength).toBeLessThan(gzipSync(input).byteLength * 1.1);
  });

  it('the level is honoured and the header says what zlib says for it', async () => {
    const input = sample(3 * SMALL_BLOCK);
    for (const level of [1, 6, 9]) {
      const gz = await compress(input, 8 * KiB, { blockBytes: SMALL_BLOCK, level });
      expectOneMember(gz, input);
      expect(gz.subarray(0, 10).equals(gzipSync(input, { level }).subarray(0, 10))).toBe(true);
    }
  });

  it('a tar stream across many blocks reads back with tar -tzf and gzip -t', async () => {
    const pack = tar.pack();
    for (let i = 0; i < 6; i++) pack.entry({ name: `f-${i}.bin`, mode: 0o600 }, sample(50 * KiB + i * 777, i + 1));
    pack.finalize();
    const tarParts: Buffer[] = [];
    for await (const c of pack as AsyncIterable<Buffer>) tarParts.push(c);
    const tarBytes = Buffer.concat(tarParts);
    const gz = await compress(tarBytes, 10 * KiB, { blockBytes: SMALL_BLOCK });
    expectOneMember(gz, tarBytes);
    const dir = mkdtempSync(join(tmpdir(), 'loopx-pgzip-'));
    writeFileSync(join(dir, 'a.tar.gz'), gz);
    const list = spawnSync('tar', ['-tzf', join(dir, 'a.tar.gz')], { encoding: 'utf8' });
    expect(list.status).toBe(0);
    expect(list.stdout.trim().split('\n')).toEqual([0, 1, 2, 3, 4, 5].map((i) => `f-${i}.bin`));
  });

  it('the archive writer hashes and counts exactly the gzip bytes it wrote, one member of its tar stream', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loopx-pgzip-'));
    const src = join(dir, 'big.bin');
    writeFileSync(src, sample(2 * BLOCK_BYTES + 4321));
    const path = join(dir, 'a.tar.gz');
    const w = ArchiveWriter.create(path, new Date(0));
    await w.directory('d');
    await w.file('d/big.bin', src);
    await w.buffer('d/small.txt', Buffer.from('small'));
    const done = await w.finish();
    const gz = readFileSync(path);
    expect(done.size_bytes).toBe(gz.byteLength);
    expect(done.sha256).toBe(createHash('sha256').update(gz).digest('hex'));
    expect(done.expanded_bytes).toBe(gunzipSync(gz).byteLength);
    expect(gzipTest(gz)).toEqual({ status: 0, stderr: '' });
    const list = spawnSync('tar', ['-tzf', path], { encoding: 'utf8' });
    expect(list.stdout.trim().split('\n')).toEqual(['d/', 'd/big.bin', 'd/small.txt']);
  });
});
