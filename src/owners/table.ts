/**
 * The OWNERS table: every owner of a runtime root with its recovery contract, in dependency order
 * (an owner's state may refer only to owners before it). Backup discovery, the verifier's worker,
 * the audit, workspace reads and the UI's owner list iterate it; nothing outside `src/owners/`
 * switches on an owner's kind or names its files. Adding an owner is its folder and one row here.
 */
import type { OwnedMember, OwnerRecovery, OwnerScope } from './contract.js';
import { MACHINE, goalScope } from './contract.js';
import { GOAL_ID, LAYOUT } from './layout.js';
import { recovery as registry } from './registry/index.js';
import { recovery as config } from './config/index.js';
import { recovery as goal } from './goal/index.js';
import { recovery as work } from './work/index.js';
import { recovery as session } from './session/index.js';
import { recovery as effect } from './effect/index.js';
import { recovery as quota } from './quota/index.js';
import { recovery as scheduler } from './scheduler/index.js';

export const OWNERS = { registry, config, goal, work, session, effect, quota, scheduler } as const;
export type OwnerName = keyof typeof OWNERS;
export const OWNER_LIST: readonly OwnerRecovery[] = Object.values(OWNERS);

/**
 * Stores in a root that no owner here decides: the run kernel's `engine.db` (the engine reads it;
 * the verifier checks its SQLite integrity only and keeps it as history).
 */
export const UNOWNED_STORES: readonly { readonly name: string; readonly decides: string; readonly member: OwnedMember; readonly verificationProfile: string }[] = [
  {
    name: 'engine',
    decides: "the run kernel's runs, messages and event log (kept as history; runs move by snapshot)",
    member: { path: LAYOUT.engineDb, kind: 'sqlite' },
    verificationProfile: 'sqlite.integrity_check',
  },
];

/** The public description of every owner and unowned store (the daemon's `GET /api/owners`, the UI's owner legend). */
export function ownerDescriptions(): { name: string; decides: string; scope: 'machine' | 'goal'; required_for_goal: boolean; classification: string }[] {
  return [
    ...OWNER_LIST.map((o) => ({ name: o.name, decides: o.decides, scope: o.scope, required_for_goal: o.requiredForGoal, classification: o.classification })),
    ...UNOWNED_STORES.map((s) => ({ name: s.name, decides: s.decides, scope: 'machine' as const, required_for_goal: false, classification: 'historical_only' })),
  ];
}

const posix = (p: string): string => p.split('\\').join('/');

/** The Goal a root-relative path lies under (`goals/<goal_id>/…`), if any. */
export function goalOfPath(rel: string): string | null {
  const parts = posix(rel).split('/');
  return parts.length >= 2 && parts[0] === LAYOUT.goalsDir && GOAL_ID.test(parts[1]!) ? parts[1]! : null;
}

/** The owner (or unowned store) whose member `rel` (root-relative, POSIX) is, with its scope. */
export function ownerOfMember(rel: string): { readonly owner: OwnerRecovery | null; readonly store: string; readonly scope: OwnerScope } | null {
  const goalId = goalOfPath(rel);
  for (const o of OWNER_LIST) {
    const scope = o.scope === 'goal' ? (goalId === null ? null : goalScope(goalId)) : MACHINE;
    if (scope !== null && o.members(scope).some((m) => posix(m.path) === rel)) return { owner: o, store: o.name, scope };
  }
  for (const s of UNOWNED_STORES) if (posix(s.member.path) === rel) return { owner: null, store: s.name, scope: MACHINE };
  return null;
}

/** Owners whose state is documents rather than one database (read once the whole copy is in place). */
export const DOCUMENT_OWNERS: readonly OwnerRecovery[] = OWNER_LIST.filter((o) => o.scope === 'machine' && o.members(MACHINE).some((m) => m.kind !== 'sqlite'));

/** Root-relative names of the databases the owners (and unowned stores) keep at the root's top. */
export const ROOT_DATABASES: readonly string[] = [
  ...OWNER_LIST.filter((o) => o.scope === 'machine').flatMap((o) =>
    o
      .members(MACHINE)
      .filter((m) => m.kind === 'sqlite')
      .map((m) => posix(m.path)),
  ),
  ...UNOWNED_STORES.map((s) => posix(s.member.path)),
];
