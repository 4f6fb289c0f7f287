/**
 * Builds a consistent archive + external manifest pair from a list of entries, the way the loopx
 * producer binds them (src/backup/create.ts, src/backup/manifest.ts):
 *
 *   - `members` is every planned entry (in order) with type/size_bytes/sha256/origin (and
 *     link_target for the symlink variant the verifier accepts); `execution.file_members` the file
 *     members in the same order; `execution.member_count` = members.length + 1;
 *   - the embedded `manifest.json` (the last tar member) is the document with the five
 *     archive-dependent fields null, serialized as JSON.stringify(m, null, 2) + '\n';
 *   - the external manifest adds the archive facts: its SHA-256 and size, the uncompressed tar
 *     length, the embedded manifest's digest and size, and the archive/logical ratio.
 *
 * A case then breaks exactly one binding through the hooks (plan, doc, embedded, end, tar, gzip,
 * external, manifestBytes); everything it does not touch stays consistent. The base entries come
 * from a real backup made by the real producer (loadBase), so the owner members
 * (configuration-backup.json, SQLite snapshots, registry, Goals) pass owner verification.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGzip } from 'node:zlib';
import type { BackupManifest, MemberOrigin } from '../../../src/backup/index.js';
import { readArchive } from '../../backup/support/fixtures.js';
import { RawTar, gzip, type MemberOptions } from './raw-tar.js';

export const sha256 = (b: Uint8Array | string): string => createHash('sha256').update(b).digest('hex');

export type EntryType = 'file' | 'directory' | 'symlink';

export interface CorpusEntry {
  /** Normalized archive path (no trailing slash). */
  readonly path: string;
  readonly type: EntryType;
  /** A file's bytes. */
  readonly data?: Buffer;
  /** A symlink's target. */
  readonly linkTarget?: string;
  readonly origin?: MemberOrigin;
  /** Listed in the manifest's members (default true). */
  readonly planned?: boolean;
  /** Written into the tar (default true). */
  readonly archived?: boolean;
  /** Header overrides and PAX records for this entry's tar member. */
  readonly tar?: MemberOptions;
  /** Write this entry's tar bytes yourself (replaces the default member). */
  readonly emit?: (t: RawTar) => void;
}

/** A `members` item: the schema's file/directory variants plus the symlink variant. */
export interface MemberRecord {
  path: string;
  type: EntryType;
  size_bytes: number;
  sha256: string | null;
  origin: MemberOrigin;
  link_target?: string;
}

/** The manifest as a mutable JSON document. */
export type ManifestDoc = Omit<BackupManifest, 'members'> & { members: MemberRecord[] } & Record<string, unknown>;

export interface BaseBackup {
  /** Every member of the real archive but manifest.json, in archive order. */
  readonly entries: readonly CorpusEntry[];
  /** The real external manifest. */
  readonly manifest: BackupManifest;
  /** The members' one mtime (seconds). */
  readonly mtime: number;
}

export interface BuildOptions {
  /** The entries in archive order (default: the base's). */
  entries?: readonly CorpusEntry[];
  /** Rewrite the planned member records (members and file_members derive from the result). */
  plan?: (members: MemberRecord[]) => MemberRecord[];
  /** Mutate the document before it is embedded (both copies see it). */
  doc?: (m: ManifestDoc) => void;
  /**
   * The embedded manifest: left out, its bytes replaced (the external copy keeps the digest of the
   * bytes the producer would have embedded, unless `recordActual`), or written by the case.
   */
  embedded?: {
    omit?: boolean;
    bytes?: (b: Buffer) => Buffer;
    recordActual?: boolean;
    emit?: (t: RawTar, bytes: Buffer) => void;
  };
  /** Write the end of the tar yourself (default: two zero blocks). */
  end?: (t: RawTar) => void;
  /** Post-process the finished tar stream (truncation, …) before it is compressed. */
  tar?: (tar: Buffer) => Buffer;
  /** The compression layer (default gzip level 6). */
  gzip?: (tar: Buffer) => Buffer;
  /** Mutate the external manifest after the archive facts are set (a lie only it tells). */
  external?: (m: ManifestDoc) => void;
  /** Replace the external manifest's serialized bytes. */
  manifestBytes?: (b: Buffer) => Buffer;
}

export interface Corpus {
  readonly archive: Buffer;
  readonly manifest: Buffer;
  readonly doc: ManifestDoc;
  readonly tar: Buffer;
  readonly embedded: Buffer;
}

export const serialize = (m: unknown): Buffer => Buffer.from(`${JSON.stringify(m, null, 2)}\n`, 'utf8');

const ARCHIVE_FIELDS = [
  'archive_sha256',
  'archive_size_bytes',
  'archive_expanded_bytes',
  'archive_to_logical_ratio',
  'embedded_manifest',
] as const;

