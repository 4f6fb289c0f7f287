/**
 * The goal owner's decisions over a storage port: identity minting, lifecycle transitions,
 * documents and binding checks, and keeping the registry's route row in step (through the
 * registry's public API only — this owner never writes registry.json). The file and memory
 * implementations differ only in their GoalStorage.
 */
import { sha256Hex, conflict, hasCode, rejected } from '../../core/index.js';
import { assertGoalId } from '../layout.js';
import { projectNotFound, type Registry } from '../registry/index.js';
import {
  assertDocName,
  assertGoalRef,
  assertTitle,
  decodeGoal,
  encodeGoal,
  GOAL_DOC_MAX_BYTES,
  GOAL_MAX_DOCS,
  isGoalRef,
  lineageOf,
  mintDocId,
  mintGoalInstanceId,
} from './codec.js';
import {
  GOAL_SCHEMA,
  type AdoptLifetimeRequest,
  type BindingMatch,
  type GoalDoc,
  type GoalLifecycle,
  type GoalRecord,
  type GoalRef,
  type GoalStore,
  type GoalSupersededHere,
} from './contract.js';
import { goalNotFound, goalRetired } from './errors.js';

/** Where goal.json and documents live; every call is for an already validated id and name. */
export interface GoalStorage {
  readGoal(goalId: string): Uint8Array | null;
  writeGoal(goalId: string, bytes: Uint8Array): void;
  readDoc(goalId: string, name: string): Uint8Array | null;
  writeDoc(goalId: string, name: string, bytes: Uint8Array): void;
  /** Ids of directories that hold a goal.json. */
  listGoalIds(): string[];
  /** Serialize mutations of one Goal (across processes for files). */
  withGoalLock<T>(goalId: string, fn: () => T): T;
}

export interface GoalStoreOptions {
  readonly registry: Registry;
  readonly now?: () => Date;
}

export const DEFAULT_PROJECT = { project_id: 'default', name: 'Default' } as const;
const REGISTRY_ATTEMPTS = 8;

const instanceMismatch = (goalId: string) =>
  conflict('goal_instance_mismatch', `Goal ${goalId} is now another lifetime.`, {
    nextAction: 'read the Goal again and use its current ref',
  });

const routeConflict = (goalId: string) =>
  conflict('goal_route_conflict', `The registry routes Goal ${goalId} to another live lifetime.`, {
    nextAction: 'inspect the registry and the Goal; restore the one that is wrong from a backup',
  });

/** What every decision of the store reads: its storage, the registry and the clock. */
interface GoalContext {
  readonly storage: GoalStorage;
  readonly registry: Registry;
  readonly now: () => string;
}

function load(c: GoalContext, goalId: string): GoalRecord | undefined {
  const bytes = c.storage.readGoal(goalId);
  return bytes === null ? undefined : decodeGoal(bytes, goalId);
}

function save(c: GoalContext, goal: GoalRecord): GoalRecord {
  c.storage.writeGoal(goal.goal_id, encodeGoal(goal));
  return goal;
}

function mustLoad(c: GoalContext, goalId: string): GoalRecord {
  const goal = load(c, goalId);
  if (!goal) throw goalNotFound(goalId);
  return goal;
}

/** Make the registry row say what goal.json says: this lifetime, this status. */
function syncRoute(c: GoalContext, goal: GoalRecord, projectId?: string): void {
  const { registry } = c;
  for (let attempt = 0; attempt < REGISTRY_ATTEMPTS; attempt++) {
    const { value, revision } = registry.read();
    const row = value.goals.find((g) => g.goal_id === goal.goal_id);
    try {
      if (row?.goal_instance_id === goal.goal_instance_id) {
        if (row.status !== goal.lifecycle) {
          registry.updateGoalStatus(
            { goal_id: goal.goal_id, goal_instance_id: goal.goal_instance_id, status: goal.lifecycle },
            revision,
          );
        }
        return;
      }
      if (row && row.status !== 'retired') throw routeConflict(goal.goal_id);
      const project = projectId ?? row?.project_id ?? DEFAULT_PROJECT.project_id;
      if (project === DEFAULT_PROJECT.project_id && !value.projects.some((p) => p.project_id === project)) {
        registry.addProject(DEFAULT_PROJECT, revision);
        continue;
      }
      registry.registerGoal(
        { goal_id: goal.goal_id, goal_instance_id: goal.goal_instance_id, project_id: project, status: goal.lifecycle },
        revision,
      );
      return;
    } catch (e) {
      if (!hasCode(e, 'registry_revision_conflict')) throw e;
    }
  }
  throw conflict('goal_registry_busy', 'The registry kept changing while the Goal route was written.', {
    nextAction: 'retry the command',
  });
}

