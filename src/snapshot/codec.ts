/**
 * The v1alpha2 run snapshot payload codec (RFC 0007): RunSnapshotState ⇄ deterministic protobuf
 * bytes. It owns the byte form of a payload and nothing else — no signing, no envelope, no
 * authority: the payload digest it computes proves bytes, never authority.
 *
 * Contract:
 * - encodeSnapshot validates, then encodes; the same state always yields the same bytes (fields
 *   in field-number order, proto3 zero values omitted, no unknown fields, identities sorted).
 * - decodeSnapshot checks the size bound before parsing, refuses unknown fields at any depth,
 *   unsupported framing and every semantic defect, and finally refuses bytes that are not the
 *   canonical encoding of the state they decode to (checked on the wire, wire-canonical.ts). So for every accepted payload `b`,
 *   `encodeSnapshot(decodeSnapshot(b))` is byte-identical to `b`.
 * - Decode runs a fused one-pass decoder first (wire-decode.ts): it answers only for payloads it
 *   is sure are canonical and well-formed, then validation runs as usual; for anything else the
 *   step-by-step definition path decides, so refusals keep their codes, details and precedence.
 * - Every refusal in either direction is a LoopxError (kind 'rejected') with a SNAPSHOT_ERRORS
 *   code; no other exception type escapes for any input bytes.
 */
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import { fromHex, sha256Hex, toHex } from '../core/index.js';
import { SNAPSHOT_ERRORS, snapshotError } from './errors.js';
import {
  KIND_FROM_PB,
  KIND_TO_PB,
  LIFECYCLE_FROM_PB,
  LIFECYCLE_WIRE_NUMBER,
  ROLE_FROM_PB,
  ROLE_TO_PB,
  STATUS_FROM_PB,
  STATUS_TO_PB,
} from './enums.js';
import {
  RunSnapshotSchema,
  type ComponentIdentity as PbComponentIdentity,
  type Message as PbMessage,
  type Part as PbPart,
  type RunSnapshot,
} from './gen/loopx/snapshot/v1alpha2/snapshot_pb.js';
import { SNAPSHOT_DIGEST_BYTES, SNAPSHOT_FORMAT, SNAPSHOT_LIMITS, SNAPSHOT_VERSION } from './limits.js';
import type { ComponentIdentity, Message, Part, RunSnapshotState } from './state.js';
import { validateSnapshotState } from './validate.js';
import { prescanSnapshot, renderPath } from './wire-prescan.js';
import { isCanonicalSnapshotWire } from './wire-canonical.js';
import { decodeCanonicalSnapshot } from './wire-decode.js';

export {
  SNAPSHOT_DIGEST_BYTES,
  SNAPSHOT_FORMAT,
  SNAPSHOT_LIMITS,
  SNAPSHOT_VERSION,
  type SnapshotBound,
} from './limits.js';
export { SNAPSHOT_ERRORS, type SnapshotErrorCode } from './errors.js';
export { LIFECYCLE_WIRE_NUMBER } from './enums.js';
export { validateSnapshotState, minimumLastSequence } from './validate.js';

// ---- public API ----

/** Validate `state` and encode it as a deterministic v1alpha2 payload. */
export function encodeSnapshot(state: RunSnapshotState): Uint8Array {
  validateSnapshotState(state);
  const bytes = toBinary(RunSnapshotSchema, toProto(state));
  if (bytes.byteLength > SNAPSHOT_LIMITS.maxPayloadBytes) {
    throw snapshotError(
      SNAPSHOT_ERRORS.oversized,
      `Snapshot exceeds its maxPayloadBytes bound (${SNAPSHOT_LIMITS.maxPayloadBytes}).`,
      {
        bound: 'maxPayloadBytes',
        limit: SNAPSHOT_LIMITS.maxPayloadBytes,
        actual: bytes.byteLength,
      },
    );
  }
  return bytes;
}

