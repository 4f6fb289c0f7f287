/**
 * Step 4 of verification (RFC §5): one streaming pass over the archive — read the already-bound
 * file description, hash and count the compressed bytes as they are handed to gunzip (the scan's
 * own witness), decompress under the expansion limits, tokenize strictly (tar-scan.ts), check
 * every header with the same MemberChecker that checked the plan, match it to the planned member,
 * and only then write it into the private staging directory: files created exclusively, never
 * following a link, 0600; directories 0700; symbolic links created inert (never followed here);
 * no uid/gid, mode bits, timestamps or ACLs carried over. Memory is bounded by the read chunk.
 */
import { createHash, type Hash } from 'node:crypto';
import {
  close,
  closeSync,
  constants,
  fsync,
  mkdirSync,
  openSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { promisify } from 'node:util';
import { crc32, createInflateRaw } from 'node:zlib';
import { isLoopxError, rejected, canonicalJson, fsyncDir } from '../core/index.js';
import type { BackupManifest } from '../backup/index.js';
import { FORMAT_CODES, INPUT_CODES, MEMBER_CODES } from './codes.js';
import { Witness, type BoundArchive } from './archive-source.js';
import { decodeManifestBytes } from './inputs.js';
import { RECOVERY_LIMITS } from './limits.js';
import { MemberChecker, capacityRefusal, memberRefusal, type CheckedMember } from './members.js';
import { TarScanner, checkExpansion, trailingData, type TarEntry } from './tar-scan.js';

/**
 * The inflater's output chunk. 1 MiB rather than 64 KiB: each chunk is one threadpool round trip,
 * one async-iterator turn and one write per member piece, so 16× fewer of them is most of the
 * per-byte overhead of the pass (the bounds are checked per chunk: at most 1 MiB later).
 */
const INFLATE_CHUNK = 1024 * 1024;
const SQLITE_MAGIC = Buffer.from('SQLite format 3\u0000', 'latin1');
export const EMBEDDED_MANIFEST = 'manifest.json';

/** A member as the manifest plans it (the v0 schema's file / directory / symlink variants). */
export interface PlannedMember {
  readonly path: string;
  readonly type: 'file' | 'directory' | 'symlink';
  readonly size_bytes: number;
  readonly sha256: string | null;
  readonly link_target?: string;
}

export interface ExtractedFile {
  readonly path: string;
  readonly size_bytes: number;
  readonly sha256: string;
  readonly sqlite: boolean;
}

export interface ExtractionFacts {
  readonly expandedBytes: number;
  readonly regularBytes: number;
  readonly members: number;
  readonly files: readonly ExtractedFile[];
  readonly directories: number;
  readonly symlinks: readonly string[];
  readonly embeddedManifestSha256: string;
}

export interface ExtractProgress {
  readonly compressed_done: number;
  readonly compressed_total: number;
}

/** Step 3: the planned list through the member checker (nothing is written). */
export function planMembers(manifest: BackupManifest): Map<string, PlannedMember> {
  const checker = new MemberChecker();
  const planned = new Map<string, PlannedMember>();
  for (const raw of manifest.members as readonly PlannedMember[]) {
    const m = checker.add(raw.path, raw.type, raw.type === 'symlink' ? raw.link_target : undefined);
    planned.set(m.path, raw);
  }
  checker.add(EMBEDDED_MANIFEST, 'file');
  checker.finalizeLinks();
  return planned;
}

const fsyncAsync = promisify(fsync);
const closeAsync = promisify(close);

/** fsync then close, in the background (the caller awaits every one before publishing). */
async function fsyncThenClose(fd: number): Promise<void> {
  try {
    await fsyncAsync(fd);
  } finally {
    await closeAsync(fd);
  }
}

/** Make the extracted tree durable: every file was fsynced as it closed; now every directory. */
async function syncTree(files: readonly Promise<void>[], dirs: readonly string[], top: string): Promise<void> {
  await Promise.all(files);
  for (const dir of [...dirs].reverse()) fsyncDir(dir);
  fsyncDir(top);
}

const gzipInvalid = (): Error =>
  rejected(FORMAT_CODES.gzipInvalid, 'The archive is not a valid gzip stream.', {
    nextAction: 'use an intact backup made by loopx backup-state',
  });
const trailing = (): Error => trailingData('the end of its gzip stream');
const GZIP_HEADER_MAX = 64 * 1024;
export const interrupted = (): Error =>
  rejected('verify_interrupted', 'Verification was interrupted; nothing was published.', {
    nextAction: 'run verify again into a new destination',
  });

/**
 * The length of a gzip member header (RFC 1952 §2.3) at the start of `b`, `undefined` when more
 * bytes are needed. Deflate only, no reserved flag bits, the header CRC checked when present.
 */
export function gzipHeaderLength(b: Buffer): number | undefined {
  if (b.length < 10) return undefined;
  if (b[0] !== 0x1f || b[1] !== 0x8b || b[2] !== 8 || (b[3]! & 0xe0) !== 0) throw gzipInvalid();
  const flags = b[3]!;
  let at = 10;
  if (flags & 4) {
    if (b.length < at + 2) return undefined;
    at += 2 + b.readUInt16LE(at);
  }
  for (const bit of [8, 16]) {
    if (!(flags & bit)) continue;
    const nul = b.indexOf(0, at);
    if (nul < 0) {
      if (b.length > GZIP_HEADER_MAX) throw gzipInvalid();
      return undefined;
    }
    at = nul + 1;
  }
  if (flags & 2) {
    if (b.length < at + 2) return undefined;
    if ((crc32(b.subarray(0, at)) & 0xffff) !== b.readUInt16LE(at)) throw gzipInvalid();
    at += 2;
  }
  if (at > GZIP_HEADER_MAX) throw gzipInvalid();
  return b.length < at ? undefined : at;
}

/**
 * Why not zlib's Gunzip: it silently decodes any further gzip member after the first (so bytes
 * after the archive's end could carry more members) and reports garbage after the stream as a
 * header error whose timing depends on buffering. This reads exactly ONE member: it strips and
 * checks the header, hands the deflate body to an InflateRaw, and after it ends the caller
 * checks from the inflater's consumed count that exactly the 8-byte trailer (CRC-32, ISIZE)
 * follows — anything more is trailing data.
 */
class GzipBody extends Transform {
  private head: Buffer | undefined = Buffer.alloc(0);
  /** The member header's length, once parsed. */
  headerLength: number | undefined;
  /** Bytes handed on after the header. */
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    try {
      let out = chunk;
      if (this.head !== undefined) {
        const joined = Buffer.concat([this.head, chunk]);
        const len = gzipHeaderLength(joined);
        if (len === undefined) {
          this.head = joined;
          return cb();
        }
        this.head = undefined;
        this.headerLength = len;
        out = joined.subarray(len);
      }
      cb(null, out);
    } catch (e) {
      cb(e as Error);
    }
  }
  override _flush(cb: TransformCallback): void {
    cb(this.head !== undefined ? gzipInvalid() : null);
  }
}

