/**
 * Test support for the snapshot codec: an independent state → protobuf mapping (through `create`,
 * not the codec's own mapping) for crafting payloads the encoder would refuse, and a refusal
 * assertion.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import fc from 'fast-check';
import { expect } from 'vitest';
import { isLoopxError } from '../../src/core/errors.js';
import {
  ComponentIdentitySchema,
  ComponentKind as PbKind,
  Lifecycle as PbLifecycle,
  MessageSchema,
  PartSchema,
  Role as PbRole,
  RunSnapshotSchema,
  ToolResultStatus as PbStatus,
  type RunSnapshot,
} from '../../src/snapshot/gen/loopx/snapshot/v1alpha2/snapshot_pb.js';
import { SNAPSHOT_FORMAT, SNAPSHOT_VERSION, type Part, type RunSnapshotState } from '../../src/snapshot/index.js';

export * from './arbitraries.js';

// ---- an independent state → protobuf mapping, for payloads the encoder refuses to produce ----

const LIFECYCLE: Record<string, PbLifecycle> = {
  active: PbLifecycle.ACTIVE,
  suspended: PbLifecycle.SUSPENDED,
  completed: PbLifecycle.COMPLETED,
  failed: PbLifecycle.FAILED,
  cancelled: PbLifecycle.CANCELLED,
};
const ROLE: Record<string, PbRole> = {
  system: PbRole.SYSTEM,
  user: PbRole.USER,
  assistant: PbRole.ASSISTANT,
  tool: PbRole.TOOL,
};
const STATUS: Record<string, PbStatus> = {
  ok: PbStatus.OK,
  error: PbStatus.ERROR,
  interaction_pending: PbStatus.INTERACTION_PENDING,
  mutation_uncertain: PbStatus.MUTATION_UNCERTAIN,
};
const KIND: Record<string, PbKind> = {
  provider: PbKind.PROVIDER,
  stage: PbKind.STAGE,
  observer: PbKind.OBSERVER,
  broker: PbKind.BROKER,
  static_tool: PbKind.STATIC_TOOL,
  decorator: PbKind.DECORATOR,
};

const part = (p: Part) => {
  switch (p.type) {
    case 'text':
      return create(PartSchema, { content: { case: 'text', value: p.text } });
    case 'tool_call':
      return create(PartSchema, {
        content: {
          case: 'toolCall',
          value: { callId: p.callId, toolName: p.toolName, argumentsJson: p.argumentsJson },
        },
      });
    case 'tool_result':
      return create(PartSchema, {
        content: {
          case: 'toolResult',
          value: { callId: p.callId, toolName: p.toolName, status: STATUS[p.status]!, resultJson: p.resultJson },
        },
      });
  }
};

export function toPb(state: RunSnapshotState): RunSnapshot {
  return create(RunSnapshotSchema, {
    format: SNAPSHOT_FORMAT,
    version: SNAPSHOT_VERSION,
    runId: state.runId,
    definition: { ...state.definition },
    model: { ...state.model },
    turnLimit: state.turnLimit,
    completedTurns: state.completedTurns,
    messages: state.messages.map((m) =>
      create(MessageSchema, { id: m.id, role: ROLE[m.role]!, parts: m.parts.map(part) }),
    ),
    planIdentity: {
      components: state.planIdentity.components.map((c) =>
        create(ComponentIdentitySchema, {
          kind: KIND[c.kind]!,
          name: c.name,
          module: c.module,
          version: c.version,
          sourceSha256: Buffer.from(c.sourceSha256, 'hex'),
        }),
      ),
      toolPlanId: state.planIdentity.toolPlanId,
      compatibilityIdentity: state.planIdentity.compatibilityIdentity,
      fingerprint: Buffer.from(state.planIdentity.fingerprint, 'hex'),
    },
    usedInteractionIds: [...state.usedInteractionIds],
    lastSequence: BigInt(state.lastSequence),
    lifecycle: LIFECYCLE[state.lifecycle]!,
  });
}

/** Encode a protobuf message without any validation (unknown fields included). */
export const rawEncode = (pb: RunSnapshot): Uint8Array => toBinary(RunSnapshotSchema, pb);

/** Encode a state through the independent mapping, bypassing the codec's validation. */
export const rawEncodeState = (state: RunSnapshotState): Uint8Array => rawEncode(toPb(state));

/** Assert that `fn` throws a rejected LoopxError with `code`; returns it. */
export function expectRefusal(fn: () => unknown, code: string) {
  let thrown: unknown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  expect(thrown, `expected a refusal with ${code}`).toBeDefined();
  if (!isLoopxError(thrown)) throw thrown;
  expect({ code: thrown.code, kind: thrown.kind }).toEqual({ code, kind: 'rejected' });
  expect(thrown.nextAction).toBeTruthy();
  return thrown;
}

export const concat = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
};

/** One random damage to a payload: a flipped byte, bytes inserted, deleted or overwritten. */
export const mutationArb = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 6 }),
  }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 6 }) }),
  fc.record({
    kind: fc.constant('overwrite' as const),
    at: fc.nat(),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 3 }),
  }),
);
export type Mutation = typeof mutationArb extends fc.Arbitrary<infer M> ? M : never;

/** `b` with `m` applied (its position taken modulo the length). */
export function mutate(b: Uint8Array, m: Mutation): Uint8Array {
  const at = m.at % (b.length + 1);
  switch (m.kind) {
    case 'flip': {
      const c = new Uint8Array(b);
      if (c.length) c[at % c.length]! ^= m.xor;
      return c;
    }
    case 'insert':
      return concat(b.subarray(0, at), m.bytes, b.subarray(at));
    case 'delete':
      return concat(b.subarray(0, at), b.subarray(at + m.length));
    case 'overwrite':
      return concat(b.subarray(0, at), m.bytes, b.subarray(at + m.bytes.length));
  }
}
