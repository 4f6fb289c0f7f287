/**
 * Discovery: walk a runtime root and list what a backup would capture. Only regular files and
 * directories are members; a symlink is never followed and, like a FIFO, socket or device, is
 * recorded as missing with a warning. Non-state names (LAYOUT.nonState), automations/ and skills/
 * unless requested, the output directory when it lies inside the root, and the -wal/-shm/-journal
 * sidecar names beside any regular file (compared case-insensitively: SQLite would read them as
 * part of that file opened as a database, and the verifier refuses them) are excluded (and
 * listed). A SQLite database is recognized by its 16-byte header, never by its name. Discovery
 * only reads.
 */
import { closeSync, lstatSync, openSync, readSync, readdirSync, constants, type Stats } from 'node:fs';
import { join } from 'node:path';
import { LAYOUT, ROOT_DATABASES } from '../owners/index.js';
import { archivePathOf, foldPath, posixPath, sqliteSidecarBase } from './paths.js';

export type MemberCategory =
  'runtime' | 'registry' | 'configuration' | 'goals' | 'owner_databases' | 'automations' | 'skills' | 'other';

export interface PlannedMember {
  /** Relative to the root, POSIX; '' is the root itself. */
  readonly path: string;
  readonly archive_path: string;
  readonly type: 'directory' | 'file';
  /** At discovery time (create records what it actually copies). */
  readonly size_bytes: number;
  readonly sqlite: boolean;
  readonly category: MemberCategory;
}

export interface MissingEntry {
  readonly key: string;
  /** Relative to the root; null when the source lies outside it (its path is never recorded). */
  readonly source_path: string | null;
  readonly reason: string;
}

export interface ExcludedEntry {
  readonly key: string;
  readonly source_path: string;
  readonly reason: 'not_state' | 'not_requested' | 'sqlite_sidecar' | 'output_dir';
}

export interface BackupWarning {
  readonly code: string;
  readonly source_path: string;
}

export interface Discovery {
  readonly members: PlannedMember[];
  readonly missing: MissingEntry[];
  readonly excluded: ExcludedEntry[];
  readonly warnings: BackupWarning[];
  /** Names of the directories directly under goals/. */
  readonly goalDirectories: string[];
}

export interface DiscoverOptions {
  readonly includeAutomations: boolean;
  readonly includeSkills: boolean;
  /** A subtree (relative to the root) to leave out: the output directory. */
  readonly excludeSubtree?: string | undefined;
}

const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');
/** The databases at the root's top, as the OWNERS table lists them. */
const OWNER_DATABASES: ReadonlySet<string> = new Set<string>(ROOT_DATABASES);

/** True when the regular file at `path` starts with the SQLite header. */
export function hasSqliteHeader(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return false;
  }
  try {
    const buf = Buffer.alloc(SQLITE_HEADER.byteLength);
    const n = readSync(fd, buf, 0, buf.byteLength, 0);
    return n === SQLITE_HEADER.byteLength && buf.equals(SQLITE_HEADER);
  } finally {
    closeSync(fd);
  }
}

