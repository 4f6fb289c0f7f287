/**
 * Archive paths: the root's members live under `runtime-root/`; the configuration checkpoint and
 * the embedded manifest sit beside it. Paths are POSIX, relative, normalized (no `.`/`..`/empty
 * components, no trailing slash); the tar header of a directory adds the trailing `/`.
 */
import { BACKUP_LIMITS, type BackupLimitName } from './limits.js';

export const ARCHIVE_ROOT = 'runtime-root';
export const ARCHIVE_CONFIGURATION_BACKUP = 'configuration-backup.json';
export const ARCHIVE_MANIFEST = 'manifest.json';

/** A root-relative path with POSIX separators (what manifests and archives name). */
export const posixPath = (p: string): string => p.split('\\').join('/');

/** `runtime-root` for the root itself, else `runtime-root/<relative>`. */
export const archivePathOf = (relative: string): string =>
  relative === '' ? ARCHIVE_ROOT : `${ARCHIVE_ROOT}/${relative}`;

/**
 * A path as a case-insensitive, normalizing file system compares it (NFC; ſ/s, ς/σ, K/k fold
 * together) — the comparison both the producer's sidecar exclusion and the verifier's member
 * checker use.
 */
export const foldPath = (p: string): string => p.normalize('NFC').toUpperCase().toLowerCase();

/** The names SQLite gives the sidecars of a database `<db>`: `<db>-wal`, `<db>-shm`, `<db>-journal`. */
export const SQLITE_SIDECAR_SUFFIXES = ['-wal', '-shm', '-journal'] as const;

/**
 * The folded path of the file that `folded` (a folded path) would be a SQLite sidecar of, when
 * its last component ends like one. Any file can be opened as a database and SQLite then reads
 * these names beside it (a WAL may even supply page 1), so the base's extension does not matter.
 */
export function sqliteSidecarBase(folded: string): string | undefined {
  for (const suffix of SQLITE_SIDECAR_SUFFIXES) {
    if (!folded.endsWith(suffix)) continue;
    const base = folded.slice(0, -suffix.length);
    return base === '' || base.endsWith('/') ? undefined : base;
  }
  return undefined;
}

/** The §12 path limit an archive path breaks, if any. */
export function pathLimitBroken(archivePath: string): { limit: BackupLimitName; observed: number } | undefined {
  const parts = archivePath.split('/');
  if (parts.length > BACKUP_LIMITS.pathComponents) return { limit: 'pathComponents', observed: parts.length };
  const chars = [...archivePath].length;
  if (chars > BACKUP_LIMITS.pathChars) return { limit: 'pathChars', observed: chars };
  for (const p of parts) {
    const bytes = Buffer.byteLength(p, 'utf8');
    if (bytes > BACKUP_LIMITS.pathComponentBytes) return { limit: 'pathComponentBytes', observed: bytes };
  }
  return undefined;
}

/**
 * Normalize a registry route to a path relative to the root, or `undefined` when it leaves the
 * root. Absolute routes inside the root are made relative; nothing absolute is ever kept.
 */
export function normalizeRoute(root: string, route: string): string | undefined {
  let rel: string;
  if (route.startsWith('/')) {
    const prefix = root.endsWith('/') ? root : `${root}/`;
    if (route === root) return '';
    if (!route.startsWith(prefix)) return undefined;
    rel = route.slice(prefix.length);
  } else {
    rel = route;
  }
  const out: string[] = [];
  for (const part of rel.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length === 0) return undefined;
      out.pop();
      continue;
    }
    if (part.includes('\0')) return undefined;
    out.push(part);
  }
  return out.join('/');
}