function transition(
  c: GoalContext,
  refIn: GoalRef,
  expected: GoalLifecycle,
  target: GoalLifecycle,
  from: readonly GoalLifecycle[],
): GoalRecord {
  const ref = assertGoalRef(refIn);
  if (!from.includes(expected)) {
    throw rejected('goal_transition_invalid', `A Goal cannot become ${target} from ${String(expected)}.`, {
      nextAction: `pass the lifecycle you observed: ${from.join(' or ')}`,
    });
  }
  return c.storage.withGoalLock(ref.goal_id, () => {
    const goal = mustLoad(c, ref.goal_id);
    if (goal.goal_instance_id !== ref.goal_instance_id) throw instanceMismatch(ref.goal_id);
    if (goal.lifecycle === target) {
      syncRoute(c, goal);
      return goal;
    }
    if (goal.lifecycle === 'retired') {
      throw goalRetired(ref.goal_id);
    }
    if (goal.lifecycle !== expected) {
      throw conflict('goal_lifecycle_conflict', `Goal ${ref.goal_id} is ${goal.lifecycle}, not ${expected}.`, {
        nextAction: 'read the Goal again and retry',
      });
    }
    const next = save(c, { ...goal, lifecycle: target, updated_at: c.now() });
    syncRoute(c, next);
    return next;
  });
}

/** A new lifetime of a Goal id, or the completion of a create whose route was not written. */
function createGoal(c: GoalContext, goalIdIn: string, titleIn: string, projectId: string | undefined): GoalRecord {
  const { registry } = c;
  const goalId = assertGoalId(goalIdIn);
  const title = assertTitle(titleIn);
  if (
    projectId !== undefined &&
    projectId !== DEFAULT_PROJECT.project_id &&
    !registry.read().value.projects.some((p) => p.project_id === projectId)
  ) {
    throw projectNotFound(projectId);
  }
  return c.storage.withGoalLock(goalId, () => {
    const existing = load(c, goalId);
    if (existing && existing.lifecycle !== 'retired') {
      const row = registry.read().value.goals.find((g) => g.goal_id === goalId);
      if (row?.goal_instance_id !== existing.goal_instance_id && existing.title === title) {
        // goal.json was written and the route was not: finish that create.
        syncRoute(c, existing, projectId);
        return existing;
      }
      throw conflict('goal_exists', `Goal ${goalId} already exists (${existing.lifecycle}).`, {
        nextAction: 'choose another Goal id, or retire the existing Goal first',
      });
    }
    const live = registry.read().value.goals.find((g) => g.goal_id === goalId && g.status !== 'retired');
    if (live && live.goal_instance_id !== existing?.goal_instance_id) throw routeConflict(goalId);
    if (existing) syncRoute(c, existing); // settle the retired lifetime's row before replacing it
    let instance = mintGoalInstanceId();
    while (instance === existing?.goal_instance_id) instance = mintGoalInstanceId();
    const at = c.now();
    const goal = save(c, {
      schema_version: GOAL_SCHEMA,
      goal_id: goalId,
      goal_instance_id: instance,
      title,
      lifecycle: 'active',
      created_at: at,
      updated_at: at,
      docs: [],
    });
    syncRoute(c, goal, projectId);
    return goal;
  });
}

function addDoc(c: GoalContext, goalIdIn: string, nameIn: string, content: string | Uint8Array): GoalDoc {
  const goalId = assertGoalId(goalIdIn);
  const name = assertDocName(nameIn);
  const bytes = typeof content === 'string' ? new TextEncoder().encode(content) : new Uint8Array(content);
  if (bytes.byteLength > GOAL_DOC_MAX_BYTES) {
    throw rejected('goal_doc_too_large', 'A Goal document is at most 16 MiB.', {
      nextAction: 'split the document or store it elsewhere',
    });
  }
  return c.storage.withGoalLock(goalId, () => {
    const goal = mustLoad(c, goalId);
    if (goal.lifecycle === 'retired') {
      throw goalRetired(goalId);
    }
    const prior = goal.docs.find((d) => d.name === name);
    if (!prior && goal.docs.length >= GOAL_MAX_DOCS) {
      throw rejected('goal_docs_limit', `A Goal holds at most ${GOAL_MAX_DOCS} documents.`, {
        nextAction: 'replace an existing document instead',
      });
    }
    c.storage.writeDoc(goalId, name, bytes);
    const doc = {
      doc_id: prior?.doc_id ?? mintDocId(),
      kind: 'goal_doc',
      name,
      sha256: sha256Hex(bytes),
      bytes: bytes.byteLength,
    } as const;
    const docs = [...goal.docs.filter((d) => d.name !== name), doc].sort((a, b) => (a.name < b.name ? -1 : 1));
    save(c, { ...goal, docs, updated_at: c.now() });
    return doc;
  });
}

/** A document's bytes, checked against the digest goal.json records. */
function readDoc(c: GoalContext, goalIdIn: string, nameIn: string): Uint8Array | undefined {
  const goalId = assertGoalId(goalIdIn);
  const name = assertDocName(nameIn);
  const doc = mustLoad(c, goalId).docs.find((d) => d.name === name);
  if (!doc) return undefined;
  const bytes = c.storage.readDoc(goalId, name);
  if (bytes === null) {
    throw rejected('goal_doc_missing', `Document ${name} of Goal ${goalId} is recorded but missing.`, {
      nextAction: 'add the document again',
    });
  }
  if (bytes.byteLength !== doc.bytes || sha256Hex(bytes) !== doc.sha256) {
    throw rejected('goal_doc_digest_mismatch', `Document ${name} of Goal ${goalId} differs from its recorded digest.`, {
      nextAction: 'add the document again',
    });
  }
  return bytes;
}