const same = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);

/** The embedded copy the producer wrote: the external one with the archive-dependent fields null. */
function expectedEmbedded(m: BackupManifest): unknown {
  return {
    ...m,
    execution: {
      ...m.execution,
      archive_sha256: null,
      archive_size_bytes: null,
      archive_expanded_bytes: null,
      archive_to_logical_ratio: null,
      embedded_manifest: null,
    },
  };
}

/** What one extraction has written and seen so far, shared by the tar scanner's callbacks. */
interface Extraction {
  readonly planned: ReadonlyMap<string, PlannedMember>;
  readonly staging: string;
  readonly onSqlite: ((path: string) => void) | undefined;
  readonly checker: MemberChecker;
  readonly seen: Set<string>;
  readonly files: ExtractedFile[];
  readonly symlinks: string[];
  readonly flushes: Promise<void>[];
  readonly createdDirs: string[];
  directories: number;
  regularBytes: number;
  embedded: Buffer[] | undefined;
  embeddedBytes: number;
  current: { fd: number; member: CheckedMember; hash: Hash; size: number; head: Buffer[]; headLen: number } | undefined;
  manifestChunks: Buffer[] | undefined;
}

/** A member header: checked, matched to its planned member, then created in the staging directory. */
function onEntry(x: Extraction, e: TarEntry): void {
  const m = x.checker.add(e.name, e.type, e.type === 'symlink' || e.type === 'hardlink' ? e.linkName : undefined);
  if (m.path === EMBEDDED_MANIFEST) {
    if (e.type !== 'file')
      throw memberRefusal(MEMBER_CODES.planMismatch, 'The embedded manifest is not a regular file.');
    if (e.size > RECOVERY_LIMITS.manifestBytes)
      throw capacityRefusal('manifestBytes', e.size, RECOVERY_LIMITS.manifestBytes);
    x.manifestChunks = [];
    x.embedded = x.manifestChunks;
    x.seen.add(m.path);
    return;
  }
  const plan = x.planned.get(m.path);
  if (plan === undefined)
    throw memberRefusal(MEMBER_CODES.unplanned, 'The archive holds a member the manifest does not list.');
  if (
    plan.type !== e.type ||
    (e.type === 'file' && plan.size_bytes !== e.size) ||
    (e.type === 'symlink' && plan.link_target !== e.linkName)
  ) {
    throw memberRefusal(
      MEMBER_CODES.planMismatch,
      "An archive member's type, size or link target differs from the manifest.",
    );
  }
  x.seen.add(m.path);
  const target = join(x.staging, m.path);
  if (e.type === 'directory') {
    mkdirSync(target, { mode: 0o700 });
    x.directories++;
    x.createdDirs.push(target);
  } else if (e.type === 'symlink') {
    symlinkSync(e.linkName, target);
    x.symlinks.push(m.path);
  } else {
    x.regularBytes += e.size;
    if (x.regularBytes > RECOVERY_LIMITS.regularFileBytes)
      throw capacityRefusal('regularFileBytes', x.regularBytes, RECOVERY_LIMITS.regularFileBytes);
    const out = openSync(
      target,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    x.current = { fd: out, member: m, hash: createHash('sha256'), size: 0, head: [], headLen: 0 };
  }
}

/** A member's bytes: the embedded manifest is kept in memory; a file is hashed and written. */
function onData(x: Extraction, chunk: Buffer): void {
  if (x.manifestChunks) {
    x.manifestChunks.push(Buffer.from(chunk));
    x.embeddedBytes += chunk.length;
    return;
  }
  const c = x.current!;
  c.hash.update(chunk);
  c.size += chunk.length;
  if (c.headLen < 16) {
    c.head.push(Buffer.from(chunk.subarray(0, 16 - c.headLen)));
    c.headLen += Math.min(16 - c.headLen, chunk.length);
  }
  for (let off = 0; off < chunk.length;) off += writeSync(c.fd, chunk, off, chunk.length - off);
}

/** A member's end: a file's digest is checked against the plan and, when it is SQLite, handed to the owner worker. */
function onEntryEnd(x: Extraction): void {
  if (x.manifestChunks) {
    x.manifestChunks = undefined;
    return;
  }
  const c = x.current;
  if (!c) return;
  x.current = undefined;
  // Flushed in the background while extraction goes on; awaited before the audit can exist.
  x.flushes.push(fsyncThenClose(c.fd));
  const sha = c.hash.digest('hex');
  const plan = x.planned.get(c.member.path)!;
  if (sha !== plan.sha256)
    throw memberRefusal(MEMBER_CODES.digestMismatch, "An archive member's SHA-256 differs from the manifest.");
  const head = Buffer.concat(c.head).subarray(0, 16);
  const sqlite = head.length === 16 && head.equals(SQLITE_MAGIC);
  x.files.push({ path: c.member.path, size_bytes: c.size, sha256: sha, sqlite });
  // Written and digest-checked: the owner worker may start on it while extraction goes on.
  if (sqlite) x.onSqlite?.(c.member.path);
}

const changed = (): Error =>
  rejected(INPUT_CODES.archiveWitnessMismatch, 'The archive changed while it was verified.', {
    nextAction: 'keep the archive unchanged during verification and run verify again',
  });

/** A zlib failure is the gzip refusal; a typed refusal stays itself. */
const failed = (e: unknown): unknown => {
  if (isLoopxError(e)) return e;
  const code = (e as NodeJS.ErrnoException).code;
  if (typeof code === 'string' && code.startsWith('Z_')) return gzipInvalid();
  return e;
};

type Bound = { readonly archiveSize: number; readonly archiveSha256: string; readonly manifest: BackupManifest };

/**
 * The streaming pass: witness → gzip header → inflate → tar scanner. A failure is reported as a
 * change when the witness no longer matches the preflight. Returns the inflated bytes' CRC-32 and
 * the gzip stages, whose counts place the trailer.
 */
async function inflateAndScan(
  x: Extraction,
  witness: Witness,
  scanner: TarScanner,
  bound: Bound,
  signal: AbortSignal | undefined,
): Promise<{ crc: number; body: GzipBody; gunzip: ReturnType<typeof createInflateRaw> }> {
  const body = new GzipBody();
  const gunzip = createInflateRaw({ chunkSize: INFLATE_CHUNK });
  const source = Readable.from(witness.chunks(), { objectMode: false });
  source.pipe(body).pipe(gunzip);
  let crc = 0;
  try {
    source.on('error', (e) => gunzip.destroy(e));
    body.on('error', (e) => gunzip.destroy(e));
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      if (signal?.aborted) throw interrupted();
      crc = crc32(chunk, crc);
      scanner.push(chunk);
      checkExpansion(scanner.bytes, witness.bytes);
    }
    scanner.finish();
    x.checker.finalizeLinks();
  } catch (e) {
    const refusal = failed(e);
    source.unpipe();
    source.destroy();
    await witness.drain().catch(() => undefined);
    throw witness.matches(bound.archiveSize, bound.archiveSha256) ? refusal : changed();
  } finally {
    source.unpipe();
    source.destroy();
    body.destroy();
    gunzip.destroy();
    if (x.current) closeSync(x.current.fd);
    await Promise.allSettled(x.flushes);
  }
  return { crc, body, gunzip };
}

