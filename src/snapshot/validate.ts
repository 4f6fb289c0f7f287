/**
 * Semantic validation of a RunSnapshotState — the single rule set both directions of the codec
 * apply (export validates before encoding, import after decoding). It owns the RFC 0007
 * fail-closed cases: duplicate message/call ids, unmatched tool calls/results, active state,
 * pending interactions, unresolved mutations, invalid roles, oversized content, plus sequence
 * consistency and canonical ordering. It never repairs, reorders or drops anything: a state is
 * accepted as is or refused with one typed code.
 *
 * Inputs may come from plain JavaScript, so every value is type-checked at runtime; a wrong type
 * is `snapshot_invalid_field`, never a TypeError.
 */
import { assertCanonicalJson } from './canonical-json-check.js';
import { SNAPSHOT_ERRORS, snapshotError } from './errors.js';
import { SNAPSHOT_LIMITS, type SnapshotBound } from './limits.js';
import {
  ALLOWED_PARTS,
  COMPONENT_KINDS,
  compareComponents,
  type ComponentIdentity,
  type Lifecycle,
  type Part,
  type Role,
  type ToolCallPart,
  type ToolResultPart,
  type RunSnapshotState,
  type ToolResultStatus,
} from './state.js';

const UINT32_MAX = 0xffff_ffff;
const LIFECYCLES: ReadonlySet<string> = new Set<Lifecycle>(['active', 'suspended', 'completed', 'failed', 'cancelled']);
const ROLES: ReadonlySet<string> = new Set<Role>(['system', 'user', 'assistant', 'tool']);
const STATUSES: ReadonlySet<string> = new Set<ToolResultStatus>([
  'ok',
  'error',
  'interaction_pending',
  'mutation_uncertain',
]);
const KINDS: ReadonlySet<string> = new Set<string>(COMPONENT_KINDS);
const SHA256_HEX = /^[0-9a-f]{64}$/;

type Where = Record<string, unknown>;

const isWellFormedNative = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const isWellFormed = (s: string): boolean =>
  isWellFormedNative ? isWellFormedNative.call(s) : !LONE_SURROGATE.test(s);

const utf8Bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

function oversized(bound: SnapshotBound, actual: number, where: Where = {}): never {
  throw snapshotError(SNAPSHOT_ERRORS.oversized, `Snapshot exceeds its ${bound} bound (${SNAPSHOT_LIMITS[bound]}).`, {
    ...where,
    bound,
    limit: SNAPSHOT_LIMITS[bound],
    actual,
  });
}

function invalidField(field: string, reason: string, where: Where = {}): never {
  throw snapshotError(SNAPSHOT_ERRORS.invalidField, `Snapshot field ${field} ${reason}.`, { ...where, field });
}

/** A well-formed string of at most `bound` UTF-8 bytes; returns its byte length. */
function checkString(value: unknown, field: string, bound: SnapshotBound | null, where: Where = {}): number {
  if (typeof value !== 'string') invalidField(field, 'is not a string', where);
  if (!isWellFormed(value)) invalidField(field, 'is not well-formed Unicode (lone surrogate)', where);
  const n = utf8Bytes(value);
  if (bound !== null && n > SNAPSHOT_LIMITS[bound]) oversized(bound, n, { ...where, field });
  return n;
}

/** A required (non-empty) identity string. */
function checkId(value: unknown, field: string, bound: SnapshotBound, where: Where = {}): void {
  checkString(value, field, bound, where);
  if (value === '')
    throw snapshotError(SNAPSHOT_ERRORS.missingField, `Snapshot field ${field} is empty.`, { ...where, field });
}

function checkObject(value: unknown, field: string, where: Where = {}): void {
  if (value === undefined || value === null) {
    throw snapshotError(SNAPSHOT_ERRORS.missingField, `Snapshot field ${field} is missing.`, { ...where, field });
  }
  if (typeof value !== 'object') invalidField(field, 'is not an object', where);
}

function checkArray(value: unknown, field: string): asserts value is readonly unknown[] {
  if (!Array.isArray(value)) invalidField(field, 'is not an array');
}

function checkUint32(value: unknown, field: string): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > UINT32_MAX) {
    invalidField(field, 'is not an unsigned 32-bit integer');
  }
}

function checkDigestHex(value: unknown, field: string, where: Where = {}): void {
  if (typeof value !== 'string' || !SHA256_HEX.test(value)) {
    throw snapshotError(
      SNAPSHOT_ERRORS.invalidDigest,
      `Snapshot field ${field} is not a 32-byte SHA-256 (64 lowercase hex digits).`,
      { ...where, field },
    );
  }
}

/**
 * Validate a run state against every v1alpha2 rule except the encoded-size bound (which only
 * the encoder can measure exactly). Throws a LoopxError (kind 'rejected', a SNAPSHOT_ERRORS code).
 */
