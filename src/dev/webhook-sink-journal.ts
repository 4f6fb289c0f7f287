/**
 * The webhook sink's records and its journal: an append-only, owner-only JSONL file that holds
 * every fact the sink acknowledges (deliveries, newest fences, attempts), written and fsynced
 * before the acknowledgement and replayed on start. It never rewrites a line.
 *
 * Line kinds:
 *   {"type":"delivery", …StoredDelivery}            — a stored delivery (sequence 1, 2, …)
 *   {…StoredDelivery} without "type"                 — the same, as journals written before fences
 *                                                      (no goal_lineage/fence: read as null)
 *   {"type":"fence","goal_lineage","fence","lifetime"} — the lineage's newest fence rose to `fence`,
 *                                                      held by `lifetime` (null: a bare counter); or,
 *                                                      at the same fence, a lifetime claimed a fence
 *                                                      no lifetime held
 *   {"type":"attempt", …SinkAttempt}                 — one POST /deliveries attempt (sequence 1, 2, …)
 * A missing `lifetime` (every line written before lifetimes) reads as null.
 *
 * The fence rule, defined once here (`fenceStanding`) for the sink and its replay: per lineage the
 * sink holds the newest fence and the lifetime holding it. A writer's fence below it is stale; above
 * it, it rises (its lifetime, or none, holds it now); equal to it, it is refused as a conflict only
 * when both the held and the writer's fence name a lifetime and they differ — one generation of a
 * lineage belongs to one lifetime; a lifetime naming a fence no lifetime holds claims it; a fence
 * without a lifetime (a cluster run's epoch, an older writer) keeps the bare counter rule.
 *
 * A line that breaks a rule (a sequence gap, a reused key or operation id, a body digest that does
 * not match, a fence that neither rises nor claims, a delivery above its lineage's newest fence or
 * in conflict with its holder) makes the whole journal invalid (`webhook_sink_journal_invalid`):
 * the sink never starts on a guess.
 */
import { createHash } from 'node:crypto';
import { fsyncSync, readFileSync, writeSync } from 'node:fs';
import { canonicalJson, rejected } from '../core/index.js';

/** What an idempotency key or operation id may be: visible ASCII, 1–255 bytes. */
export const HEADER_VALUE = /^[\x21-\x7e]{1,255}$/;
export const GOAL_LINEAGE = /^[A-Za-z0-9_.:-]{1,128}$/;
/** What a Goal lifetime id may be at the sink (loopx sends `ginst_` + 32 hex; the sink only compares them). */
export const GOAL_LIFETIME = /^[A-Za-z0-9_.:-]{1,128}$/;

export const SINK_ATTEMPT_RESULTS = [
  'stored',
  'duplicate',
  'refused_stale_fence',
  'refused_fence_conflict',
  'conflict',
  'dropped',
] as const;
export type SinkAttemptResult = (typeof SINK_ATTEMPT_RESULTS)[number];

export interface StoredDelivery {
  readonly sequence: number;
  readonly idempotency_key: string;
  readonly operation_id: string;
  /** The writer's Goal lineage and fence (`X-Loopx-Goal-Lineage`, `X-Loopx-Fence`); null when it sent none. */
  readonly goal_lineage: string | null;
  readonly fence: number | null;
  /** The writer's Goal lifetime (`X-Loopx-Goal-Lifetime`); null when it named none. */
  readonly lifetime: string | null;
  readonly body: unknown;
  /** sha256 hex of the body's canonical JSON. */
  readonly body_sha256: string;
  readonly received_at: string;
}

/** One POST /deliveries that got as far as a decision (a malformed request is not an attempt). */
export interface SinkAttempt {
  readonly sequence: number;
  readonly at: string;
  readonly idempotency_key: string;
  readonly operation_id: string;
  readonly goal_lineage: string | null;
  readonly fence: number | null;
  readonly lifetime: string | null;
  readonly result: SinkAttemptResult;
}

/** A lineage's newest fence and the lifetime that holds it (null: none named one). */
export interface HeldFence {
  readonly fence: number;
  readonly lifetime: string | null;
}

export type JournalLine =
  | ({ readonly type: 'delivery' } & StoredDelivery)
  | { readonly type: 'fence'; readonly goal_lineage: string; readonly fence: number; readonly lifetime: string | null }
  | ({ readonly type: 'attempt' } & SinkAttempt);

export interface JournalState {
  readonly deliveries: StoredDelivery[];
  readonly fences: Map<string, HeldFence>;
  readonly attempts: SinkAttempt[];
}

export const sha = (body: unknown): string => createHash('sha256').update(canonicalJson(body)).digest('hex');

export const isFence = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
export const isLifetime = (v: unknown): v is string => typeof v === 'string' && GOAL_LIFETIME.test(v);

/**
 * How a writer's fence stands against what the sink holds for its lineage (see the header):
 * `stale` and `conflict` are refused; `rises` and `claims` change what the sink holds; `holds`
 * is the fence the sink holds already.
 */
export type FenceStanding = 'stale' | 'conflict' | 'rises' | 'claims' | 'holds';

