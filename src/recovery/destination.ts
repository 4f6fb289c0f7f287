/**
 * Step 2 of verification (RFC §5): the destination must lie outside every live runtime root, the
 * run authority directory and every existing recovery workspace (a workspace inside a root is
 * swept into that root's next backup as live state); it must not exist; its parent must be a real
 * directory reached without symbolic links, owned by this user (or root) and not writable by
 * others unless sticky; the manifest's declared inventory must fit the §12 limits; and the
 * parent's file system must have room for the regular-file bytes plus a 16 MiB margin.
 * Placement is decided on physical paths (links and `..` resolved), before anything is created.
 */
import { lstatSync, realpathSync, statfsSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { conflict, rejected, type LoopxError, physical, recoveryDestinationOf } from '../core/index.js';
import type { BackupManifest } from '../backup/index.js';
import { LAYOUT, ROOT_MARKERS } from '../owners/index.js';
import { CAPACITY_CODES, DESTINATION_CODES } from './codes.js';
import { RECOVERY_LIMITS } from './limits.js';
import { capacityRefusal } from './members.js';

export interface DestinationFacts {
  /** Absolute; never printed. */
  readonly path: string;
  readonly parent: string;
  readonly freeBytes: number;
  readonly requiredBytes: number;
}

export interface DeclaredInventory {
  readonly members: number;
  readonly regularBytes: number;
  readonly expandedBytes: number;
  readonly goals: number;
  readonly sqliteFiles: number;
  readonly maxGoalHistory: number;
  /** The largest declared SQLite snapshot: the worker holds one private copy of it at a time. */
  readonly largestSqliteBytes: number;
}

export function declaredInventory(m: BackupManifest): DeclaredInventory {
  return {
    members: m.members.length + 1,
    regularBytes:
      m.members.reduce((n, x) => n + (x.type === 'file' ? x.size_bytes : 0), 0) +
      (m.execution.embedded_manifest?.size_bytes ?? 0),
    expandedBytes: m.execution.archive_expanded_bytes ?? 0,
    goals: m.goals.length,
    sqliteFiles: m.execution.sqlite_snapshots.length,
    maxGoalHistory: Math.max(0, ...m.execution.sqlite_snapshots.map((s) => s.committed_transactions ?? 0)),
    largestSqliteBytes: Math.max(0, ...m.execution.sqlite_snapshots.map((s) => s.snapshot_size_bytes)),
  };
}

/** The declared inventory against §12 (before anything is decompressed). */
export function checkDeclared(d: DeclaredInventory, archiveSize: number): void {
  const L = RECOVERY_LIMITS;
  if (d.members > L.members) throw capacityRefusal('members', d.members, L.members);
  if (d.expandedBytes > L.expandedBytes) throw capacityRefusal('expandedBytes', d.expandedBytes, L.expandedBytes);
  if (d.regularBytes > L.regularFileBytes)
    throw capacityRefusal('regularFileBytes', d.regularBytes, L.regularFileBytes);
  const ratio = archiveSize > 0 ? d.expandedBytes / archiveSize : 0;
  if (ratio > L.expansionRatio) throw capacityRefusal('expansionRatio', Math.ceil(ratio), L.expansionRatio);
  if (d.goals > L.goals) throw capacityRefusal('goals', d.goals, L.goals);
  if (d.sqliteFiles > L.sqliteFiles) throw capacityRefusal('sqliteFiles', d.sqliteFiles, L.sqliteFiles);
  if (d.maxGoalHistory > L.goalCommittedTransactions)
    throw capacityRefusal('goalHistory', d.maxGoalHistory, L.goalCommittedTransactions);
}

/** The destination filled (ENOSPC) or hit its quota (EDQUOT) during a run: what the run created is removed. */
export const outOfSpace = (): Error => freeSpaceRefusal('ran out of space during verification; nothing was published');

/** Too little free space at the destination, found before (the preflight) or during a run. */
const freeSpaceRefusal = (what: string, details?: Record<string, unknown>): LoopxError =>
  rejected(CAPACITY_CODES.freeSpace, `The destination file system ${what}.`, {
    nextAction: 'free space or choose a destination on a larger file system',
    ...(details ? { details } : {}),
  });

/** The destination exists (at the preflight, or made by someone else before this run created it): verification only creates a new one. */
export const destinationExists = (): LoopxError =>
  conflict(DESTINATION_CODES.exists, 'The destination already exists; verification only creates a new workspace.', {
    nextAction: 'choose a destination path that does not exist yet',
  });

/** Free bytes for an unprivileged user; LOOPX_TEST_FREE_BYTES overrides it for tests. */
function freeBytes(dir: string): number {
  const forced = process.env.LOOPX_TEST_FREE_BYTES;
  if (forced !== undefined && /^\d+$/.test(forced)) return Number(forced);
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
}

/** The places a verification must never write into, as the command would use them. */
export interface ProtectedPlaces {
  /** The live runtime root of this invocation (the CLI's --root, LOOPX_HOME or ~/.loopx). */
  readonly liveRoot?: string | undefined;
  /** The user's run authority directory (--authority-dir or its default). */
  readonly authorityDir?: string | undefined;
}

const inside = (path: string, dir: string): boolean =>
  path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);

