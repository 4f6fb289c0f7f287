/**
 * Where the verifier reads an archive's bytes from, and the scan's witness over them. An archive
 * is read in two passes: the digest pass of step 1 (inputs.ts: nothing is decoded until the size and
 * SHA-256 match the manifest), then the scan, whose witness hashes exactly the bytes it hands to the
 * inflater and must equal the first pass before anything extracted is trusted. A local file is
 * read twice through one descriptor opened without following a link; an archive elsewhere (a
 * repository's object in S3, opened on the fly when sealed) is read twice from its source, each
 * pass a fresh read from its first byte, so nothing of it is written to local disk.
 */
import { createHash, type Hash } from 'node:crypto';
import { closeSync, read } from 'node:fs';
import { promisify } from 'node:util';
import { RECOVERY_LIMITS } from './limits.js';

const readAt = promisify(read);

/** Large reads: hashing runs at SHA-256's own speed, not at a syscall per small chunk. */
export const READ_CHUNK = 1024 * 1024;

/** An archive that is not a local file: each `read()` is a whole, fresh read from its first byte. */
export interface ArchiveSource {
  read(): AsyncIterable<Uint8Array>;
}

/** The bound archive: each `pass()` reads it again from its first byte; `close()` releases it. */
export interface BoundArchive {
  pass(): AsyncIterator<Buffer>;
  close(): void;
}

/** A local file's descriptor (opened by the caller, closed by `close()`), read in `READ_CHUNK` reads from offset 0. */
export function fileArchive(fd: number): BoundArchive {
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let position = 0; ;) {
      const buffer = Buffer.allocUnsafe(READ_CHUNK);
      const { bytesRead } = await readAt(fd, buffer, 0, READ_CHUNK, position);
      if (bytesRead === 0) return;
      position += bytesRead;
      yield buffer.subarray(0, bytesRead);
    }
  }
  return { pass: () => chunks(), close: () => closeSync(fd) };
}

/** An archive read from its source: every pass a new read of it. */
export function sourceArchive(source: ArchiveSource): BoundArchive {
  async function* chunks(): AsyncGenerator<Buffer> {
    for await (const chunk of source.read()) yield Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
  }
  return { pass: () => chunks(), close: () => undefined };
}

/**
 * The scan's witness: it reads one pass of the bound archive and hashes every byte it hands on, in
 * order — exactly what gunzip consumes — and keeps the last eight (the gzip trailer, trusted only
 * once the whole witness matches the first pass). After a failure `drain()` hashes the rest, so a
 * refusal caused by bytes that changed between the passes is reported as a change (the witness
 * differs from the preflight), not as corrupt input.
 */
export class Witness {
  bytes = 0;
  private readonly hash: Hash = createHash('sha256');
  private tail = Buffer.alloc(0);
  private readonly source: AsyncIterator<Buffer>;
  /** Reads are chained: a drain after a failure never overlaps a read still in flight. */
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    archive: BoundArchive,
    private readonly onBytes: (n: number) => void,
  ) {
    this.source = archive.pass();
  }

  private next(): Promise<Buffer | undefined> {
    const step = this.chain.then(async () => {
      const r = await this.source.next();
      if (r.done === true) return undefined;
      const chunk = r.value;
      this.hash.update(chunk);
      this.bytes += chunk.byteLength;
      this.tail =
        chunk.byteLength >= 8
          ? Buffer.from(chunk.subarray(chunk.byteLength - 8))
          : Buffer.concat([this.tail, chunk]).subarray(-8);
      return chunk;
    });
    this.chain = step.catch(() => undefined);
    return step;
  }

  async *chunks(): AsyncGenerator<Buffer> {
    for (;;) {
      const chunk = await this.next();
      if (chunk === undefined) return;
      this.onBytes(this.bytes);
      yield chunk;
    }
  }

  /** Hash the rest of the pass (bounded by the archive limit), then let its source go. */
  async drain(): Promise<void> {
    while (this.bytes <= RECOVERY_LIMITS.archiveBytes && (await this.next()) !== undefined);
    await this.source.return?.();
  }

  matches(size: number, sha256: string): boolean {
    return this.bytes === size && this.hash.copy().digest('hex') === sha256;
  }

  /** The last eight bytes read: the gzip trailer of an archive whose witness matched. */
  trailer(): Buffer {
    return this.tail;
  }
}