export function categoryOf(relative: string): MemberCategory {
  if (relative === '') return 'runtime';
  const top = relative.split('/')[0]!;
  if (relative === posixPath(LAYOUT.registry)) return 'registry';
  if (top === posixPath(LAYOUT.machineConfiguration).split('/')[0]) return 'configuration';
  if (top === LAYOUT.goalsDir) return 'goals';
  if (top === LAYOUT.automationsDir) return 'automations';
  if (top === LAYOUT.skillsDir) return 'skills';
  if (OWNER_DATABASES.has(relative)) return 'owner_databases';
  return 'other';
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Record an entry that could not be captured, as missing and as a warning. */
function note(found: Discovery, source: string, reason: string): void {
  found.missing.push({ key: `member:${source}`, source_path: source, reason });
  found.warnings.push({ code: reason, source_path: source });
}

function topLevelExclusion(name: string, options: DiscoverOptions): ExcludedEntry['reason'] | undefined {
  if (LAYOUT.nonState.includes(name)) return 'not_state';
  if (name === LAYOUT.automationsDir && !options.includeAutomations) return 'not_requested';
  if (name === LAYOUT.skillsDir && !options.includeSkills) return 'not_requested';
  return undefined;
}

interface Entry {
  readonly rel: string;
  readonly abs: string;
  readonly st: Stats;
}

/** A directory's entry names in sorted order; undefined when it cannot be listed (recorded as missing). */
function readNames(found: Discovery, dirRel: string, dirAbs: string): string[] | undefined {
  let raw: Buffer[];
  try {
    raw = readdirSync(dirAbs, { encoding: 'buffer' });
  } catch (e) {
    note(found, dirRel, (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'vanished_during_discovery' : 'unreadable');
    return undefined;
  }
  const names: string[] = [];
  for (const b of raw) {
    try {
      names.push(utf8.decode(b));
    } catch {
      // The name cannot be represented in the manifest; record the directory that holds it.
      note(found, dirRel, 'name_not_utf8');
    }
  }
  return names.sort();
}

/** The entries of one directory that are not excluded, each with its lstat. */
function statEntries(
  found: Discovery,
  options: DiscoverOptions,
  dirRel: string,
  dirAbs: string,
  names: readonly string[],
): Entry[] {
  const entries: Entry[] = [];
  for (const name of names) {
    const rel = dirRel === '' ? name : `${dirRel}/${name}`;
    if (dirRel === '') {
      const reason = topLevelExclusion(name, options);
      if (reason) {
        found.excluded.push({ key: `member:${rel}`, source_path: rel, reason });
        continue;
      }
    }
    if (options.excludeSubtree !== undefined && rel === options.excludeSubtree) {
      found.excluded.push({ key: `member:${rel}`, source_path: rel, reason: 'output_dir' });
      continue;
    }
    const abs = join(dirAbs, name);
    let st: Stats;
    try {
      st = lstatSync(abs);
    } catch (e) {
      note(found, rel, (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'vanished_during_discovery' : 'unreadable');
      continue;
    }
    entries.push({ rel, abs, st });
  }
  return entries;
}

/** Record one directory's entries as members, excluded or missing; returns its subdirectories in order. */
function recordEntries(found: Discovery, dirRel: string, entries: readonly Entry[]): string[] {
  const sqlite = new Set<string>();
  for (const e of entries)
    if (e.st.isFile() && e.st.size >= SQLITE_HEADER.byteLength && hasSqliteHeader(e.abs)) sqlite.add(e.rel);
  const files = new Set(entries.filter((e) => e.st.isFile()).map((e) => foldPath(e.rel)));
  const children: string[] = [];
  for (const e of entries) {
    const { rel, st } = e;
    if (st.isFile()) {
      // Beside ANY regular file, not only a detected database: the verifier refuses such a pair.
      const sidecarOf = sqliteSidecarBase(foldPath(rel));
      if (sidecarOf !== undefined && files.has(sidecarOf)) {
        found.excluded.push({ key: `member:${rel}`, source_path: rel, reason: 'sqlite_sidecar' });
        continue;
      }
      found.members.push({
        path: rel,
        archive_path: archivePathOf(rel),
        type: 'file',
        size_bytes: st.size,
        sqlite: sqlite.has(rel),
        category: categoryOf(rel),
      });
    } else if (st.isDirectory()) {
      found.members.push({
        path: rel,
        archive_path: archivePathOf(rel),
        type: 'directory',
        size_bytes: 0,
        sqlite: false,
        category: categoryOf(rel),
      });
      if (dirRel === LAYOUT.goalsDir) found.goalDirectories.push(rel.slice(LAYOUT.goalsDir.length + 1));
      children.push(rel);
    } else if (st.isSymbolicLink()) {
      note(found, rel, 'symlink_not_followed');
    } else {
      note(found, rel, 'special_file_not_captured');
    }
  }
  return children;
}

export function discover(root: string, options: DiscoverOptions): Discovery {
  const found: Discovery = { members: [], missing: [], excluded: [], warnings: [], goalDirectories: [] };
  found.members.push({
    path: '',
    archive_path: archivePathOf(''),
    type: 'directory',
    size_bytes: 0,
    sqlite: false,
    category: 'runtime',
  });
  // Depth-first, children in sorted order, so the archive order is deterministic.
  const stack: string[] = [''];
  while (stack.length > 0) {
    const dirRel = stack.pop()!;
    const dirAbs = dirRel === '' ? root : join(root, dirRel);
    const names = readNames(found, dirRel, dirAbs);
    if (names === undefined) continue;
    const children = recordEntries(found, dirRel, statEntries(found, options, dirRel, dirAbs, names));
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
  }
  // Archive order: sorted by archive path (a parent always precedes its children).
  found.members.sort((a, b) => (a.archive_path < b.archive_path ? -1 : a.archive_path > b.archive_path ? 1 : 0));
  return found;
}