export function fenceStanding(held: HeldFence | undefined, fence: number, lifetime: string | null): FenceStanding {
  if (held === undefined || fence > held.fence) return 'rises';
  if (fence < held.fence) return 'stale';
  if (lifetime === null || held.lifetime === lifetime) return 'holds';
  return held.lifetime === null ? 'claims' : 'conflict';
}

/** Appends the lines in one write and fsyncs them: the caller acknowledges only after this returns. */
export function appendJournal(fd: number, lines: readonly JournalLine[]): void {
  const bytes = Buffer.from(lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
  let off = 0;
  while (off < bytes.byteLength) off += writeSync(fd, bytes, off, bytes.byteLength - off);
  fsyncSync(fd);
}

type Row = { readonly [key: string]: unknown };

/** goal_lineage, fence and lifetime: all absent/null, or a valid lineage with a valid fence and, optionally, a valid lifetime. */
function lineageOf(r: Row): { goal_lineage: string | null; fence: number | null; lifetime: string | null } | undefined {
  const lineage = r.goal_lineage ?? null;
  const fence = r.fence ?? null;
  const lifetime = r.lifetime ?? null;
  if (lineage === null && fence === null && lifetime === null)
    return { goal_lineage: null, fence: null, lifetime: null };
  if (
    typeof lineage === 'string' &&
    GOAL_LINEAGE.test(lineage) &&
    isFence(fence) &&
    (lifetime === null || isLifetime(lifetime))
  )
    return { goal_lineage: lineage, fence, lifetime };
  return undefined;
}

const identityOk = (r: Row): boolean =>
  typeof r.idempotency_key === 'string' &&
  HEADER_VALUE.test(r.idempotency_key) &&
  typeof r.operation_id === 'string' &&
  HEADER_VALUE.test(r.operation_id);

/** A journal being replayed, with the identities its deliveries already hold. */
interface Loading extends JournalState {
  readonly keys: Set<unknown>;
  readonly operations: Set<unknown>;
}

function loadDelivery(j: Loading, r: Row): boolean {
  const lineage = lineageOf(r);
  const ok =
    lineage !== undefined &&
    r.sequence === j.deliveries.length + 1 &&
    identityOk(r) &&
    !j.keys.has(r.idempotency_key) &&
    !j.operations.has(r.operation_id) &&
    typeof r.received_at === 'string' &&
    r.body_sha256 === sha(r.body) &&
    (lineage.goal_lineage === null ||
      ['holds', 'stale'].includes(
        fenceStanding(j.fences.get(lineage.goal_lineage), lineage.fence ?? 0, lineage.lifetime),
      ));
  if (!ok) return false;
  const { sequence, idempotency_key, operation_id, body, body_sha256, received_at } = r as unknown as StoredDelivery;
  j.deliveries.push({ sequence, idempotency_key, operation_id, ...lineage, body, body_sha256, received_at });
  j.keys.add(idempotency_key);
  j.operations.add(operation_id);
  return true;
}

function loadFence(j: JournalState, r: Row): boolean {
  const lifetime = r.lifetime ?? null;
  if (
    typeof r.goal_lineage !== 'string' ||
    !GOAL_LINEAGE.test(r.goal_lineage) ||
    !isFence(r.fence) ||
    (lifetime !== null && !isLifetime(lifetime))
  )
    return false;
  const standing = fenceStanding(j.fences.get(r.goal_lineage), r.fence, lifetime);
  if (standing !== 'rises' && standing !== 'claims') return false;
  j.fences.set(r.goal_lineage, { fence: r.fence, lifetime });
  return true;
}

function loadAttempt(j: JournalState, r: Row): boolean {
  const lineage = lineageOf(r);
  const ok =
    lineage !== undefined &&
    r.sequence === j.attempts.length + 1 &&
    typeof r.at === 'string' &&
    identityOk(r) &&
    (SINK_ATTEMPT_RESULTS as readonly unknown[]).includes(r.result);
  if (!ok) return false;
  const { sequence, at, idempotency_key, operation_id, result } = r as unknown as SinkAttempt;
  j.attempts.push({ sequence, at, idempotency_key, operation_id, ...lineage, result });
  return true;
}

export function loadJournal(path: string): JournalState {
  const invalid = (line: number) =>
    rejected('webhook_sink_journal_invalid', `The sink journal is malformed at line ${line}.`, {
      nextAction: 'start the sink with a new journal file',
    });
  const j: Loading = { deliveries: [], fences: new Map(), attempts: [], keys: new Set(), operations: new Set() };
  const lines = readFileSync(path, 'utf8').split('\n');
  lines.forEach((text, i) => {
    if (text === '' && i === lines.length - 1) return;
    let r: unknown;
    try {
      r = JSON.parse(text);
    } catch {
      throw invalid(i + 1);
    }
    if (typeof r !== 'object' || r === null || Array.isArray(r)) throw invalid(i + 1);
    const row = r as Row;
    const type = row.type;
    const ok =
      type === undefined || type === 'delivery'
        ? loadDelivery(j, row)
        : type === 'fence'
          ? loadFence(j, row)
          : type === 'attempt'
            ? loadAttempt(j, row)
            : false;
    if (!ok) throw invalid(i + 1);
  });
  return { deliveries: j.deliveries, fences: j.fences, attempts: j.attempts };
}
