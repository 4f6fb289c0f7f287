/**
 * The one place `loopx_goal_v0` is decoded, validated and encoded, plus the GoalRef helpers and
 * the input rules (titles, document names). Decoding is strict (fail closed).
 */
import { randomBytes } from 'node:crypto';
import { canonicalJson, rejected, type LoopxError } from '../../core/index.js';
import { GOAL_ID } from '../layout.js';
import { GOAL_INSTANCE_ID } from '../registry/index.js';
import {
  GOAL_SCHEMA,
  type GoalDoc,
  type GoalLifecycle,
  type GoalLineage,
  type GoalRecord,
  type GoalRef,
  type GoalSupersededHere,
} from './contract.js';

export const GOAL_MAX_BYTES = 16 * 1024 * 1024;
export const GOAL_DOC_MAX_BYTES = 16 * 1024 * 1024;
export const GOAL_MAX_DOCS = 1024;
/** One safe path component: no separators, no leading dot (so never `.` or `..`), no control characters. */
export const DOC_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const DOC_ID = /^doc_[0-9a-f]{32}$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{3})?Z$/;
export const LIFECYCLES: readonly GoalLifecycle[] = ['active', 'paused', 'retired'];
const FIELDS = [
  'schema_version',
  'goal_id',
  'goal_instance_id',
  'title',
  'lifecycle',
  'created_at',
  'updated_at',
  'docs',
];
const DOC_FIELDS = ['doc_id', 'kind', 'name', 'sha256', 'bytes'];

export const mintGoalInstanceId = (): string => `ginst_${randomBytes(16).toString('hex')}`;
export const mintDocId = (): string => `doc_${randomBytes(16).toString('hex')}`;

export const isGoalId = (v: unknown): v is string => typeof v === 'string' && GOAL_ID.test(v) && !v.includes('..');

export const isGoalRef = (v: unknown): v is GoalRef =>
  typeof v === 'object' &&
  v !== null &&
  isGoalId((v as GoalRef).goal_id) &&
  typeof (v as GoalRef).goal_instance_id === 'string' &&
  GOAL_INSTANCE_ID.test((v as GoalRef).goal_instance_id);

export const goalRef = (goal: GoalRef): GoalRef => ({ goal_id: goal.goal_id, goal_instance_id: goal.goal_instance_id });

export const sameGoalRef = (a: GoalRef, b: GoalRef): boolean =>
  a.goal_id === b.goal_id && a.goal_instance_id === b.goal_instance_id;

export function assertGoalRef(ref: unknown): GoalRef {
  if (!isGoalRef(ref)) {
    throw rejected(
      'goal_ref_invalid',
      "A GoalRef is {goal_id, goal_instance_id} with an instance id of 'ginst_' and 32 lowercase hex.",
      {
        nextAction: 'pass the ref the goal owner returned',
      },
    );
  }
  return ref;
}

export const isTitle = (v: unknown): v is string =>
  typeof v === 'string' && v.trim().length > 0 && v.length <= 200 && !/\p{Cc}/u.test(v);

export function assertTitle(title: unknown): string {
  if (!isTitle(title))
    throw rejected('goal_title_invalid', 'A Goal title is 1–200 characters without control characters.', {
      nextAction: 'choose another title',
    });
  return title;
}

export function assertDocName(name: unknown): string {
  if (typeof name !== 'string' || !DOC_NAME.test(name)) {
    throw rejected(
      'goal_doc_name_invalid',
      'A document name is one path component: 1–128 of A–Z, a–z, 0–9, ., _ and -, not starting with a dot.',
      {
        nextAction: 'choose a plain file name such as notes.md',
      },
    );
  }
  return name;
}

const unknownSchema = (what: string): LoopxError =>
  rejected('goal_unknown_schema', `goal.json has an unknown ${what}; this loopx does not read it.`, {
    nextAction: 'upgrade loopx, or restore goal.json from a backup written by this version',
  });

const malformed = (what: string): LoopxError =>
  rejected('goal_malformed', `goal.json is malformed: ${what}.`, {
    nextAction: "restore the Goal's goal.json from a backup",
  });

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function exact(v: unknown, keys: readonly string[], where: string): Record<string, unknown> {
  if (!isPlainObject(v)) throw malformed(`${where} is not an object`);
  for (const k of Object.keys(v)) if (!keys.includes(k)) throw unknownSchema(`field in ${where}`);
  for (const k of keys) if (!(k in v)) throw malformed(`${where} lacks ${k}`);
  return v;
}

function decodeDoc(v: unknown): GoalDoc {
  const o = exact(v, DOC_FIELDS, 'a document entry');
  if (typeof o.doc_id !== 'string' || !DOC_ID.test(o.doc_id)) throw malformed('a doc_id is invalid');
  if (o.kind !== 'goal_doc') throw unknownSchema('document kind');
  if (typeof o.name !== 'string' || !DOC_NAME.test(o.name))
    throw malformed('a document name is not one safe path component');
  if (typeof o.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(o.sha256)) throw malformed('a document sha256 is invalid');
  if (typeof o.bytes !== 'number' || !Number.isSafeInteger(o.bytes) || o.bytes < 0 || o.bytes > GOAL_DOC_MAX_BYTES)
    throw malformed('a document size is invalid');
  return { doc_id: o.doc_id, kind: 'goal_doc', name: o.name, sha256: o.sha256, bytes: o.bytes };
}