/** A recovery's new lifetime (see GoalStore.adoptLifetime): documents first, then goal.json, then the route. */
function adoptLifetime(c: GoalContext, r: AdoptLifetimeRequest): { goal: GoalRecord; replayed: boolean } {
  const goalId = assertGoalId(r.goal_id);
  const title = assertTitle(r.title);
  const from = lineageOf(r.supersedes);
  return c.storage.withGoalLock(goalId, () => {
    const existing = load(c, goalId);
    if (existing) {
      if (
        existing.lineage?.supersedes?.recovery_id === r.recovery_id &&
        existing.lineage.supersedes.goal_instance_id === r.supersedes.goal_instance_id
      ) {
        syncRoute(c, existing);
        return { goal: existing, replayed: true };
      }
      throw conflict(
        'goal_adoption_conflict',
        `Goal ${goalId} already exists here as another lifetime than this recovery's.`,
        {
          nextAction: 'recover into a new, empty destination',
        },
      );
    }
    const docs = r.docs.map((d) => {
      const name = assertDocName(d.name);
      c.storage.writeDoc(goalId, name, d.bytes);
      return {
        doc_id: mintDocId(),
        kind: 'goal_doc',
        name,
        sha256: sha256Hex(d.bytes),
        bytes: d.bytes.byteLength,
      } as const;
    });
    let instance = mintGoalInstanceId();
    while (instance === r.supersedes.goal_instance_id || instance === from.lineage_id) instance = mintGoalInstanceId();
    const at = c.now();
    const goal = save(c, {
      schema_version: GOAL_SCHEMA,
      goal_id: goalId,
      goal_instance_id: instance,
      title,
      lifecycle: r.lifecycle === 'retired' ? 'paused' : r.lifecycle,
      created_at: at,
      updated_at: at,
      docs: docs.sort((a, b) => (a.name < b.name ? -1 : 1)),
      lineage: {
        lineage_id: from.lineage_id,
        generation: from.generation + 1,
        supersedes: { goal_instance_id: r.supersedes.goal_instance_id, recovery_id: r.recovery_id },
      },
    });
    syncRoute(c, goal);
    return { goal, replayed: false };
  });
}

function recordSuperseded(
  c: GoalContext,
  refIn: GoalRef,
  evidence: Omit<GoalSupersededHere, 'recorded_at'>,
): GoalRecord {
  const ref = assertGoalRef(refIn);
  return c.storage.withGoalLock(ref.goal_id, () => {
    const goal = mustLoad(c, ref.goal_id);
    if (goal.goal_instance_id !== ref.goal_instance_id) throw instanceMismatch(ref.goal_id);
    if (goal.superseded) return goal;
    return save(c, {
      ...goal,
      superseded: { evidence: evidence.evidence, newest_fence: evidence.newest_fence, recorded_at: c.now() },
      updated_at: c.now(),
    });
  });
}

function checkBinding(c: GoalContext, ref: GoalRef): BindingMatch {
  if (!isGoalRef(ref)) return 'invalid';
  const goal = load(c, ref.goal_id);
  if (!goal) return 'goal_not_registered';
  if (goal.goal_instance_id !== ref.goal_instance_id) return 'goal_instance_mismatch';
  if (goal.lifecycle === 'retired') return 'retired';
  const row = c.registry.read().value.goals.find((g) => g.goal_id === ref.goal_id);
  if (!row || row.goal_instance_id !== goal.goal_instance_id || row.status === 'retired') return 'goal_not_registered';
  return 'current';
}

export function goalStoreOver(storage: GoalStorage, options: GoalStoreOptions): GoalStore {
  const c: GoalContext = {
    storage,
    registry: options.registry,
    now: () => (options.now ?? (() => new Date()))().toISOString(),
  };
  const store = {
    create: (goalId, title, createOptions = {}) => createGoal(c, goalId, title, createOptions.projectId),
    get: (goalId) => load(c, assertGoalId(goalId)),
    list: () =>
      storage
        .listGoalIds()
        .sort()
        .map((id) => load(c, id))
        .filter((g): g is GoalRecord => g !== undefined),
    pause: (ref, expected) => transition(c, ref, expected, 'paused', ['active']),
    resume: (ref, expected) => transition(c, ref, expected, 'active', ['paused']),
    retire: (ref, expected) => transition(c, ref, expected, 'retired', ['active', 'paused']),
    addDoc: (goalId, name, content) => addDoc(c, goalId, name, content),
    readDoc: (goalId, name) => readDoc(c, goalId, name),
    checkBinding: (ref) => checkBinding(c, ref),
    adoptLifetime: (r) => adoptLifetime(c, r),
    recordSuperseded: (ref, evidence) => recordSuperseded(c, ref, evidence),
  } satisfies GoalStore;
  return store;
}