const isFile = (path: string): boolean => {
  try {
    return lstatSync(path).isFile();
  } catch {
    return false;
  }
};

const looksLikeRoot = (dir: string): boolean => ROOT_MARKERS.some((m) => isFile(join(dir, m)));

/** A direct child of `root`'s reserved recoveries directory: the one place in a root a workspace may be made. */
const reservedIn = (path: string, root: string): boolean => dirname(path) === join(root, LAYOUT.recoveriesDir);

/** Refuse a destination inside a recovery workspace, a runtime root or the run authority (verify's, and a recovery's new root). */
export function refusePlacement(path: string, places: ProtectedPlaces): void {
  const here = physical(path);
  if (recoveryDestinationOf(dirname(here)) !== undefined) {
    throw rejected(
      DESTINATION_CODES.insideRecoveryWorkspace,
      'The destination is inside an existing recovery workspace, which stays as it was verified.',
      {
        nextAction: 'choose a destination outside every recovery workspace, e.g. a new directory beside it',
      },
    );
  }
  const insideRoot = (): never => {
    throw rejected(
      DESTINATION_CODES.insideRuntimeRoot,
      'The destination is inside (or would contain) a runtime root, whose next backup would take the workspace for live state.',
      {
        nextAction: 'choose a destination outside the runtime root, e.g. a new directory beside it',
      },
    );
  };
  if (places.authorityDir !== undefined) {
    const authority = physical(places.authorityDir);
    if (inside(here, authority) || inside(authority, here)) {
      throw rejected(
        DESTINATION_CODES.insideRunAuthority,
        'The destination is inside (or would contain) the run authority directory, which holds only the authority.',
        {
          nextAction: 'choose a destination outside the run authority directory, e.g. in your home directory',
        },
      );
    }
  }
  if (places.liveRoot !== undefined) {
    const root = physical(places.liveRoot);
    if ((inside(here, root) && !reservedIn(here, root)) || inside(root, here)) insideRoot();
  }
  // Any other root on the way (another --root of this user, a copied root): the same hazard.
  for (let dir = dirname(here); ; dir = dirname(dir)) {
    if (looksLikeRoot(dir) && !reservedIn(here, dir)) insideRoot();
    if (dirname(dir) === dir) break;
  }
}

export function preflightDestination(
  destination: string,
  d: DeclaredInventory,
  places: ProtectedPlaces = {},
): DestinationFacts {
  const path = resolve(destination);
  refusePlacement(path, places);
  const parent = dirname(path);
  const badParent = (why: string): never => {
    throw rejected(DESTINATION_CODES.parentInvalid, `The destination's parent ${why}.`, {
      nextAction: 'choose a destination inside an existing directory reached without symbolic links',
    });
  };
  let exists = true;
  try {
    lstatSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    // ENOTDIR: an ancestor is not a directory — the parent checks below name that.
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw e;
    exists = false;
  }
  if (exists) {
    throw destinationExists();
  }
  let st;
  try {
    st = lstatSync(parent);
  } catch {
    return badParent('does not exist');
  }
  if (!st.isDirectory()) badParent('is not a directory');
  let real: string;
  try {
    real = realpathSync(parent);
  } catch {
    return badParent('cannot be resolved');
  }
  if (real !== parent) badParent('is reached through a symbolic link');
  // The parent and every ancestor: owned by this user or root, and not writable by others unless
  // sticky — so no other user can rename a directory on the way to D while verify works in it
  // (the check OpenSSH's StrictModes makes).
  const uid = process.getuid?.() ?? 0;
  for (let dir = parent; ; dir = dirname(dir)) {
    const a = dir === parent ? st : lstatSync(dir);
    const othersWrite = (a.mode & 0o022) !== 0 && (a.mode & 0o1000) === 0;
    if ((a.uid !== uid && a.uid !== 0) || othersWrite) {
      throw rejected(
        DESTINATION_CODES.parentNotPrivate,
        "The destination's parent or one of its ancestors is not private: another user could change it.",
        {
          nextAction: 'choose a destination inside a directory you own that only you can write (e.g. mode 0700)',
        },
      );
    }
    if (dirname(dir) === dir) break;
  }
  const free = freeBytes(parent);
  // §12: regular-file bytes + 16 MiB; plus the one scratch copy the owner worker makes of a database.
  const required = d.regularBytes + d.largestSqliteBytes + RECOVERY_LIMITS.freeSpaceMarginBytes;
  if (free < required) {
    throw freeSpaceRefusal('has too little free space for this backup', {
      limit: 'freeSpace',
      observed: free,
      minimum: required,
    });
  }
  return { path, parent, freeBytes: free, requiredBytes: required };
}