/** Exactly one gzip member: its 8-byte trailer (CRC-32, ISIZE) follows the deflate body, then nothing. */
function checkGzipTrailer(
  trailer: Buffer,
  archiveSize: number,
  headerLength: number | undefined,
  deflateBytes: number,
  crc: number,
  expandedBytes: number,
): void {
  const trailerAt = (headerLength ?? 0) + deflateBytes;
  if (headerLength === undefined || archiveSize < trailerAt + 8) throw gzipInvalid();
  if (archiveSize > trailerAt + 8) throw trailing();
  // The trailer is the archive's last eight bytes, as the witness read them (it matched the first pass).
  if (
    trailer.byteLength !== 8 ||
    trailer.readUInt32LE(0) !== crc >>> 0 ||
    trailer.readUInt32LE(4) !== expandedBytes % 2 ** 32
  )
    throw gzipInvalid();
}

/** The embedded manifest must be present and say what the external one says, archive facts aside. */
function checkEmbeddedManifest(x: Extraction, m: BackupManifest): { embeddedBuf: Buffer; embeddedSha: string } {
  if (x.embedded === undefined) {
    throw rejected(INPUT_CODES.embeddedManifestMissing, 'The archive holds no embedded manifest.json.', {
      nextAction: 'use an intact backup made by loopx backup-state',
    });
  }
  const embeddedBuf = Buffer.concat(x.embedded);
  const embeddedSha = createHash('sha256').update(embeddedBuf).digest('hex');
  const mismatch = (): never => {
    throw rejected(INPUT_CODES.embeddedManifestMismatch, 'The embedded manifest differs from the external manifest.', {
      nextAction: 'pass the archive and manifest of the same backup, both unmodified',
    });
  };
  if (
    embeddedSha !== m.execution.embedded_manifest?.sha256 ||
    embeddedBuf.length !== m.execution.embedded_manifest.size_bytes ||
    x.embeddedBytes !== embeddedBuf.length
  )
    mismatch();
  if (!same(decodeManifestBytes(embeddedBuf), expectedEmbedded(m))) mismatch();
  return { embeddedBuf, embeddedSha };
}

