/**
 * What a `loopx_state_backup_v1` manifest tells verification before the audit: which owner export
 * goes with each extracted database (so the worker verifies a database and its export in one read),
 * and which document components the worker verifies once the whole copy is in place. A v0 manifest
 * has no components: both are empty, and verification is exactly the v0 one.
 */
import {
  BACKUP_SCHEMA_V1,
  type BackupManifest,
  type ManifestComponent,
  type RecoverySetCapture,
} from '../backup/index.js';
import type { ExportItems } from '../owners/index.js';
import type { CrashRecoveryRef, DocumentComponentRef } from './owner-verify.js';

/**
 * Whether every observed file of a crash-consistent component is archived as one of its own members
 * (no journal was observed beside its database): those members are the observed bytes, so their
 * owner verification is the crash recovery — there is nothing to replay.
 */
export function observedAsMembers(set: Partial<RecoverySetCapture>, c: ManifestComponent): boolean {
  const paths = set.failure_observation?.component_files[c.component_id];
  if (paths === undefined) return false;
  const memberOf = new Map(set.failure_observation!.files.map((f) => [f.path, f.archive_member]));
  return paths.every((p) => memberOf.has(p) && c.archive_members.includes(memberOf.get(p)!));
}

/** A crash-consistent set's components with the observed files each was captured from (those whose observed bytes are not their members). */
export function crashRefs(m: BackupManifest): CrashRecoveryRef[] {
  const set = m.capture as Partial<RecoverySetCapture>;
  const obs = isV1(m) ? set.failure_observation : null;
  if (!obs) return [];
  const memberOf = new Map(obs.files.map((f) => [f.path, f.archive_member]));
  const seen = new Set<string>();
  return componentsOf(m).flatMap((c) => {
    const paths = obs.component_files[c.component_id];
    if (c.state !== 'captured' || paths === undefined || seen.has(c.component_id) || observedAsMembers(set, c))
      return [];
    seen.add(c.component_id);
    return [
      {
        component_id: c.component_id,
        owner: c.owner_kind,
        goal_id: c.goal_id,
        files: paths.flatMap((p) => (memberOf.has(p) ? [{ member: memberOf.get(p)!, path: p }] : [])),
      },
    ];
  });
}

export interface ComponentRoutes {
  /** Archive path of a database → its component and export. */
  readonly sqlite: ReadonlyMap<
    string,
    { readonly component_id: string; readonly export: string; readonly export_items: ExportItems }
  >;
  readonly documents: readonly DocumentComponentRef[];
}

export const isV1 = (m: BackupManifest): boolean => m.schema_version === BACKUP_SCHEMA_V1;

export const componentsOf = (m: BackupManifest): readonly ManifestComponent[] => (isV1(m) ? (m.components ?? []) : []);

export function componentRoutes(m: BackupManifest): ComponentRoutes {
  const databases = new Set(m.execution.sqlite_snapshots.map((s) => s.archive_path));
  const sqlite = new Map<string, { component_id: string; export: string; export_items: ExportItems }>();
  const documents: DocumentComponentRef[] = [];
  const seen = new Set<string>();
  for (const c of componentsOf(m)) {
    // A duplicated id is the audit's finding; the worker verifies each id once.
    if (c.state !== 'captured' || seen.has(c.component_id)) continue;
    seen.add(c.component_id);
    const only = c.archive_members.length === 1 ? c.archive_members[0]! : undefined;
    const items = c.export_items === 'from_copy' ? 'from_copy' : 'in_export';
    if (only !== undefined && databases.has(only) && c.export_member !== null && !sqlite.has(only))
      sqlite.set(only, { component_id: c.component_id, export: c.export_member, export_items: items });
    else
      documents.push({
        component_id: c.component_id,
        owner: c.owner_kind,
        goal_id: c.goal_id,
        export: c.export_member,
        export_items: c.export_member === null ? null : items,
        // Read from the root's database service: its export is its whole state (no member, no connection).
        ...(typeof c.provider === 'string' ? { provider: c.provider } : {}),
      });
  }
  return { sqlite, documents };
}
