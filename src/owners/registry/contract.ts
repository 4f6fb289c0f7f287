/**
 * The registry contract: the projects of a runtime root and the route of every Goal alias.
 * It decides routing facts only; Goal identity and lifecycle belong to the goal owner, which
 * mirrors them here through this API.
 *
 * - Document: `loopx_registry_v0` at `registry.json`. A missing file is the empty registry and
 *   its revision is `'absent'`; otherwise the revision is `'sha256:' + hex` of the exact bytes.
 * - Reads decode the bytes of ONE read. `readExact()` hands back those very bytes with the value
 *   decoded from them — the backup producer's witness; it never needs to re-read the live path.
 * - Fail closed: an unknown `schema_version` or any unknown field is `registry_unknown_schema`;
 *   any other invalid content is `registry_malformed`; a path that is not a regular file (a link,
 *   a directory) or exceeds the size bound is `registry_unreadable` — never an absence.
 * - Every mutation is conditional on `expectedRevision` (compare-and-swap). A stale revision is
 *   `registry_revision_conflict` (kind conflict) and nothing is written. A mutation is atomic and
 *   durable (write new, fsync, rename, fsync dir) under the registry's lock; it returns the new read.
 * - Not found: `registry_project_not_found` / `registry_goal_not_found` (kind not_found).
 * - Conflicts: `registry_project_exists`; `registry_goal_exists` (a live row holds the alias);
 *   `registry_goal_instance_mismatch` (the row belongs to another lifetime); `registry_goal_retired`
 *   (a retired row's status is terminal). Invalid input is `registry_input_invalid`.
 * - Routes are frozen: a row's route is `goals/<goal_id>` for every lifetime of the alias. A
 *   retired row may be replaced by a new lifetime (a new `goal_instance_id`); a live one never.
 * - Mutations are not idempotent by themselves: a replay carries a stale revision and conflicts;
 *   callers re-read and decide (the goal owner reconciles its rows that way).
 */
import type { OwnerFinding } from '../contract.js';

export const REGISTRY_SCHEMA = 'loopx_registry_v0';

export type GoalStatus = 'active' | 'paused' | 'retired';

export interface RegistryProject {
  readonly project_id: string;
  readonly name: string;
}

export interface RegistryGoal {
  readonly goal_id: string;
  readonly goal_instance_id: string;
  readonly project_id: string;
  readonly status: GoalStatus;
  /** Relative, frozen: `goals/<goal_id>`. */
  readonly route: string;
}

export interface RegistryDocument {
  readonly schema_version: typeof REGISTRY_SCHEMA;
  readonly projects: readonly RegistryProject[];
  readonly goals: readonly RegistryGoal[];
}

/** The witness form of a read: the exact bytes and the value decoded from them, or a confirmed absence. */
export type RegistryExactRead =
  | { readonly absent: true; readonly revision: 'absent'; readonly value: RegistryDocument; readonly bytes: null }
  | { readonly absent: false; readonly revision: string; readonly value: RegistryDocument; readonly bytes: Uint8Array };

export interface RegistryRead {
  readonly value: RegistryDocument;
  readonly revision: string;
  /** null when the file is absent. */
  readonly bytes: Uint8Array | null;
}

export interface RegisterGoalInput {
  readonly goal_id: string;
  readonly goal_instance_id: string;
  readonly project_id: string;
  readonly status: GoalStatus;
}

export interface GoalStatusUpdate {
  readonly goal_id: string;
  readonly goal_instance_id: string;
  readonly status: GoalStatus;
}

export interface Registry {
  read(): RegistryRead;
  readExact(): RegistryExactRead;
  addProject(project: RegistryProject, expectedRevision: string): RegistryRead;
  registerGoal(goal: RegisterGoalInput, expectedRevision: string): RegistryRead;
  updateGoalStatus(update: GoalStatusUpdate, expectedRevision: string): RegistryRead;
}

export type RegistryFindingCode = 'registry_unknown_schema' | 'registry_malformed' | 'registry_unreadable';

/** Subjects are relative member names. */
export type RegistryFinding = OwnerFinding<RegistryFindingCode>;

/** Readback of a copied root: no locks, no writes, no authority. */
export type RegistryHistoricalRead =
  | { readonly ok: true; readonly read: RegistryExactRead; readonly findings: readonly [] }
  | { readonly ok: false; readonly findings: readonly RegistryFinding[] };