export function validateSnapshotState(state: RunSnapshotState): void {
  checkObject(state, 'state');
  checkId(state.runId, 'run_id', 'maxRunIdBytes');
  checkObject(state.definition, 'definition');
  checkId(state.definition.id, 'definition.id', 'maxNameBytes');
  checkId(state.definition.version, 'definition.version', 'maxNameBytes');
  checkObject(state.model, 'model');
  checkId(state.model.provider, 'model.provider', 'maxNameBytes');
  checkId(state.model.modelId, 'model.model_id', 'maxNameBytes');

  checkLifecycle(state.lifecycle);
  checkSequence(state);
  checkMessages(state.messages);
  checkPlanIdentity(state.planIdentity);
  checkInteractionIds(state.usedInteractionIds);
}

function checkLifecycle(lifecycle: unknown): void {
  if (typeof lifecycle !== 'string' || !LIFECYCLES.has(lifecycle)) {
    throw snapshotError(SNAPSHOT_ERRORS.invalidLifecycle, 'Snapshot lifecycle is unspecified or unknown.');
  }
  if (lifecycle === 'active') {
    throw snapshotError(
      SNAPSHOT_ERRORS.activeLifecycle,
      'An active run cannot be snapshotted: only suspended or terminal runs are.',
    );
  }
}

/** Every run commits RunStarted plus at least two events per completed turn. */
export const minimumLastSequence = (completedTurns: number): number => 1 + 2 * completedTurns;

function checkSequence(state: RunSnapshotState): void {
  checkUint32(state.turnLimit, 'turn_limit');
  checkUint32(state.completedTurns, 'completed_turns');
  const seq: unknown = state.lastSequence;
  if (typeof seq !== 'number' || !Number.isInteger(seq)) invalidField('last_sequence', 'is not an integer');
  const details = { completedTurns: state.completedTurns, turnLimit: state.turnLimit, lastSequence: seq };
  if (state.completedTurns > state.turnLimit) {
    throw snapshotError(SNAPSHOT_ERRORS.invalidSequence, 'Snapshot completed_turns exceeds turn_limit.', details);
  }
  if (seq < minimumLastSequence(state.completedTurns) || seq > Number.MAX_SAFE_INTEGER) {
    throw snapshotError(
      SNAPSHOT_ERRORS.invalidSequence,
      'Snapshot last_sequence must be at least 1 + 2 × completed_turns and at most 2^53 − 1.',
      details,
    );
  }
}

interface CallRecord {
  readonly toolName: string;
  settled: boolean;
}

/** A tool call: ids, canonical arguments, a call id not used before. Returns its content bytes. */
function checkToolCall(
  part: ToolCallPart,
  here: { message: number; part: number },
  calls: Map<string, CallRecord>,
): number {
  checkId(part.callId, 'tool_call.call_id', 'maxIdBytes', here);
  checkId(part.toolName, 'tool_call.tool_name', 'maxNameBytes', here);
  const content = checkString(part.argumentsJson, 'tool_call.arguments_json', null, here);
  if (calls.has(part.callId)) {
    throw snapshotError(SNAPSHOT_ERRORS.duplicateCallId, 'Two tool calls share a call id.', here);
  }
  calls.set(part.callId, { toolName: part.toolName, settled: false });
  assertCanonicalJson(part.argumentsJson, here, 'tool_call.arguments_json');
  return content;
}

/** A tool result: a known, settled status, matching an earlier unsettled call of the same tool. Returns its content bytes. */
function checkToolResult(
  part: ToolResultPart,
  here: { message: number; part: number },
  calls: Map<string, CallRecord>,
): number {
  checkId(part.callId, 'tool_result.call_id', 'maxIdBytes', here);
  checkId(part.toolName, 'tool_result.tool_name', 'maxNameBytes', here);
  const content = checkString(part.resultJson, 'tool_result.result_json', null, here);
  const status: unknown = part.status;
  if (typeof status !== 'string' || !STATUSES.has(status)) {
    throw snapshotError(SNAPSHOT_ERRORS.invalidStatus, 'A tool result status is unspecified or unknown.', here);
  }
  if (status === 'interaction_pending') {
    throw snapshotError(
      SNAPSHOT_ERRORS.pendingInteraction,
      'The run has a pending interaction: a tool call waits for a human.',
      here,
    );
  }
  if (status === 'mutation_uncertain') {
    throw snapshotError(
      SNAPSHOT_ERRORS.unresolvedMutation,
      'The run has an unresolved tool mutation: its outcome is unknown.',
      here,
    );
  }
  const call = calls.get(part.callId);
  if (call === undefined) {
    throw snapshotError(
      SNAPSHOT_ERRORS.unmatchedToolResult,
      'A tool result has no earlier tool call with its call id.',
      here,
    );
  }
  if (call.toolName !== part.toolName) {
    throw snapshotError(
      SNAPSHOT_ERRORS.unmatchedToolResult,
      'A tool result names a different tool than its call.',
      here,
    );
  }
  if (call.settled) {
    throw snapshotError(SNAPSHOT_ERRORS.duplicateCallId, 'A tool call has two results.', here);
  }
  call.settled = true;
  assertCanonicalJson(part.resultJson, here, 'tool_result.result_json');
  return content;
}

