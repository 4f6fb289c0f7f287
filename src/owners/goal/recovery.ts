/**
 * The goal owner's recovery contract: every `goals/<goal_id>/goal.json` of a copy and the
 * documents it records, checked against their digests. It reads the whole goals/ directory (the
 * Goals of a copy are what it finds there); a Goal scope narrows the result to that Goal.
 */
import type { HistoricalRead, OwnerRecovery, OwnerScope } from '../contract.js';
import { MACHINE, hasErrors } from '../contract.js';
import { OWNER_EXPORT_MAX_ITEMS, byKey, exportFindings } from '../export.js';
import { captureFiles } from '../file-recovery.js';
import { LAYOUT } from '../layout.js';
import { GOAL_SCHEMA, type GoalHistoricalRead } from './contract.js';
import { readHistoricalCopy } from './historical.js';
import { isGoalId } from './codec.js';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Hex } from '../../core/index.js';
import { canonicalJson } from '../../core/index.js';

const EXPORT_SCHEMA = 'loopx_goal_export_v0';

/** The Goal ids a live root's goals/ directory holds (entries that are not Goal ids belong to no Goal). */
function goalIdsIn(root: string): string[] {
  try {
    return readdirSync(join(root, LAYOUT.goalsDir)).filter(isGoalId).sort();
  } catch {
    return [];
  }
}
/** The Goal a goal-owner finding's subject names (`goals/<id>/…`; any directory name, valid id or not). */
export const goalOfSubject = (subject: string): string | undefined => /^goals\/([^/]+)/.exec(subject)?.[1];

function readHistorical(root: string, scope: OwnerScope): HistoricalRead<GoalHistoricalRead> {
  const all = readHistoricalCopy(root);
  const g =
    scope.goal_id === null
      ? all
      : (() => {
          const goals = all.goals.filter((x) => x.goal_id === scope.goal_id);
          const findings = all.findings.filter((f) => goalOfSubject(f.subject) === scope.goal_id);
          return { ok: findings.length === 0 && goals.length === 1, goals, findings };
        })();
  return {
    owner: 'goal',
    scope,
    readable: g.goals.length > 0 || (scope.goal_id === null && g.ok),
    ok: g.ok,
    schema_version: g.goals.length > 0 ? GOAL_SCHEMA : null,
    source_identity: scope.goal_id !== null ? (g.goals[0]?.goal_instance_id ?? null) : null,
    revision: `sha256:${sha256Hex(canonicalJson(g.goals))}`,
    cursor: null,
    counts: { goals: g.goals.length, docs: g.goals.reduce((n, x) => n + x.docs.length, 0) },
    value: g,
    findings: g.findings,
    execution_authority_granted: false,
  };
}

export const recovery: OwnerRecovery<GoalHistoricalRead> = {
  name: 'goal',
  decides: 'Goal identity — its alias and its lifetime — lifecycle and documents',
  scope: 'machine',
  members: (scope) => [
    { path: scope.goal_id === null ? LAYOUT.goalsDir : LAYOUT.goalDir(scope.goal_id), kind: 'directory' },
  ],
  requiredForGoal: true,
  boundary: 'goal',
  dependsOn: ['registry', 'config'],
  observe: async (live, scope) => ({
    revision: readHistorical(live.root, scope).revision!,
    cursor: null,
    at: new Date().toISOString(),
  }),
  classification: 'recovered_readable',
  verificationProfile: 'goal.readHistorical+work.readHistorical/v0',
  capture: async (live, scope, into) => {
    const ids = scope.goal_id === null ? goalIdsIn(live.root) : [scope.goal_id];
    const members = ids.flatMap((id) => [LAYOUT.goalFile(id), LAYOUT.goalDocsDir(id)]);
    return captureFiles(
      {
        owner: 'goal',
        exportSchema: EXPORT_SCHEMA,
        members,
        liveRevision: (l) => readHistorical(l.root, scope).revision!,
        readHistorical,
        items: (v) => byKey(v.goals, (x) => x.goal_id).map((value) => ({ kind: 'goal', value })),
      },
      live,
      scope,
      into,
    );
  },
  verifyOffline(copy, scope = MACHINE, options = {}) {
    const h = readHistorical(copy.root, scope);
    const goals = h.value.goals.map((x) => ({
      goal_id: x.goal_id,
      goal_instance_id: x.goal_instance_id,
      lifecycle: x.lifecycle,
      docs: x.docs.length,
    }));
    const findings = [
      ...h.findings,
      ...(options.export === undefined
        ? []
        : exportFindings(
            options.export,
            { schema: EXPORT_SCHEMA, owner: 'goal', scope, maxItems: OWNER_EXPORT_MAX_ITEMS },
            h.revision,
          )),
    ];
    const ok = h.ok && !hasErrors(findings);
    return {
      owner: 'goal',
      scope,
      members: [],
      ok,
      readback: { ok, counts: h.counts },
      source_identity: h.source_identity,
      revision: h.revision,
      cursor: null,
      facts: { goals },
      findings,
    };
  },
  readHistorical: (copy, scope) => readHistorical(copy.root, scope),
};
