/**
 * The member checker: one set of rules applied twice — to the manifest's planned member list,
 * lexically, before anything is written (RFC §5 step 3), and to every tar header as it is read,
 * before its bytes are written (step 4). Using the same function for both is the point: a check
 * that disagrees with what is written is the main bypass class of archive extraction.
 *
 * The workspace is the archive's top. Rules, in the order they are applied to a member:
 * absolute → traversal → invalid component / top-level name → path limits → member count →
 * duplicate → Unicode (NFC) twin → case twin → SQLite sidecar → path through a symbolic link →
 * link target → parent directory. A symbolic link is resolved over the members seen so far as a
 * tiny virtual file system (intermediate links are followed, `..` pops), at most 40 hops, and may
 * not leave the workspace; a hard link is never materialized (it is refused, with the most
 * specific reason).
 */
import { rejected, type LoopxError } from '../core/index.js';
import { CAPACITY_CODES, MEMBER_CODES } from './codes.js';
import { RECOVERY_LIMITS } from './limits.js';
import { SQLITE_SIDECAR_SUFFIXES, foldPath, sqliteSidecarBase } from '../backup/index.js';

export type MemberKind = 'file' | 'directory' | 'symlink' | 'hardlink';

export interface CheckedMember {
  /** Normalized: no leading `/`, no trailing `/`, no empty or dot component. */
  readonly path: string;
  readonly kind: MemberKind;
  /** Symbolic- and hard-link target as written. */
  readonly linkTarget?: string;
}

export const TOP_LEVEL = new Set([
  'runtime-root',
  'component-exports',
  'failure-observation',
  'configuration-backup.json',
  'manifest.json',
]);

/** C0 and C1 controls, bidi overrides and isolates, and the byte-order mark: never in a member name. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\ufeff]/;

/** A member refusal. It never names the member: member names are private data, a refusal is public output. */
export function memberRefusal(code: (typeof MEMBER_CODES)[keyof typeof MEMBER_CODES], message: string): LoopxError {
  return rejected(code, message, {
    nextAction: 'use an intact backup made by loopx backup-state; this archive is not safe to extract',
  });
}

/** A §12 capacity refusal of the archive (free space at the destination is destination.ts's own refusal). */
export function capacityRefusal(
  limit: Exclude<keyof typeof CAPACITY_CODES, 'freeSpace'>,
  observed: number,
  maximum: number,
): LoopxError {
  return rejected(CAPACITY_CODES[limit], `The backup exceeds the ${limit} limit (${observed} > ${maximum}).`, {
    nextAction: 'split the runtime root or prune it before backing up again; limits are fixed for this profile',
    details: { limit, observed, maximum },
  });
}

/** Splits a raw member name; a directory's single trailing `/` is dropped. Throws the typed refusal. */
export function normalizeMemberPath(raw: string, kind: MemberKind): string {
  if (raw.startsWith('/')) throw memberRefusal(MEMBER_CODES.absolute, 'An archive member has an absolute path.');
  let name = raw;
  if (kind === 'directory' && name.endsWith('/')) name = name.slice(0, -1);
  const parts = name.split('/');
  if (parts.includes('..')) throw memberRefusal(MEMBER_CODES.traversal, 'An archive member path contains "..".');
  for (const p of parts) {
    if (p === '' || p === '.' || p.includes('\\') || UNSAFE.test(p)) {
      throw memberRefusal(
        MEMBER_CODES.invalid,
        'An archive member path has an empty, dot, backslash or control-character component.',
      );
    }
  }
  if (!TOP_LEVEL.has(parts[0]!))
    throw memberRefusal(MEMBER_CODES.invalid, 'An archive member lies outside the names a loopx backup holds.');
  if (parts.length > RECOVERY_LIMITS.pathComponents)
    throw capacityRefusal('pathComponents', parts.length, RECOVERY_LIMITS.pathComponents);
  const chars = [...name].length;
  if (chars > RECOVERY_LIMITS.pathChars) throw capacityRefusal('pathChars', chars, RECOVERY_LIMITS.pathChars);
  for (const p of parts) {
    const bytes = Buffer.byteLength(p, 'utf8');
    if (bytes > RECOVERY_LIMITS.pathComponentBytes)
      throw capacityRefusal('pathComponentBytes', bytes, RECOVERY_LIMITS.pathComponentBytes);
  }
  return name;
}

/** Case folding close to what case-insensitive file systems apply (shared with the producer's sidecar exclusion). */
const fold = foldPath;

/** Kinds SQLite could open as a database or as its sidecar (a directory is neither). */
const openable = (kind: MemberKind | undefined): boolean =>
  kind === 'file' || kind === 'symlink' || kind === 'hardlink';

export class MemberChecker {
  private readonly kinds = new Map<string, MemberKind>();
  private readonly nfc = new Map<string, string>();
  private readonly folded = new Map<string, string>();
  private readonly links = new Map<string, string>();
  count = 0;

  constructor(private readonly maxMembers: number = RECOVERY_LIMITS.members) {}

