/**
 * The one place `loopx_registry_v0` is decoded, validated and encoded, and the pure mutations
 * both implementations apply. Decoding is strict (fail closed); encoding is canonical JSON plus a
 * newline, so equal documents have equal bytes and equal revisions.
 */
import { canonicalJson, sha256Hex, conflict, notFound, rejected, type LoopxError } from '../../core/index.js';
import { GOAL_ID, LAYOUT } from '../layout.js';
import {
  REGISTRY_SCHEMA,
  type GoalStatus,
  type GoalStatusUpdate,
  type RegisterGoalInput,
  type RegistryDocument,
  type RegistryExactRead,
  type RegistryGoal,
  type RegistryProject,
  type RegistryRead,
} from './contract.js';

/** Bound on the registry file (the spec's manifest bound); larger input is unreadable, not decoded. */
export const REGISTRY_MAX_BYTES = 16 * 1024 * 1024;
export const PROJECT_ID = /^[a-z0-9][a-z0-9._-]{0,63}$/;
export const GOAL_INSTANCE_ID = /^ginst_[0-9a-f]{32}$/;
const STATUSES: readonly GoalStatus[] = ['active', 'paused', 'retired'];
const MAX_NAME = 200;

export const EMPTY_REGISTRY: RegistryDocument = { schema_version: REGISTRY_SCHEMA, projects: [], goals: [] };

export const goalRoute = (goalId: string): string => `${LAYOUT.goalsDir}/${goalId}`;

const unknownSchema = (what: string): LoopxError =>
  rejected('registry_unknown_schema', `The registry has an unknown ${what}; this loopx does not read it.`, {
    nextAction: 'upgrade loopx, or restore registry.json from a backup written by this version',
  });

const malformed = (what: string): LoopxError =>
  rejected('registry_malformed', `The registry is malformed: ${what}.`, {
    nextAction: 'restore registry.json from a backup',
  });

const invalidInput = (what: string): LoopxError =>
  rejected('registry_input_invalid', `Invalid registry input: ${what}.`, { nextAction: 'correct the input and retry' });

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function fields(v: unknown, keys: readonly string[], where: string): Record<string, unknown> {
  if (!isPlainObject(v)) throw malformed(`${where} is not an object`);
  for (const k of Object.keys(v)) if (!keys.includes(k)) throw unknownSchema(`field in ${where}`);
  for (const k of keys) if (!(k in v)) throw malformed(`${where} lacks ${k}`);
  return v;
}

const isName = (v: unknown): v is string =>
  typeof v === 'string' && v.length > 0 && v.length <= MAX_NAME && !/\p{Cc}/u.test(v);

function decodeProject(v: unknown): RegistryProject {
  const o = fields(v, ['project_id', 'name'], 'a project');
  if (typeof o.project_id !== 'string' || !PROJECT_ID.test(o.project_id)) throw malformed('a project_id is invalid');
  if (!isName(o.name)) throw malformed('a project name is invalid');
  return { project_id: o.project_id, name: o.name };
}

/** Validate one parsed goal row (also the checkpoint's goal_configuration). */
export function validateRegistryGoal(v: unknown): RegistryGoal {
  const o = fields(v, ['goal_id', 'goal_instance_id', 'project_id', 'status', 'route'], 'a goal row');
  if (typeof o.goal_id !== 'string' || !GOAL_ID.test(o.goal_id) || o.goal_id.includes('..'))
    throw malformed('a goal_id is invalid');
  if (typeof o.goal_instance_id !== 'string' || !GOAL_INSTANCE_ID.test(o.goal_instance_id))
    throw malformed('a goal_instance_id is invalid');
  if (typeof o.project_id !== 'string' || !PROJECT_ID.test(o.project_id))
    throw malformed('a goal row project_id is invalid');
  if (!STATUSES.includes(o.status as GoalStatus)) throw malformed('a goal status is not active, paused or retired');
  if (o.route !== goalRoute(o.goal_id)) throw malformed('a goal route is not goals/<goal_id>');
  return {
    goal_id: o.goal_id,
    goal_instance_id: o.goal_instance_id,
    project_id: o.project_id,
    status: o.status as GoalStatus,
    route: o.route,
  };
}

/** Validate a parsed document; throws registry_unknown_schema / registry_malformed. */
export function validateRegistry(parsed: unknown): RegistryDocument {
  if (!isPlainObject(parsed)) throw malformed('the document is not an object');
  if (parsed.schema_version !== REGISTRY_SCHEMA) throw unknownSchema('schema_version');
  const o = fields(parsed, ['schema_version', 'projects', 'goals'], 'the document');
  if (!Array.isArray(o.projects) || !Array.isArray(o.goals)) throw malformed('projects and goals must be arrays');
  const projects = o.projects.map(decodeProject);
  const goals = o.goals.map(validateRegistryGoal);
  const projectIds = new Set(projects.map((p) => p.project_id));
  if (projectIds.size !== projects.length) throw malformed('a project_id appears twice');
  if (new Set(goals.map((g) => g.goal_id)).size !== goals.length) throw malformed('a goal_id appears twice');
  if (new Set(goals.map((g) => g.goal_instance_id)).size !== goals.length)
    throw malformed('a goal_instance_id appears twice');
  for (const g of goals) if (!projectIds.has(g.project_id)) throw malformed('a goal row names an unknown project');
  return { schema_version: REGISTRY_SCHEMA, projects, goals };
}

/** Decode exact registry bytes (strict UTF-8, JSON, schema). */
export function decodeRegistry(bytes: Uint8Array): RegistryDocument {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw malformed('not UTF-8 JSON');
  }
  return validateRegistry(parsed);
}