function checkMessages(messages: unknown): void {
  checkArray(messages, 'messages');
  if (messages.length > SNAPSHOT_LIMITS.maxMessages) oversized('maxMessages', messages.length);
  const messageIds = new Set<string>();
  const calls = new Map<string, CallRecord>();
  let totalContent = 0;

  for (let m = 0; m < messages.length; m++) {
    const message = messages[m] as RunSnapshotState['messages'][number];
    const at = { message: m };
    checkObject(message, 'messages[]', at);
    checkId(message.id, 'message.id', 'maxIdBytes', at);
    if (messageIds.has(message.id)) {
      throw snapshotError(SNAPSHOT_ERRORS.duplicateMessageId, 'Two messages share an id.', at);
    }
    messageIds.add(message.id);
    const role: unknown = message.role;
    if (typeof role !== 'string' || !ROLES.has(role)) {
      throw snapshotError(SNAPSHOT_ERRORS.invalidRole, 'A message role is unspecified or unknown.', at);
    }
    const allowed = ALLOWED_PARTS[role as Role];
    const parts: unknown = message.parts;
    checkArray(parts, 'message.parts');
    if (parts.length > SNAPSHOT_LIMITS.maxPartsPerMessage) oversized('maxPartsPerMessage', parts.length, at);

    let content = 0;
    for (let p = 0; p < parts.length; p++) {
      const part = parts[p] as Part;
      const here = { message: m, part: p };
      checkObject(part, 'part', here);
      const type: unknown = part.type;
      if (type !== 'text' && type !== 'tool_call' && type !== 'tool_result') {
        throw snapshotError(SNAPSHOT_ERRORS.missingField, 'A message part has no known content.', {
          ...here,
          field: 'part.content',
        });
      }
      if (!allowed.includes(type)) {
        throw snapshotError(SNAPSHOT_ERRORS.invalidRole, `A ${role} message may not carry a ${type} part.`, {
          ...here,
          role,
          partType: type,
        });
      }
      switch (part.type) {
        case 'text':
          content += checkString(part.text, 'part.text', null, here);
          break;
        case 'tool_call':
          content += checkToolCall(part, here, calls);
          break;
        case 'tool_result':
          content += checkToolResult(part, here, calls);
          break;
      }
    }
    if (content > SNAPSHOT_LIMITS.maxMessageContentBytes) oversized('maxMessageContentBytes', content, at);
    totalContent += content;
    // Content alone already exceeds the payload bound: refuse before building a huge encoding.
    if (totalContent > SNAPSHOT_LIMITS.maxPayloadBytes) oversized('maxPayloadBytes', totalContent);
  }

  let unsettled = 0;
  for (const call of calls.values()) if (!call.settled) unsettled++;
  if (unsettled > 0) {
    throw snapshotError(SNAPSHOT_ERRORS.unmatchedToolCall, 'A tool call has no result: the turn did not complete.', {
      unsettledCalls: unsettled,
    });
  }
}

function checkPlanIdentity(plan: RunSnapshotState['planIdentity']): void {
  checkObject(plan, 'plan_identity');
  const components: unknown = plan.components;
  checkArray(components, 'plan_identity.components');
  if (components.length > SNAPSHOT_LIMITS.maxComponents) oversized('maxComponents', components.length);
  for (let i = 0; i < components.length; i++) {
    const c = components[i] as ComponentIdentity;
    const at = { component: i };
    checkObject(c, 'plan_identity.components[]', at);
    if (typeof c.kind !== 'string' || !KINDS.has(c.kind)) {
      throw snapshotError(SNAPSHOT_ERRORS.invalidComponentKind, 'A component kind is unspecified or unknown.', at);
    }
    checkId(c.name, 'component.name', 'maxNameBytes', at);
    checkId(c.module, 'component.module', 'maxNameBytes', at);
    checkId(c.version, 'component.version', 'maxNameBytes', at);
    checkDigestHex(c.sourceSha256, 'component.source_sha256', at);
    if (i > 0 && compareComponents(components[i - 1] as ComponentIdentity, c) >= 0) {
      throw snapshotError(
        SNAPSHOT_ERRORS.nonCanonicalOrder,
        'Plan components are not strictly sorted (unsorted or duplicated).',
        {
          ...at,
          field: 'plan_identity.components',
        },
      );
    }
  }
  checkId(plan.toolPlanId, 'plan_identity.tool_plan_id', 'maxNameBytes');
  checkString(plan.compatibilityIdentity, 'plan_identity.compatibility_identity', 'maxNameBytes');
  checkDigestHex(plan.fingerprint, 'plan_identity.fingerprint');
}

function checkInteractionIds(ids: unknown): void {
  checkArray(ids, 'used_interaction_ids');
  if (ids.length > SNAPSHOT_LIMITS.maxInteractionIds) oversized('maxInteractionIds', ids.length);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    checkId(id, 'used_interaction_ids[]', 'maxIdBytes', { index: i });
    if (i > 0 && !((ids[i - 1] as string) < (id as string))) {
      throw snapshotError(
        SNAPSHOT_ERRORS.nonCanonicalOrder,
        'used_interaction_ids are not strictly increasing (unsorted or duplicated).',
        {
          index: i,
          field: 'used_interaction_ids',
        },
      );
    }
  }
}