  /** Check `raw` against every rule and every member added before; on success record it. */
  add(raw: string, kind: MemberKind, linkTarget?: string): CheckedMember {
    const path = normalizeMemberPath(raw, kind);
    if (this.count + 1 > this.maxMembers) throw capacityRefusal('members', this.count + 1, this.maxMembers);
    if (this.kinds.has(path)) throw memberRefusal(MEMBER_CODES.duplicate, 'Two archive members have the same path.');
    const n = path.normalize('NFC');
    if (this.nfc.has(n))
      throw memberRefusal(
        MEMBER_CODES.unicodeCollision,
        'Two archive member paths differ only in Unicode normalization (NFC/NFD).',
      );
    const f = fold(path);
    if (this.folded.has(f))
      throw memberRefusal(MEMBER_CODES.caseCollision, 'Two archive member paths differ only in letter case.');
    if (openable(kind)) this.checkSidecar(f);
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) {
      if (this.links.has(parts.slice(0, i).join('/')))
        throw memberRefusal(MEMBER_CODES.throughLink, 'An archive member lies beneath a symbolic-link member.');
    }
    if (kind === 'symlink') this.checkSymlink(path, linkTarget ?? '');
    if (kind === 'hardlink') this.checkHardlink(path, linkTarget ?? '');
    if (parts.length > 1 && this.kinds.get(parts.slice(0, -1).join('/')) !== 'directory') {
      throw memberRefusal(
        MEMBER_CODES.parentMissing,
        "An archive member's parent is not a directory member that comes before it.",
      );
    }
    this.kinds.set(path, kind);
    this.nfc.set(n, path);
    this.folded.set(f, path);
    if (kind === 'symlink') this.links.set(path, linkTarget!);
    this.count++;
    return { path, kind, ...(linkTarget === undefined ? {} : { linkTarget }) };
  }

  /**
   * Either order: `f` names a sidecar of an earlier file or link, or an earlier file or link is a
   * sidecar of `f`. Checked on the plan (every member, before anything is written) and again on
   * every header, so a sidecar is never extracted beside its database.
   */
  private checkSidecar(f: string): void {
    const base = sqliteSidecarBase(f);
    const isOpenable = (folded: string | undefined): boolean =>
      folded !== undefined && this.folded.has(folded) && openable(this.kinds.get(this.folded.get(folded)!));
    if (isOpenable(base) || SQLITE_SIDECAR_SUFFIXES.some((s) => isOpenable(f + s))) {
      throw memberRefusal(
        MEMBER_CODES.sqliteSidecar,
        'An archive member is a SQLite -wal, -shm or -journal sidecar of another member.',
      );
    }
  }

  private checkSymlink(path: string, target: string): void {
    if (target === '' || target.startsWith('/') || target.includes('\0')) {
      throw memberRefusal(MEMBER_CODES.linkEscapes, 'A symbolic-link member points outside the workspace.');
    }
    if (target.includes('\\') || UNSAFE.test(target))
      throw memberRefusal(MEMBER_CODES.invalid, 'A symbolic-link target has a backslash or control character.');
    this.resolve(path, target);
  }

  /**
   * Resolve `target` (relative to the link's directory) over the members known so far, following
   * intermediate links; throws when it leaves the workspace, needs more than 40 hops, or walks
   * more than 64 × 40 components. `strict` (the final pass, every member known) also refuses a
   * target that walks through a component that is neither a directory member nor a link: its
   * meaning would depend on what is not in the archive.
   */
  private resolve(linkPath: string, target: string, strict = false): void {
    const escapes = (): never => {
      throw memberRefusal(MEMBER_CODES.linkEscapes, 'A symbolic-link member points outside the workspace.');
    };
    let hops = 1;
    let budget = RECOVERY_LIMITS.pathComponents * RECOVERY_LIMITS.linkHops;
    // stack[i] is the joined path of the first i+1 components (no re-joining per step).
    const stack: string[] = [];
    for (const part of linkPath.split('/').slice(0, -1))
      stack.push(stack.length === 0 ? part : `${stack.at(-1)}/${part}`);
    const pending: string[] = target.split('/').reverse();
    while (pending.length > 0) {
      if (--budget < 0) throw capacityRefusal('linkHops', hops, RECOVERY_LIMITS.linkHops);
      const part = pending.pop()!;
      if (part === '' || part === '.') continue;
      if (part === '..') {
        if (stack.length === 0) escapes();
        // Leaving a name the archive does not hold as a directory: on disk, ".." of it means nothing.
        if (strict && this.kinds.get(stack.at(-1)!) !== 'directory') escapes();
        stack.pop();
        continue;
      }
      if (strict && stack.length > 0 && this.kinds.get(stack.at(-1)!) !== 'directory') escapes();
      const here = stack.length === 0 ? part : `${stack.at(-1)}/${part}`;
      const next = here === linkPath ? target : this.links.get(here);
      if (next === undefined) {
        stack.push(here);
        continue;
      }
      if (++hops > RECOVERY_LIMITS.linkHops) throw capacityRefusal('linkHops', hops, RECOVERY_LIMITS.linkHops);
      if (next.startsWith('/')) escapes();
      pending.push(...next.split('/').reverse());
    }
  }

  /**
   * Re-resolve every link against the complete member set: a link added later can change what an
   * earlier, already accepted link resolves to, so a check made in archive order alone is not
   * enough. Call once every member is added.
   */
  finalizeLinks(): void {
    for (const [path, target] of this.links) this.resolve(path, target, true);
  }

  private checkHardlink(path: string, target: string): void {
    const parts = target.split('/');
    let depth = 0;
    for (const p of parts) {
      if (p === '..') depth--;
      else if (p !== '' && p !== '.') depth++;
      if (depth < 0) break;
    }
    if (target === '' || target.startsWith('/') || depth < 0 || !TOP_LEVEL.has(parts[0] ?? '')) {
      throw memberRefusal(MEMBER_CODES.linkEscapes, 'A hard-link member points outside the workspace.');
    }
    if (parts.includes('..') || parts.includes('.') || this.kinds.get(target) !== 'file') {
      throw memberRefusal(
        MEMBER_CODES.hardlinkAmbiguous,
        'A hard-link member does not name exactly one earlier regular-file member.',
      );
    }
    throw memberRefusal(
      MEMBER_CODES.hardlinkUnsupported,
      'Hard-link members are not supported; the producer never writes them.',
    );
  }
}