export const encodeRegistry = (doc: RegistryDocument): Uint8Array =>
  new TextEncoder().encode(`${canonicalJson(doc)}\n`);

export const registryRevision = (bytes: Uint8Array | null): string =>
  bytes === null ? 'absent' : `sha256:${sha256Hex(bytes)}`;

/** The exact read of one byte snapshot (null = confirmed absence). The bytes are copied, never aliased. */
export function exactRead(bytes: Uint8Array | null): RegistryExactRead {
  if (bytes === null) return { absent: true, revision: 'absent', value: structuredClone(EMPTY_REGISTRY), bytes: null };
  const own = new Uint8Array(bytes);
  return { absent: false, revision: registryRevision(own), value: decodeRegistry(own), bytes: own };
}

export const toRead = (r: RegistryExactRead): RegistryRead => ({
  value: r.value,
  revision: r.revision,
  bytes: r.bytes,
});

export function checkRevision(current: string, expected: string): void {
  if (current !== expected) {
    throw conflict('registry_revision_conflict', 'The registry changed since it was read.', {
      nextAction: 'read the registry again and retry against its current revision',
      details: { expected_revision: expected, current_revision: current },
    });
  }
}

export function withProject(doc: RegistryDocument, project: RegistryProject): RegistryDocument {
  if (!isPlainObject(project) || typeof project.project_id !== 'string' || !PROJECT_ID.test(project.project_id)) {
    throw invalidInput('a project id is 1–64 characters of a–z, 0–9, ., _ and -');
  }
  if (!isName(project.name)) throw invalidInput('a project name is 1–200 characters without control characters');
  if (doc.projects.some((p) => p.project_id === project.project_id)) {
    throw conflict('registry_project_exists', `Project ${project.project_id} is already registered.`, {
      nextAction: 'choose another project id',
    });
  }
  return { ...doc, projects: [...doc.projects, { project_id: project.project_id, name: project.name }] };
}

function validStatus(status: unknown): GoalStatus {
  if (!STATUSES.includes(status as GoalStatus)) throw invalidInput('a goal status is active, paused or retired');
  return status as GoalStatus;
}

/** A project the registry does not hold (registering a Goal under it, or creating one there). */
export const projectNotFound = (projectId: string): LoopxError =>
  notFound('registry_project_not_found', `Project ${projectId} is not registered.`, {
    nextAction: 'add the project first',
  });

/** A lifetime id is registered once; an alias again only after its live lifetime is retired. */
const goalExists = (goalId: string, why: string): LoopxError =>
  conflict('registry_goal_exists', `Goal ${goalId} cannot be registered: ${why}.`, {
    nextAction:
      'read the registry: a lifetime is registered once, and an alias again only after its live lifetime is retired',
  });

/** Register a Goal lifetime: a new alias, or a new lifetime over a retired row. The route never changes. */
export function withGoal(doc: RegistryDocument, input: RegisterGoalInput): RegistryDocument {
  if (
    !isPlainObject(input) ||
    typeof input.goal_id !== 'string' ||
    !GOAL_ID.test(input.goal_id) ||
    input.goal_id.includes('..')
  ) {
    throw invalidInput('a goal id is 1–64 characters of a–z, 0–9, ., _ and -');
  }
  if (typeof input.goal_instance_id !== 'string' || !GOAL_INSTANCE_ID.test(input.goal_instance_id)) {
    throw invalidInput("a goal_instance_id is 'ginst_' and 32 lowercase hex characters");
  }
  const status = validStatus(input.status);
  if (!doc.projects.some((p) => p.project_id === input.project_id)) {
    throw projectNotFound(String(input.project_id));
  }
  if (doc.goals.some((g) => g.goal_instance_id === input.goal_instance_id)) {
    throw goalExists(input.goal_id, 'its lifetime is already registered');
  }
  const row: RegistryGoal = {
    goal_id: input.goal_id,
    goal_instance_id: input.goal_instance_id,
    project_id: input.project_id,
    status,
    route: goalRoute(input.goal_id),
  };
  const at = doc.goals.findIndex((g) => g.goal_id === input.goal_id);
  if (at < 0) return { ...doc, goals: [...doc.goals, row] };
  if (doc.goals[at]!.status !== 'retired') {
    throw goalExists(input.goal_id, 'the alias belongs to a live lifetime');
  }
  return { ...doc, goals: doc.goals.map((g, i) => (i === at ? row : g)) };
}

export function withGoalStatus(doc: RegistryDocument, update: GoalStatusUpdate): RegistryDocument {
  const status = validStatus(update?.status);
  const at = doc.goals.findIndex((g) => g.goal_id === update.goal_id);
  if (at < 0)
    throw notFound('registry_goal_not_found', `Goal ${String(update.goal_id)} is not registered.`, {
      nextAction: 'create the Goal first',
    });
  const row = doc.goals[at]!;
  if (row.goal_instance_id !== update.goal_instance_id) {
    throw conflict('registry_goal_instance_mismatch', `Goal ${row.goal_id} is registered to another lifetime.`, {
      nextAction: 'read the registry and use the current goal_instance_id',
    });
  }
  if (row.status === status) return doc;
  if (row.status === 'retired') {
    throw conflict('registry_goal_retired', `Goal ${row.goal_id} is retired; its status is final.`, {
      nextAction: 'create the Goal again for a new lifetime',
    });
  }
  return { ...doc, goals: doc.goals.map((g, i) => (i === at ? { ...g, status } : g)) };
}