/** Read the real backup back into entries (origins from its manifest). */
export async function loadBase(archivePath: string, manifest: BackupManifest): Promise<BaseBackup> {
  const origins = new Map(manifest.members.map((m) => [m.path, m.origin]));
  const entries: CorpusEntry[] = [];
  for (const e of await readArchive(archivePath)) {
    const path = e.name.replace(/\/$/, '');
    if (path === 'manifest.json') continue;
    if (e.type !== 'file' && e.type !== 'directory') throw new Error(`unexpected ${e.type} member in the base archive`);
    entries.push(
      e.type === 'file'
        ? { path, type: 'file', data: e.data, origin: origins.get(path) }
        : { path, type: 'directory', origin: origins.get(path) },
    );
  }
  return { entries, manifest, mtime: Math.floor(Date.parse(manifest.execution.tar.mtime) / 1000) };
}

/** The manifest record of an entry. */
export function recordOf(e: CorpusEntry): MemberRecord {
  const file = e.type === 'file';
  const data = e.data ?? Buffer.alloc(0);
  return {
    path: e.path,
    type: e.type,
    size_bytes: file ? data.length : 0,
    sha256: file ? sha256(data) : null,
    origin: e.origin ?? 'runtime_root',
    ...(e.type === 'symlink' ? { link_target: e.linkTarget ?? '' } : {}),
  };
}

/** The default tar bytes of an entry. */
export function emitEntry(t: RawTar, e: CorpusEntry): void {
  if (e.emit) return e.emit(t);
  const opts = e.tar ?? {};
  if (e.type === 'file') t.file(e.path, e.data ?? Buffer.alloc(0), opts);
  else if (e.type === 'directory') t.dir(e.path, opts);
  else t.symlink(e.path, e.linkTarget ?? '', opts);
}

/** The document both copies share: the base manifest with these members (archive facts null). */
export function planDocument(base: BaseBackup, members: MemberRecord[], hook?: (m: ManifestDoc) => void): ManifestDoc {
  const doc = structuredClone(base.manifest) as unknown as ManifestDoc;
  doc.members = members;
  const execution = doc.execution as unknown as Record<string, unknown>;
  execution.file_members = members
    .filter((m) => m.type === 'file')
    .map((m) => ({ archive_path: m.path, size_bytes: m.size_bytes, sha256: m.sha256 }));
  execution.member_count = members.length + 1;
  for (const f of ARCHIVE_FIELDS) execution[f] = null;
  hook?.(doc);
  return doc;
}

const digestOf = (b: Buffer) => ({ archive_path: 'manifest.json', sha256: sha256(b), size_bytes: b.length });

/** The external manifest: the document plus the archive facts. */
function externalOf(
  doc: ManifestDoc,
  facts: { archive: { sha256: string; size: number }; expanded: number; embedded: ReturnType<typeof digestOf> },
): ManifestDoc {
  const external = structuredClone(doc);
  const ex = external.execution as unknown as Record<string, unknown>;
  const logical = external.summary.logical_source_bytes;
  ex.archive_sha256 = facts.archive.sha256;
  ex.archive_size_bytes = facts.archive.size;
  ex.archive_expanded_bytes = facts.expanded;
  ex.archive_to_logical_ratio = logical > 0 ? Math.round((facts.archive.size / logical) * 1e6) / 1e6 : null;
  ex.embedded_manifest = facts.embedded;
  return external;
}

export function buildCorpus(base: BaseBackup, options: BuildOptions = {}): Corpus {
  const entries = options.entries ?? base.entries;
  let members = entries.filter((e) => e.planned !== false).map(recordOf);
  if (options.plan) members = options.plan(members);
  const doc = planDocument(base, members, options.doc);

  let embedded = serialize(doc);
  let embeddedDigest = digestOf(embedded);
  if (options.embedded?.bytes) embedded = options.embedded.bytes(embedded);
  if (options.embedded?.recordActual) embeddedDigest = digestOf(embedded);

  const t = new RawTar({ mtime: base.mtime });
  for (const e of entries) if (e.archived !== false) emitEntry(t, e);
  if (options.embedded?.emit) options.embedded.emit(t, embedded);
  else if (!options.embedded?.omit) t.file('manifest.json', embedded);
  if (options.end) options.end(t);
  else t.end();
  let tar = t.bytes();
  if (options.tar) tar = options.tar(tar);
  const archive = options.gzip ? options.gzip(tar) : gzip(tar);

  // The digest of the bytes the producer would have embedded: a case that swaps the bytes keeps it (unless recordActual).
  const external = externalOf(doc, {
    archive: { sha256: sha256(archive), size: archive.length },
    expanded: tar.length,
    embedded: embeddedDigest,
  });
  options.external?.(external);
  let manifest = serialize(external);
  if (options.manifestBytes) manifest = options.manifestBytes(manifest);
  return { archive, manifest, doc: external, tar, embedded };
}

const ZERO_CHUNK = Buffer.alloc(1024 * 1024);

/** SHA-256 of `size` zero bytes. */
export function zerosSha256(size: number): string {
  const h = createHash('sha256');
  for (let left = size; left > 0; left -= ZERO_CHUNK.length)
    h.update(left >= ZERO_CHUNK.length ? ZERO_CHUNK : ZERO_CHUNK.subarray(0, left));
  return h.digest('hex');
}