/** Decode and fully validate a v1alpha2 payload. Fails closed on anything but a canonical payload. */
export function decodeSnapshot(bytes: Uint8Array): RunSnapshotState {
  if (!(bytes instanceof Uint8Array)) {
    throw snapshotError(SNAPSHOT_ERRORS.malformed, 'A snapshot payload must be bytes.');
  }
  if (bytes.byteLength > SNAPSHOT_LIMITS.maxPayloadBytes) {
    throw snapshotError(
      SNAPSHOT_ERRORS.oversized,
      `Snapshot exceeds its maxPayloadBytes bound (${SNAPSHOT_LIMITS.maxPayloadBytes}).`,
      {
        bound: 'maxPayloadBytes',
        limit: SNAPSHOT_LIMITS.maxPayloadBytes,
        actual: bytes.byteLength,
      },
    );
  }
  // The fused one-pass decoder answers for canonical payloads (all an encoder writes); anything
  // else, and so every refusal before semantic validation, goes through the definition path below.
  const fast = decodeCanonicalSnapshot(bytes);
  if (fast !== undefined) {
    validateSnapshotState(fast);
    return fast;
  }
  return decodeSnapshotByDefinition(bytes);
}

/**
 * The definition of decoding, step by step: framing, pre-scan, parse, unknown fields, mapping,
 * validation, then the wire-level canonical check. Its refusals are the codec's refusals.
 * Exported for the tests that hold the fused decoder to it; not part of the module's API.
 */
export function decodeSnapshotByDefinition(bytes: Uint8Array): RunSnapshotState {
  // A payload of another format or version may not parse as this schema: name the framing first.
  const framing = peekFraming(bytes);
  if (framing.format !== undefined) checkFormat(framing.format);
  if (framing.version !== undefined) checkVersion(framing.version);
  // Unknown fields and repeated-field counts, before any per-field object is allocated.
  prescanSnapshot(bytes);

  let message: RunSnapshot;
  try {
    message = fromBinary(RunSnapshotSchema, bytes, { readUnknownFields: true });
  } catch (e) {
    throw snapshotError(
      SNAPSHOT_ERRORS.malformed,
      'The snapshot payload is not a valid protobuf RunSnapshot.',
      undefined,
      e,
    );
  }
  assertNoUnknownFields(message);
  checkFormat(message.format);
  checkVersion(message.version);

  const state = fromProto(message);
  validateSnapshotState(state);

  // The bytes must be exactly the canonical encoding of what they decode to — decided on the wire
  // (see wire-canonical.ts) instead of re-encoding, which costs about as much as the parse.
  if (!isCanonicalSnapshotWire(bytes)) {
    throw snapshotError(
      SNAPSHOT_ERRORS.nonCanonicalEncoding,
      'The snapshot payload is not the canonical encoding of its content.',
      {
        length: bytes.byteLength,
      },
    );
  }
  return state;
}

/** Lowercase hex SHA-256 of payload bytes. Proves bytes, never authority. */
export const snapshotDigest = (bytes: Uint8Array): string => sha256Hex(bytes);

// ---- framing and unknown fields ----

function checkFormat(format: string): void {
  if (format !== SNAPSHOT_FORMAT) {
    throw snapshotError(SNAPSHOT_ERRORS.unsupportedFormat, `The payload is not a ${SNAPSHOT_FORMAT} payload.`);
  }
}

function checkVersion(version: string): void {
  if (version !== SNAPSHOT_VERSION) {
    throw snapshotError(
      SNAPSHOT_ERRORS.unsupportedVersion,
      `Snapshot version is not supported (this loopx reads ${SNAPSHOT_VERSION}).`,
      {
        // Shown only when it looks like a version name, never arbitrary bytes.
        ...(/^[a-z0-9.-]{1,32}$/.test(version) ? { version } : {}),
      },
    );
  }
}

/** Read the leading format (1) and version (2) fields of a canonical payload, if they parse. */
function peekFraming(bytes: Uint8Array): { format?: string; version?: string } {
  const out: { format?: string; version?: string } = {};
  try {
    const reader = new BinaryReader(bytes);
    while (reader.pos < reader.len) {
      const [no, wireType] = reader.tag();
      if (wireType !== WireType.LengthDelimited || no > 2) break;
      if (no === 1 && out.format === undefined && out.version === undefined) out.format = reader.string(true);
      else if (no === 2 && out.version === undefined) out.version = reader.string(true);
      else break;
    }
  } catch {
    // Unreadable framing is reported by the full parse below.
  }
  return out;
}

/**
 * Walk every decoded message for `$unknown` (protobuf-es keeps unknown fields there). The wire
 * pre-scan already refuses unknown fields; this walk over the parsed result is the second,
 * independent net. Generic over the schema; the path is rendered only for the refusal.
 */
