/**
 * An audit with what differs between two verifications of the same archive taken out: the
 * per-audit keyed labels (component ids and Goal scopes, keyed with a random key that is never
 * stored) become names derived from the private audit itself, and the content address and the
 * durations are dropped. Two verifications of one archive are then equal byte for byte.
 */
import type { RecoveryAudit } from '../../../src/recovery/index.js';

export function normalizeAudit(audit: RecoveryAudit): unknown {
  const ids = new Map<string, string>();
  const scopes = new Map<string, string>();
  for (const c of audit.components) {
    const rb = c.readback as { goal_id?: string };
    if (c.component_id.startsWith('database-')) ids.set(c.component_id, `database:${c.archive_members[0]}`);
    if (c.component_id.startsWith('goal-') && rb.goal_id !== undefined) {
      ids.set(c.component_id, `goal:${rb.goal_id}`);
      scopes.set(c.logical_scope, `goal:${rb.goal_id}`);
    }
  }
  const id = (x: string | null): string | null => (x === null ? null : (ids.get(x) ?? x));
  const { recovery_id: _id, measurements, ...rest } = audit;
  return {
    ...rest,
    measurements: { ...measurements, durations_ms: null },
    components: audit.components.map((c) => ({
      ...c,
      component_id: id(c.component_id),
      logical_scope: scopes.get(c.logical_scope) ?? c.logical_scope,
      dependency_ids: c.dependency_ids.map(id),
      readback:
        'work_database' in c.readback
          ? { ...c.readback, work_database: id(c.readback.work_database as string | null) }
          : c.readback,
    })),
    findings: audit.findings.map((f) => ({ ...f, component: id(f.component) })),
  };
}