/**
 * A consistent pair whose last planned member is `zeros.size` zero bytes, streamed through gzip
 * (never held in memory): the gzip-bomb shape. `zeros.size` may depend on the embedded
 * manifest's length (`sizeFor`), which does not change with the value as long as its digit count
 * does not.
 */
export async function buildZeroFileCorpus(
  base: BaseBackup,
  options: {
    entries?: readonly CorpusEntry[];
    path: string;
    sizeFor: (embeddedBytes: number) => number;
    level?: number;
    external?: (m: ManifestDoc) => void;
  },
): Promise<Omit<Corpus, 'tar'> & { expanded: number; zeros: number }> {
  const entries = options.entries ?? base.entries;
  const members = entries.filter((e) => e.planned !== false).map(recordOf);
  const zeroRecord = (size: number, digest: string): MemberRecord => ({
    path: options.path,
    type: 'file',
    size_bytes: size,
    sha256: digest,
    origin: 'runtime_root',
  });
  const probe = serialize(planDocument(base, [...members, zeroRecord(options.sizeFor(0), '0'.repeat(64))])).length;
  const size = options.sizeFor(probe);
  const doc = planDocument(base, [...members, zeroRecord(size, zerosSha256(size))]);
  const embedded = serialize(doc);
  if (embedded.length !== probe) throw new Error('the embedded manifest length moved with the zero file size');

  const head = new RawTar({ mtime: base.mtime });
  for (const e of entries) if (e.archived !== false) emitEntry(head, e);
  head.header({ name: options.path, typeflag: '0', size });
  const tail = new RawTar({ mtime: base.mtime });
  tail.raw(Buffer.alloc((512 - (size % 512)) % 512));
  tail.file('manifest.json', embedded).end();

  const gz = createGzip({ level: options.level ?? 9 });
  const out: Buffer[] = [];
  gz.on('data', (c: Buffer) => out.push(c));
  const done = new Promise<void>((resolve, reject) => {
    gz.on('end', resolve);
    gz.on('error', reject);
  });
  const write = async (b: Buffer) => {
    if (!gz.write(b)) await new Promise<void>((r) => gz.once('drain', r));
  };
  await write(head.bytes());
  for (let left = size; left > 0; left -= ZERO_CHUNK.length)
    await write(left >= ZERO_CHUNK.length ? ZERO_CHUNK : ZERO_CHUNK.subarray(0, left));
  await write(tail.bytes());
  gz.end();
  await done;
  const archive = Buffer.concat(out);
  const expanded = head.length + size + tail.length;
  const external = externalOf(doc, {
    archive: { sha256: sha256(archive), size: archive.length },
    expanded,
    embedded: digestOf(embedded),
  });
  options.external?.(external);
  return { archive, manifest: serialize(external), doc: external, embedded, expanded, zeros: size };
}

/** Write a corpus pair into `dir` as `<id>.tar.gz` and `<id>.manifest.json` (0600). */
export function writeCorpus(
  dir: string,
  corpus: Pick<Corpus, 'archive' | 'manifest'>,
  id = 'corpus',
): { archive: string; manifest: string } {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const archive = join(dir, `${id}.tar.gz`);
  const manifest = join(dir, `${id}.manifest.json`);
  writeFileSync(archive, corpus.archive, { mode: 0o600 });
  writeFileSync(manifest, corpus.manifest, { mode: 0o600 });
  return { archive, manifest };
}

/** A file entry. */
export const fileEntry = (path: string, data: Buffer | string, extra: Partial<CorpusEntry> = {}): CorpusEntry => ({
  path,
  type: 'file',
  data: typeof data === 'string' ? Buffer.from(data, 'utf8') : data,
  ...extra,
});
export const dirEntry = (path: string, extra: Partial<CorpusEntry> = {}): CorpusEntry => ({
  path,
  type: 'directory',
  ...extra,
});
export const linkEntry = (path: string, linkTarget: string, extra: Partial<CorpusEntry> = {}): CorpusEntry => ({
  path,
  type: 'symlink',
  linkTarget,
  ...extra,
});

/** Insert `added` right after the entry at `after` (or at the end when absent). */
export function insertAfter(entries: readonly CorpusEntry[], after: string, ...added: CorpusEntry[]): CorpusEntry[] {
  const i = entries.findIndex((e) => e.path === after);
  const out = [...entries];
  out.splice(i < 0 ? out.length : i + 1, 0, ...added);
  return out;
}

/** Replace the entry at `path` (keeping its place). */
export function replaceEntry(
  entries: readonly CorpusEntry[],
  path: string,
  f: (e: CorpusEntry) => CorpusEntry | CorpusEntry[],
): CorpusEntry[] {
  const out: CorpusEntry[] = [];
  let found = false;
  for (const e of entries) {
    if (e.path === path) {
      found = true;
      const r = f(e);
      out.push(...(Array.isArray(r) ? r : [r]));
    } else out.push(e);
  }
  if (!found) throw new Error(`no entry ${path}`);
  return out;
}