function assertNoUnknownFields(root: RunSnapshot): void {
  const path: Array<string | number> = [];
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        path.push(i);
        visit(value[i]);
        path.pop();
      }
      return;
    }
    const record = value as Record<string, unknown>;
    const unknown = record.$unknown as ReadonlyArray<{ no: number }> | undefined;
    if (unknown !== undefined && unknown.length > 0) {
      throw snapshotError(
        SNAPSHOT_ERRORS.unknownField,
        'The snapshot payload has a field this version does not define.',
        {
          path: renderPath(path),
          fieldNumber: unknown[0]!.no,
        },
      );
    }
    // A oneof is `{ case, value }`: descend into the value under the member's name.
    if (record.$typeName === undefined && typeof record.case === 'string') {
      path.push(record.case);
      visit(record.value);
      path.pop();
      return;
    }
    for (const key in record) {
      if (key === '$typeName' || key === '$unknown') continue;
      const child = record[key];
      if (child === null || typeof child !== 'object') continue;
      path.push(key);
      visit(child);
      path.pop();
    }
  };
  visit(root);
}

// ---- state ⇄ protobuf message ----

const TYPE = 'loopx.snapshot.v1alpha2.';

function toProto(state: RunSnapshotState): RunSnapshot {
  return {
    $typeName: `${TYPE}RunSnapshot`,
    format: SNAPSHOT_FORMAT,
    version: SNAPSHOT_VERSION,
    runId: state.runId,
    definition: { $typeName: `${TYPE}DefinitionIdentity`, id: state.definition.id, version: state.definition.version },
    model: { $typeName: `${TYPE}ModelRef`, provider: state.model.provider, modelId: state.model.modelId },
    turnLimit: state.turnLimit,
    completedTurns: state.completedTurns,
    messages: state.messages.map(messageToProto),
    planIdentity: {
      $typeName: `${TYPE}PlanIdentity`,
      components: state.planIdentity.components.map(componentToProto),
      toolPlanId: state.planIdentity.toolPlanId,
      compatibilityIdentity: state.planIdentity.compatibilityIdentity,
      fingerprint: fromHex(state.planIdentity.fingerprint),
    },
    usedInteractionIds: [...state.usedInteractionIds],
    lastSequence: BigInt(state.lastSequence),
    lifecycle: LIFECYCLE_WIRE_NUMBER[state.lifecycle],
  };
}

function messageToProto(m: Message): PbMessage {
  return { $typeName: `${TYPE}Message`, id: m.id, role: ROLE_TO_PB[m.role], parts: m.parts.map(partToProto) };
}

function partToProto(p: Part): PbPart {
  switch (p.type) {
    case 'text':
      return { $typeName: `${TYPE}Part`, content: { case: 'text', value: p.text } };
    case 'tool_call':
      return {
        $typeName: `${TYPE}Part`,
        content: {
          case: 'toolCall',
          value: {
            $typeName: `${TYPE}ToolCall`,
            callId: p.callId,
            toolName: p.toolName,
            argumentsJson: p.argumentsJson,
          },
        },
      };
    case 'tool_result':
      return {
        $typeName: `${TYPE}Part`,
        content: {
          case: 'toolResult',
          value: {
            $typeName: `${TYPE}ToolResult`,
            callId: p.callId,
            toolName: p.toolName,
            status: STATUS_TO_PB[p.status],
            resultJson: p.resultJson,
          },
        },
      };
  }
}

function componentToProto(c: ComponentIdentity): PbComponentIdentity {
  return {
    $typeName: `${TYPE}ComponentIdentity`,
    kind: KIND_TO_PB[c.kind],
    name: c.name,
    module: c.module,
    version: c.version,
    sourceSha256: fromHex(c.sourceSha256),
  };
}

function missing(field: string, where: Record<string, unknown> = {}): never {
  throw snapshotError(SNAPSHOT_ERRORS.missingField, `Snapshot field ${field} is missing.`, { ...where, field });
}

function digestHex(bytes: Uint8Array, field: string, where: Record<string, unknown> = {}): string {
  if (bytes.byteLength !== SNAPSHOT_DIGEST_BYTES) {
    throw snapshotError(
      SNAPSHOT_ERRORS.invalidDigest,
      `Snapshot field ${field} is not exactly ${SNAPSHOT_DIGEST_BYTES} bytes.`,
      {
        ...where,
        field,
        length: bytes.byteLength,
      },
    );
  }
  return toHex(bytes);
}