/** Validate a parsed goal.json. */
export function validateGoal(parsed: unknown): GoalRecord {
  if (!isPlainObject(parsed)) throw malformed('the document is not an object');
  if (parsed.schema_version !== GOAL_SCHEMA) throw unknownSchema('schema_version');
  const o = exact(parsed, [...FIELDS, ...OPTIONAL_FIELDS.filter((k) => k in parsed)], 'the document');
  if (!isGoalId(o.goal_id)) throw malformed('goal_id is invalid');
  if (typeof o.goal_instance_id !== 'string' || !GOAL_INSTANCE_ID.test(o.goal_instance_id))
    throw malformed('goal_instance_id is invalid');
  if (!isTitle(o.title)) throw malformed('title is invalid');
  if (!LIFECYCLES.includes(o.lifecycle as GoalLifecycle)) throw malformed('lifecycle is not active, paused or retired');
  for (const k of ['created_at', 'updated_at'] as const) {
    if (typeof o[k] !== 'string' || !TIMESTAMP.test(o[k])) throw malformed(`${k} is not an RFC 3339 UTC timestamp`);
  }
  if (!Array.isArray(o.docs) || o.docs.length > GOAL_MAX_DOCS) throw malformed('docs is not a bounded array');
  const docs = o.docs.map(decodeDoc);
  if (
    new Set(docs.map((d) => d.name)).size !== docs.length ||
    new Set(docs.map((d) => d.doc_id)).size !== docs.length
  ) {
    throw malformed('a document name or doc_id appears twice');
  }
  return {
    schema_version: GOAL_SCHEMA,
    goal_id: o.goal_id,
    goal_instance_id: o.goal_instance_id,
    title: o.title,
    lifecycle: o.lifecycle as GoalLifecycle,
    created_at: o.created_at as string,
    updated_at: o.updated_at as string,
    docs,
    ...('lineage' in o ? { lineage: decodeLineage(o.lineage) } : {}),
    ...('superseded' in o ? { superseded: decodeSuperseded(o.superseded) } : {}),
  };
}

const OPTIONAL_FIELDS = ['lineage', 'superseded'];

function decodeSuperseded(v: unknown): GoalSupersededHere {
  const o = exact(v, ['evidence', 'newest_fence', 'recorded_at'], 'superseded');
  if (o.evidence !== 'receiver_fence_stale') throw unknownSchema('supersession evidence');
  if (typeof o.newest_fence !== 'number' || !Number.isSafeInteger(o.newest_fence) || o.newest_fence < 2)
    throw malformed('superseded.newest_fence is invalid');
  if (typeof o.recorded_at !== 'string' || !TIMESTAMP.test(o.recorded_at))
    throw malformed('superseded.recorded_at is not an RFC 3339 UTC timestamp');
  return { evidence: 'receiver_fence_stale', newest_fence: o.newest_fence, recorded_at: o.recorded_at };
}

function decodeLineage(v: unknown): GoalLineage {
  const o = exact(v, ['lineage_id', 'generation', 'supersedes'], 'lineage');
  if (typeof o.lineage_id !== 'string' || !LINEAGE_ID.test(o.lineage_id)) throw malformed('lineage_id is invalid');
  if (typeof o.generation !== 'number' || !Number.isSafeInteger(o.generation) || o.generation < 2)
    throw malformed('lineage generation is invalid');
  if (o.supersedes === null) throw malformed('a recovered lifetime names the lifetime it supersedes');
  const s = exact(o.supersedes, ['goal_instance_id', 'recovery_id'], 'lineage.supersedes');
  if (typeof s.goal_instance_id !== 'string' || !GOAL_INSTANCE_ID.test(s.goal_instance_id))
    throw malformed('lineage.supersedes.goal_instance_id is invalid');
  if (typeof s.recovery_id !== 'string' || !/^[0-9a-f]{64}$/.test(s.recovery_id))
    throw malformed('lineage.supersedes.recovery_id is invalid');
  return {
    lineage_id: o.lineage_id,
    generation: o.generation,
    supersedes: { goal_instance_id: s.goal_instance_id, recovery_id: s.recovery_id },
  };
}

/** A lineage id: the first lifetime's instance id. */
const LINEAGE_ID = GOAL_INSTANCE_ID;

/** The lineage of a Goal lifetime: its recorded one, else the first of a lineage of its own. */
export const lineageOf = (goal: GoalRecord): GoalLineage =>
  goal.lineage ?? { lineage_id: goal.goal_instance_id, generation: 1, supersedes: null };

/** Decode goal.json bytes; `goalId` is the directory it was found in and must be its goal_id. */
export function decodeGoal(bytes: Uint8Array, goalId: string): GoalRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw malformed('not UTF-8 JSON');
  }
  const goal = validateGoal(parsed);
  if (goal.goal_id !== goalId) {
    throw rejected('goal_id_mismatch', 'goal.json names another Goal than the directory it is in.', {
      nextAction: "restore the Goal's directory from a backup",
    });
  }
  return goal;
}

export const encodeGoal = (goal: GoalRecord): Uint8Array => new TextEncoder().encode(`${canonicalJson(goal)}\n`);