export async function extractArchive(
  archive: BoundArchive,
  bound: Bound,
  planned: ReadonlyMap<string, PlannedMember>,
  staging: string,
  onProgress?: (p: ExtractProgress) => void,
  onSqlite?: (path: string) => void,
  signal?: AbortSignal,
): Promise<ExtractionFacts> {
  const x: Extraction = {
    planned,
    staging,
    onSqlite,
    checker: new MemberChecker(),
    seen: new Set(),
    files: [],
    symlinks: [],
    flushes: [],
    createdDirs: [],
    directories: 0,
    regularBytes: 0,
    embedded: undefined,
    embeddedBytes: 0,
    current: undefined,
    manifestChunks: undefined,
  };
  const witness = new Witness(archive, (n) =>
    onProgress?.({ compressed_done: n, compressed_total: bound.archiveSize }),
  );
  const scanner = new TarScanner({
    onEntry: (e: TarEntry) => onEntry(x, e),
    onData: (chunk: Buffer) => onData(x, chunk),
    onEntryEnd: () => onEntryEnd(x),
  });
  const { crc, body, gunzip } = await inflateAndScan(x, witness, scanner, bound, signal);

  // The scan's own witness must equal the preflight before anything else is trusted. (The
  // inflater stops at the end of the deflate body; the witness reads the rest of the file.)
  await witness.drain();
  if (!witness.matches(bound.archiveSize, bound.archiveSha256)) throw changed();
  checkGzipTrailer(witness.trailer(), bound.archiveSize, body.headerLength, gunzip.bytesWritten, crc, scanner.bytes);
  for (const path of planned.keys()) {
    if (!x.seen.has(path))
      throw memberRefusal(MEMBER_CODES.missing, 'A member the manifest lists is not in the archive.');
  }
  const m = bound.manifest;
  if (scanner.bytes !== m.execution.archive_expanded_bytes) {
    throw rejected(INPUT_CODES.expandedMismatch, "The archive's tar stream length differs from the manifest's.", {
      nextAction: 'pass the archive and manifest of the same backup, both unmodified',
    });
  }
  const { embeddedBuf, embeddedSha } = checkEmbeddedManifest(x, m);
  writeFileSync(join(staging, EMBEDDED_MANIFEST), embeddedBuf, { mode: 0o600, flag: 'wx' });
  const manifestFd = openSync(join(staging, EMBEDDED_MANIFEST), constants.O_RDONLY | constants.O_NOFOLLOW);
  x.flushes.push(fsyncThenClose(manifestFd));
  // Every byte the audit will vouch for is on disk before the audit is written.
  await syncTree(x.flushes, x.createdDirs, staging);

  return {
    expandedBytes: scanner.bytes,
    regularBytes: x.regularBytes + embeddedBuf.length,
    members: x.checker.count,
    files: x.files,
    directories: x.directories,
    symlinks: x.symlinks,
    embeddedManifestSha256: embeddedSha,
  };
}
