/**
 * Capture for the owners whose state is small documents in the root (registry, config, goal):
 * the members are copied byte for byte into the capture directory (regular files and directories
 * only — a link is never followed and never copied), the copy is read back through the owner's
 * historical reader and exported. Start and end are the live owner's revisions observed before and
 * after the copy; the export names the copy's.
 */
import { copyFileSync, constants, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { HistoricalRead, LiveSource, OwnerCapture, OwnerScope } from './contract.js';
import { buildExport, OWNER_EXPORT_MAX_ITEMS } from './export.js';

/** Copies `rel` (a file or a directory tree) from `from` to `into`; absent members are skipped. Returns the files copied. */
export function copyMembers(from: string, into: string, rel: string): string[] {
  let st;
  try {
    st = lstatSync(join(from, rel));
  } catch {
    return [];
  }
  if (st.isFile()) {
    mkdirSync(dirname(join(into, rel)), { recursive: true, mode: 0o700 });
    copyFileSync(join(from, rel), join(into, rel), constants.COPYFILE_EXCL);
    return [rel];
  }
  if (!st.isDirectory()) return [];
  mkdirSync(join(into, rel), { recursive: true, mode: 0o700 });
  return readdirSync(join(from, rel))
    .sort()
    .flatMap((name) => copyMembers(from, into, join(rel, name)));
}

export interface FileCaptureSpec<T> {
  readonly owner: string;
  readonly exportSchema: string;
  /** Root-relative members to copy for the scope. */
  readonly members: readonly string[];
  /** The live owner's revision now. */
  liveRevision(live: LiveSource): string;
  readHistorical(root: string, scope: OwnerScope): HistoricalRead<T>;
  items(value: T): readonly unknown[];
}

export function captureFiles<T>(
  spec: FileCaptureSpec<T>,
  live: LiveSource,
  scope: OwnerScope,
  into: string,
): OwnerCapture {
  const startAt = new Date().toISOString();
  const startRev = spec.liveRevision(live);
  const members = spec.members.flatMap((m) => copyMembers(live.root, into, m));
  const endRev = spec.liveRevision(live);
  const endAt = new Date().toISOString();
  const h = spec.readHistorical(into, scope);
  const items = spec.items(h.value);
  const captured = { revision: h.revision ?? 'absent', cursor: items.length };
  const built = buildExport(
    {
      schema_version: spec.exportSchema,
      owner: spec.owner,
      goal_id: scope.goal_id,
      source_identity: h.source_identity,
      ...captured,
      captured_at_start: startAt,
      captured_at_end: endAt,
    },
    items,
    OWNER_EXPORT_MAX_ITEMS,
  );
  return {
    owner: spec.owner,
    scope,
    export_schema: spec.exportSchema,
    source_identity: h.source_identity,
    start: { revision: startRev, cursor: null, at: startAt },
    end: { revision: endRev, cursor: null, at: endAt },
    captured,
    members,
    export_items: 'in_export',
    export: built.records,
    export_lines: built.lines,
    export_sha256: built.sha256,
    record_count: built.record_count,
  };
}
