/**
 * The exports of a recovery workspace's components that were captured from a database service
 * (the manifest's `provider`): their state is the export alone, with no member in the workspace's
 * root copy. Owners read such a component from its records (`CopiedRoot.exports`) — the workspace
 * views and an adoption alike (an adoption from its staging, adopt-staging.ts, where the manifest
 * and the exports are copies checked against the audit's digests). Read from the manifest the
 * verification bound; each export is bounded by the verifier's own limit, and one that cannot be
 * read as JSON lines is given as no records (its owner then reports the component unreadable).
 */
import { join } from 'node:path';
import { readRegularFileOnce } from '../core/index.js';
import type { CopiedRoot } from '../owners/index.js';

/** Most bytes of one export read back (the verifier's own bound). */
const EXPORT_MAX_BYTES = 128 * 1024 * 1024;

/** A workspace file's text, or undefined when it is not a readable regular file within `limit`. */
function textOf(path: string, limit: number): string | undefined {
  const bytes = readRegularFileOnce(path, limit);
  return bytes === null ? undefined : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

/** JSON lines of a workspace file, or undefined when it cannot be read as such (the owner then reports the component unreadable). */
function jsonLines(path: string, limit: number): unknown[] | undefined {
  try {
    return textOf(path, limit)
      ?.split('\n')
      .filter((l) => l.length > 0)
      .map((l) => JSON.parse(l) as unknown);
  } catch {
    return undefined;
  }
}

/** The workspace's manifest (the archive's embedded copy, which the verification bound), or undefined. */
function manifestOf(workspace: string): { components?: unknown } | undefined {
  try {
    const text = textOf(join(workspace, 'manifest.json'), EXPORT_MAX_BYTES);
    return text === undefined ? undefined : (JSON.parse(text) as { components?: unknown });
  } catch {
    return undefined;
  }
}

/** The exports of the workspace's components captured from a database service, by owner and Goal (none for a root on SQLite). */
export function servedExports(workspace: string): CopiedRoot['exports'] {
  const manifest = manifestOf(workspace);
  const byKey = new Map<string, string>();
  for (const c of Array.isArray(manifest?.components) ? (manifest.components as Record<string, unknown>[]) : []) {
    if (typeof c.provider === 'string' && c.state === 'captured' && typeof c.export_member === 'string')
      byKey.set(`${String(c.owner_kind)}\0${String(c.goal_id)}`, c.export_member);
  }
  if (byKey.size === 0) return undefined;
  return (owner, scope) => {
    const member = byKey.get(`${owner}\0${String(scope.goal_id)}`);
    return member === undefined ? undefined : (jsonLines(join(workspace, member), EXPORT_MAX_BYTES) ?? []);
  };
}