/**
 * Map a decoded message to state. Refuses what state cannot represent (absent sub-messages,
 * empty part content, unknown enum numbers, digests of the wrong length, a sequence beyond 2^53 − 1);
 * everything else is left to validateSnapshotState, shared with the encoder.
 */
function fromProto(msg: RunSnapshot): RunSnapshotState {
  const definition = msg.definition ?? missing('definition');
  const model = msg.model ?? missing('model');
  const plan = msg.planIdentity ?? missing('plan_identity');
  const lifecycle = LIFECYCLE_FROM_PB.get(msg.lifecycle);
  if (lifecycle === undefined) {
    throw snapshotError(SNAPSHOT_ERRORS.invalidLifecycle, 'Snapshot lifecycle is unspecified or unknown.', {
      lifecycle: msg.lifecycle,
    });
  }
  if (msg.lastSequence > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw snapshotError(SNAPSHOT_ERRORS.invalidSequence, 'Snapshot last_sequence exceeds 2^53 − 1.');
  }
  if (msg.messages.length > SNAPSHOT_LIMITS.maxMessages) {
    // Checked here too so that no work is spent mapping an oversized history.
    throw snapshotError(
      SNAPSHOT_ERRORS.oversized,
      `Snapshot exceeds its maxMessages bound (${SNAPSHOT_LIMITS.maxMessages}).`,
      {
        bound: 'maxMessages',
        limit: SNAPSHOT_LIMITS.maxMessages,
        actual: msg.messages.length,
      },
    );
  }
  return {
    runId: msg.runId,
    definition: { id: definition.id, version: definition.version },
    model: { provider: model.provider, modelId: model.modelId },
    turnLimit: msg.turnLimit,
    completedTurns: msg.completedTurns,
    messages: msg.messages.map(messageFromProto),
    planIdentity: {
      components: plan.components.map(componentFromProto),
      toolPlanId: plan.toolPlanId,
      compatibilityIdentity: plan.compatibilityIdentity,
      fingerprint: digestHex(plan.fingerprint, 'plan_identity.fingerprint'),
    },
    usedInteractionIds: msg.usedInteractionIds,
    lastSequence: Number(msg.lastSequence),
    lifecycle,
  };
}

function messageFromProto(m: PbMessage, index: number): Message {
  const role = ROLE_FROM_PB.get(m.role);
  if (role === undefined) {
    throw snapshotError(SNAPSHOT_ERRORS.invalidRole, 'A message role is unspecified or unknown.', {
      message: index,
      role: m.role,
    });
  }
  return {
    id: m.id,
    role,
    parts: m.parts.map((p, partIndex) => partFromProto(p, { message: index, part: partIndex })),
  };
}

function partFromProto(p: PbPart, where: Record<string, unknown>): Part {
  const content = p.content;
  switch (content.case) {
    case 'text':
      return { type: 'text', text: content.value };
    case 'toolCall': {
      const c = content.value;
      return { type: 'tool_call', callId: c.callId, toolName: c.toolName, argumentsJson: c.argumentsJson };
    }
    case 'toolResult': {
      const r = content.value;
      const status = STATUS_FROM_PB.get(r.status);
      if (status === undefined) {
        throw snapshotError(SNAPSHOT_ERRORS.invalidStatus, 'A tool result status is unspecified or unknown.', {
          ...where,
          status: r.status,
        });
      }
      return { type: 'tool_result', callId: r.callId, toolName: r.toolName, status, resultJson: r.resultJson };
    }
    default:
      return missing('part.content', where);
  }
}

function componentFromProto(c: PbComponentIdentity, index: number): ComponentIdentity {
  const kind = KIND_FROM_PB.get(c.kind);
  if (kind === undefined) {
    throw snapshotError(SNAPSHOT_ERRORS.invalidComponentKind, 'A component kind is unspecified or unknown.', {
      component: index,
      kind: c.kind,
    });
  }
  return {
    kind,
    name: c.name,
    module: c.module,
    version: c.version,
    sourceSha256: digestHex(c.sourceSha256, 'component.source_sha256', { component: index }),
  };
}
