/**
 * The archive writer: a tar stream (tar-stream) through gzip into a new private file, with bounded
 * memory (every entry is streamed with backpressure). The gzip is one standard member compressed in
 * blocks on every core (parallel-gzip.ts). It counts the expanded tar bytes and hashes
 * the compressed bytes as they are written, so the archive digest is of exactly what reached the
 * file. Every member is owner-only (files 0600, directories 0700), owned by uid/gid 0 with empty
 * user and group names, and carries one fixed mtime. It writes only the file it created
 * (O_EXCL|O_NOFOLLOW) and never replaces anything.
 */
import { createHash, type Hash } from 'node:crypto';
import { closeSync, fsyncSync, openSync, write, constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { Transform, Writable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-stream';
import { ParallelGzip } from './parallel-gzip.js';

export const FILE_MODE = 0o600;
export const DIRECTORY_MODE = 0o700;
const CHUNK = 1024 * 1024;

class Counter extends Transform {
  bytes = 0;
  readonly hash: Hash | undefined;
  constructor(withHash: boolean) {
    super();
    this.hash = withHash ? createHash('sha256') : undefined;
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.byteLength;
    this.hash?.update(chunk);
    cb(null, chunk);
  }
}

/** Writes to a file descriptor it does not own: it never closes it (fs.WriteStream closes its fd when destroyed). */
class FdSink extends Writable {
  constructor(private readonly fd: number) {
    super({ highWaterMark: CHUNK });
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (error?: Error | null) => void): void {
    const step = (off: number): void => {
      if (off >= chunk.byteLength) return cb();
      write(this.fd, chunk, off, chunk.byteLength - off, null, (err, n) => (err ? cb(err) : step(off + n)));
    };
    step(0);
  }
}

export interface CopiedEntry {
  readonly size_bytes: number;
  readonly sha256: string;
}

/** Thrown by a copy when the source file ended before the size its header promised. */
export class ShortReadError extends Error {
  constructor() {
    super('the file became shorter while it was copied');
  }
}

export class ArchiveWriter {
  private readonly pack = tar.pack();
  private readonly expanded = new Counter(false);
  private readonly compressed = new Counter(true);
  private readonly done: Promise<void>;
  private failure: unknown;
  private closed = false;

  private constructor(
    private readonly fd: number,
    private readonly mtime: Date,
    gzipLevel: number,
  ) {
    const out = new FdSink(fd);
    this.done = pipeline(this.pack, this.expanded, new ParallelGzip({ level: gzipLevel }), this.compressed, out);
    this.done.catch((e: unknown) => {
      this.failure ??= e;
    });
  }

  /** Create `path` exclusively (0600) and start the stream. */
  static create(path: string, mtime: Date, gzipLevel = 6): ArchiveWriter {
    const fd = openSync(
      path,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      FILE_MODE,
    );
    return new ArchiveWriter(fd, mtime, gzipLevel);
  }

  /** Uncompressed tar bytes produced so far. */
  get expandedBytes(): number {
    return this.expanded.bytes;
  }

  /** Compressed bytes written so far. */
  get archiveBytes(): number {
    return this.compressed.bytes;
  }

  private header(name: string, type: 'file' | 'directory', size: number): Partial<tar.Header> & { name: string } {
    return {
      name,
      type,
      size,
      mode: type === 'file' ? FILE_MODE : DIRECTORY_MODE,
      uid: 0,
      gid: 0,
      uname: '',
      gname: '',
      mtime: this.mtime,
    };
  }

  private checkFailure(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  async directory(archivePath: string): Promise<void> {
    this.checkFailure();
    await new Promise<void>((resolve, reject) => {
      this.pack.entry(this.header(`${archivePath}/`, 'directory', 0), (err) => (err ? reject(err) : resolve()));
    });
  }

  async buffer(archivePath: string, data: Uint8Array): Promise<CopiedEntry> {
    this.checkFailure();
    const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    await new Promise<void>((resolve, reject) => {
      this.pack.entry(this.header(archivePath, 'file', buf.byteLength), buf, (err) => (err ? reject(err) : resolve()));
    });
    return { size_bytes: buf.byteLength, sha256: createHash('sha256').update(buf).digest('hex') };
  }

  /**
   * Copy the regular file at `path` (opened without following a symlink) as `archivePath`. The
   * entry's size is the file's size when opened; a file that grows is copied up to that size, a
   * file that shrinks throws ShortReadError. The digest is of the bytes written into the entry.
   * `onSize` sees the entry's size before anything is written and `onChunk` every byte count
   * copied (progress and live capacity checks); either may throw to stop the copy.
   */
  async file(
    archivePath: string,
    path: string,
    watch: { onSize?(size: number): void; onChunk?(bytes: number): void } = {},
  ): Promise<CopiedEntry> {
    this.checkFailure();
    const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw Object.assign(new Error('not a regular file'), { code: 'ENOTREGULAR' });
      const size = st.size;
      watch.onSize?.(size);
      const hash = createHash('sha256');
      let entryError: unknown;
      const finished = new Promise<void>((resolve, reject) => {
        const sink = this.pack.entry(this.header(archivePath, 'file', size), (err) => (err ? reject(err) : resolve()));
        // Failures reach the caller through the entry callback and entryError; an 'error' event without a listener would crash the process.
        sink.on('error', () => undefined);
        void (async () => {
          let copied = 0;
          try {
            while (copied < size) {
              this.checkFailure();
              const buf = Buffer.allocUnsafe(Math.min(CHUNK, size - copied));
              const { bytesRead } = await fh.read(buf, 0, buf.byteLength, copied);
              if (bytesRead === 0) throw new ShortReadError();
              const chunk = bytesRead === buf.byteLength ? buf : buf.subarray(0, bytesRead);
              hash.update(chunk);
              copied += bytesRead;
              watch.onChunk?.(bytesRead);
              if (!sink.write(chunk)) await this.drained(sink);
            }
            sink.end(undefined);
          } catch (e) {
            entryError = e;
            sink.destroy(e instanceof Error ? e : new Error(String(e)));
          }
        })();
      });
      try {
        await finished;
      } catch (e) {
        throw entryError ?? e;
      }
      if (entryError !== undefined) throw entryError;
      return { size_bytes: size, sha256: hash.digest('hex') };
    } finally {
      await fh.close();
    }
  }

  private drained(sink: NodeJS.EventEmitter): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onDrain = () => {
        cleanup();
        resolve();
      };
      const onError = (e: unknown) => {
        cleanup();
        reject(e);
      };
      const cleanup = () => {
        sink.off('drain', onDrain);
        sink.off('error', onError);
        sink.off('close', onClose);
      };
      const onClose = () => {
        cleanup();
        reject(this.failure ?? new Error('the archive stream closed'));
      };
      sink.on('drain', onDrain);
      sink.on('error', onError);
      sink.on('close', onClose);
    });
  }

  /** End the tar stream, flush gzip, fsync and close the file. */
  async finish(): Promise<{ sha256: string; size_bytes: number; expanded_bytes: number }> {
    this.checkFailure();
    this.pack.finalize();
    await this.done;
    fsyncSync(this.fd);
    this.close();
    return {
      sha256: this.compressed.hash!.digest('hex'),
      size_bytes: this.compressed.bytes,
      expanded_bytes: this.expanded.bytes,
    };
  }

  /** Stop writing after a refusal or failure (the caller removes the partial file). */
  async abort(): Promise<void> {
    if (this.closed) return;
    this.pack.destroy(new Error('backup aborted'));
    await this.done.catch(() => undefined);
    this.close();
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }
}
