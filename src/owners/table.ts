/**
 * The OWNERS table: every owner of a runtime root with its recovery contract, in dependency order
 * (an owner's state may refer only to owners before it). Backup discovery, the verifier's worker,
 * the audit, workspace reads and the UI's owner list iterate it; nothing outside `src/owners/`
 * switches on an owner's kind or names its files. Adding an owner is its folder and one row here
 * (and its rows of ADOPTION and HISTORICAL_PREVIEW in adoption.ts, which the type checker asks for):
 * every lookup the coordinators use is derived from the rows by `ownerTable`.
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

/** A store in a root that no owner decides (see UNOWNED_STORES). */
export interface UnownedStore {
  readonly name: string;
  readonly decides: string;
  readonly member: OwnedMember;
  readonly verificationProfile: string;
}

/**
 * Stores in a root that no owner here decides: the run kernel's `engine.db` (the engine reads it;
 * the verifier checks its SQLite integrity only and keeps it as history).
 */
export const UNOWNED_STORES: readonly UnownedStore[] = [
  {
    name: 'engine',
    decides: "the run kernel's runs, messages and event log (kept as history; runs move by snapshot)",
    member: { path: LAYOUT.engineDb, kind: 'sqlite' },
    verificationProfile: 'sqlite.integrity_check',
  },
];

/** The public description of an owner or unowned store (the daemon's `GET /api/owners`, the UI's owner legend). */
export interface OwnerDescription {
  name: string;
  decides: string;
  scope: 'machine' | 'goal';
  required_for_goal: boolean;
  classification: string;
}

/** What the coordinators read of a table of owners, derived from its rows alone. */
export interface OwnerTable {
  /** The rows in dependency order. */
  readonly list: readonly OwnerRecovery[];
  /** The owner (or unowned store) whose member `rel` (root-relative, POSIX) is, with its scope. */
  ownerOfMember(
    rel: string,
  ): { readonly owner: OwnerRecovery | null; readonly store: string; readonly scope: OwnerScope } | null;
  /** Owners whose state is documents rather than one database (read once the whole copy is in place). */
  readonly documentOwners: readonly OwnerRecovery[];
  /** Root-relative names of the databases the owners (and unowned stores) keep at the root's top. */
  readonly rootDatabases: readonly string[];
  descriptions(): OwnerDescription[];
}

const posix = (p: string): string => p.split('\\').join('/');

/** The Goal a root-relative path lies under (`goals/<goal_id>/…`), if any. */
export function goalOfPath(rel: string): string | null {
  const parts = posix(rel).split('/');
  return parts.length >= 2 && parts[0] === LAYOUT.goalsDir && GOAL_ID.test(parts[1]!) ? parts[1]! : null;
}

/**
 * The lookups of a table of owners, in the rows' order (the OWNERS table's below; a test builds
 * one with a row of its own the same way — adding an owner is one row, nothing else to derive).
 */
export function ownerTable(
  rows: Readonly<Record<string, OwnerRecovery>>,
  unowned: readonly UnownedStore[] = UNOWNED_STORES,
): OwnerTable {
  const list: readonly OwnerRecovery[] = Object.values(rows);
  const machineDatabases = list
    .filter((o) => o.scope === 'machine')
    .flatMap((o) =>
      o
        .members(MACHINE)
        .filter((m) => m.kind === 'sqlite')
        .map((m) => posix(m.path)),
    );
  return {
    list,
    ownerOfMember(rel) {
      const goalId = goalOfPath(rel);
      for (const o of list) {
        const scope = o.scope === 'goal' ? (goalId === null ? null : goalScope(goalId)) : MACHINE;
        if (scope !== null && o.members(scope).some((m) => posix(m.path) === rel))
          return { owner: o, store: o.name, scope };
      }
      for (const s of unowned) if (posix(s.member.path) === rel) return { owner: null, store: s.name, scope: MACHINE };
      return null;
    },
    documentOwners: list.filter((o) => o.scope === 'machine' && o.members(MACHINE).some((m) => m.kind !== 'sqlite')),
    rootDatabases: [...machineDatabases, ...unowned.map((s) => posix(s.member.path))],
    descriptions: () => [
      ...list.map((o) => ({
        name: o.name,
        decides: o.decides,
        scope: o.scope,
        required_for_goal: o.requiredForGoal,
        classification: o.classification,
      })),
      ...unowned.map((s) => ({
        name: s.name,
        decides: s.decides,
        scope: 'machine' as const,
        required_for_goal: false,
        classification: 'historical_only',
      })),
    ],
  };
}

const TABLE = ownerTable(OWNERS);

export const OWNER_LIST: readonly OwnerRecovery[] = TABLE.list;

/** The owner whose captured cursor is a Goal's recovery point (the row that says `recoveryPoint`). */
export const RECOVERY_POINT_OWNER: string = OWNER_LIST.find((o) => o.recoveryPoint === true)!.name;

/** The public description of every owner and unowned store (the daemon's `GET /api/owners`, the UI's owner legend). */
export const ownerDescriptions = (): OwnerDescription[] => TABLE.descriptions();

/** The owner (or unowned store) whose member `rel` (root-relative, POSIX) is, with its scope. */
export const ownerOfMember = (rel: string): ReturnType<OwnerTable['ownerOfMember']> => TABLE.ownerOfMember(rel);

/** Owners whose state is documents rather than one database (read once the whole copy is in place). */
export const DOCUMENT_OWNERS: readonly OwnerRecovery[] = TABLE.documentOwners;

/** Root-relative names of the databases the owners (and unowned stores) keep at the root's top. */
export const ROOT_DATABASES: readonly string[] = TABLE.rootDatabases;
