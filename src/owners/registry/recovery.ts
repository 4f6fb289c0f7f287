/** The registry's recovery contract: `registry.json` — projects and Goal routes — read from a copy. */
import type { HistoricalRead, OwnerRecovery, OwnerScope } from '../contract.js';
import { MACHINE, hasErrors } from '../contract.js';
import { OWNER_EXPORT_MAX_ITEMS, byKey, exportFindings } from '../export.js';
import { captureFiles } from '../file-recovery.js';
import { LAYOUT } from '../layout.js';
import { REGISTRY_SCHEMA, type RegistryHistoricalRead } from './contract.js';
import { openFileRegistry } from './file.js';
import { readHistoricalCopy } from './historical.js';

const EXPORT_SCHEMA = 'loopx_registry_export_v0';

function readHistorical(root: string, scope: OwnerScope): HistoricalRead<RegistryHistoricalRead> {
  const r = readHistoricalCopy(root);
  return {
    owner: 'registry',
    scope,
    readable: r.ok,
    ok: r.ok,
    schema_version: r.ok ? REGISTRY_SCHEMA : null,
    source_identity: null,
    revision: r.ok ? r.read.revision : null,
    cursor: null,
    counts: r.ok ? { goals: r.read.value.goals.length, projects: r.read.value.projects.length } : {},
    value: r,
    findings: r.findings,
    execution_authority_granted: false,
  };
}

export const recovery: OwnerRecovery<RegistryHistoricalRead> = {
  name: 'registry',
  decides: 'projects and Goal routes of a root',
  scope: 'machine',
  members: () => [{ path: LAYOUT.registry, kind: 'file' }],
  requiredForGoal: true,
  dependsOn: [],
  classification: 'recovered_readable',
  verificationProfile: 'registry.readHistorical/v0',
  observe: async (live) => ({
    revision: openFileRegistry(live.root).readExact().revision,
    cursor: null,
    at: new Date().toISOString(),
  }),
  capture: async (live, scope, into) =>
    captureFiles(
      {
        owner: 'registry',
        exportSchema: EXPORT_SCHEMA,
        members: [LAYOUT.registry],
        liveRevision: (l) => openFileRegistry(l.root).readExact().revision,
        readHistorical,
        items: (v) =>
          v.ok
            ? [
                ...byKey(v.read.value.projects, (p) => p.project_id).map((value) => ({ kind: 'project', value })),
                ...byKey(v.read.value.goals, (g) => g.goal_id).map((value) => ({ kind: 'goal', value })),
              ]
            : [],
      },
      live,
      scope,
      into,
    ),
  verifyOffline(copy, scope = MACHINE, options = {}) {
    const h = readHistorical(copy.root, scope);
    const findings = [
      ...h.findings,
      ...(options.export === undefined
        ? []
        : exportFindings(
            options.export,
            { schema: EXPORT_SCHEMA, owner: 'registry', scope, maxItems: OWNER_EXPORT_MAX_ITEMS },
            h.revision,
          )),
    ];
    const ok = h.ok && !hasErrors(findings);
    const goals = h.value.ok
      ? h.value.read.value.goals.map((g) => ({
          goal_id: g.goal_id,
          goal_instance_id: g.goal_instance_id,
          status: g.status,
          route: g.route,
        }))
      : [];
    return {
      owner: 'registry',
      scope,
      members: [],
      ok,
      readback: { ok, counts: h.counts },
      source_identity: null,
      revision: h.revision,
      cursor: null,
      facts: { revision: h.revision, goals },
      findings,
    };
  },
  readHistorical: (copy, scope) => readHistorical(copy.root, scope),
};
