/**
 * Archive paths: the root's members live under `runtime-root/`; the configuration checkpoint and
 * the embedded manifest sit beside it. Paths are POSIX, relative, normalized (no `.`/`..`/empty
 * components, no trailing slash); the tar header of a directory adds the trailing `/`.
 */
import { BACKUP_LIMITS, type BackupLimitName } from './limits.js';

export const ARCHIVE_ROOT = 'runtime-root';
export const ARCHIVE_CONFIGURATION_BACKUP = 'configuration-backup.json';
export const ARCHIVE_MANIFEST = 'manifest.json';

/** `runtime-root` for the root itself, else `runtime-root/<relative>`. */
export const archivePathOf = (relative: string): string => (relative === '' ? ARCHIVE_ROOT : `${ARCHIVE_ROOT}/${relative}`);

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
