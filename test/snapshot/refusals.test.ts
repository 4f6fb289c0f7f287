/**
 * Every fail-closed case of the v1alpha2 codec, in both directions where it can arise: export
 * (encodeSnapshot refuses the state) and import (decodeSnapshot refuses bytes crafted without the
 * codec's validation). Each case asserts its stable code; the last test checks that every code in
 * SNAPSHOT_ERRORS has at least one case here.
 */
import { describe, expect, test } from 'vitest';
import {
  decodeSnapshot,
  encodeSnapshot,
  SNAPSHOT_ERRORS,
  SNAPSHOT_LIMITS,
  type Message,
  type Part,
  type RunSnapshotState,
} from '../../src/snapshot/index.js';
import { create, toBinary } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import {
  ComponentIdentitySchema,
  ComponentKind as PbKind,
  Lifecycle as PbLifecycle,
  Role as PbRole,
  RunSnapshotSchema,
  ToolResultStatus as PbStatus,
} from '../../src/snapshot/gen/loopx/snapshot/v1alpha2/snapshot_pb.js';
import {
  expectRefusal,
  hex32,
  rawEncode,
  rawEncodeState,
  sortComponents,
  toPb,
  validState,
  withMessage,
  type Mutable,
} from './support.js';

type State = Mutable<RunSnapshotState>;

interface Case {
  readonly rule: string;
  readonly code: string;
  /** A state encodeSnapshot must refuse. */
  readonly state?: () => unknown;
  /** Bytes decodeSnapshot must refuse. Defaults to the state above, encoded without validation. */
  readonly bytes?: () => Uint8Array;
  /** The state cannot be represented on the wire (only the export direction applies). */
  readonly exportOnly?: boolean;
}

const E = SNAPSHOT_ERRORS;
const concat = (...parts: Uint8Array[]): Uint8Array => new Uint8Array(Buffer.concat(parts));
const validBytes = (): Uint8Array => encodeSnapshot(validState());

const text = (t: string): Part => ({ type: 'text', text: t });
const msg = (id: string, role: Message['role'], parts: Part[]): Message => ({ id, role, parts });
const call = (callId: string, toolName = 'math.add', argumentsJson = '{}'): Part => ({
  type: 'tool_call',
  callId,
  toolName,
  argumentsJson,
});
const result = (
  callId: string,
  status: 'ok' | 'error' | 'interaction_pending' | 'mutation_uncertain' = 'ok',
  toolName = 'math.add',
  resultJson = '{}',
): Part => ({
  type: 'tool_result',
  callId,
  toolName,
  status,
  resultJson,
});

/** The valid state with `extra` messages appended. */
const appended = (...extra: Message[]): State => {
  const s = validState();
  return { ...s, messages: [...s.messages, ...extra] };
};

/** Replace the first occurrence of `find` in `bytes` by `replace`. */
function patch(bytes: Uint8Array, find: number[], replace: number[]): Uint8Array {
  const hay = Buffer.from(bytes);
  const at = hay.indexOf(Buffer.from(find));
  if (at < 0) throw new Error('pattern not found');
  return concat(hay.subarray(0, at), Buffer.from(replace), hay.subarray(at + find.length));
}

const manyMessages = (n: number): Message[] => Array.from({ length: n }, (_, i) => msg(`m${i}`, 'user', [text('x')]));

const cases: Case[] = [
  // ---- bytes that are not a RunSnapshot ----
  { rule: 'truncated bytes are refused as malformed', code: E.malformed, bytes: () => validBytes().subarray(0, 40) },
  {
    rule: 'random garbage is refused as malformed',
    code: E.malformed,
    bytes: () => new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]),
  },
  {
    rule: 'invalid UTF-8 in a string field is refused as malformed',
    code: E.malformed,
    bytes: () => patch(validBytes(), [...Buffer.from('run_01')], [0xc3, 0x28, 0xff, 0xfe, 0x80, 0x80]),
  },
  // Field 3 (run_id) with wire type 7, which does not exist.
  {
    rule: 'an invalid wire type is refused as malformed',
    code: E.malformed,
    bytes: () => concat(validBytes(), new Uint8Array([0x1f])),
  },
  {
    rule: 'a sub-message length past the end of its parent is refused as malformed',
    code: E.malformed,
    // messages (field 8) claiming 100 bytes when 2 follow.
    bytes: () => concat(validBytes(), new Uint8Array([0x42, 100, 0x0a, 0x00])),
  },
  {
    rule: 'a non-byte payload is refused as malformed',
    code: E.malformed,
    bytes: () => 'not bytes' as unknown as Uint8Array,
  },

  // ---- unknown fields (import only: the encoder never writes one) ----
  {
    rule: 'an unknown top-level field is refused',
    code: E.unknownField,
    bytes: () => concat(validBytes(), new BinaryWriter().tag(99, WireType.Varint).uint32(1).finish()),
  },
  {
    rule: 'an unknown field nested in a tool call is refused',
    code: E.unknownField,
    bytes: () => {
      const pb = toPb(validState());
      const content = pb.messages[2]!.parts[1]!.content;
      if (content.case !== 'toolCall') throw new Error('fixture changed');
      content.value.$unknown = [{ no: 7, wireType: WireType.LengthDelimited, data: new Uint8Array([1, 0x41]) }];
      return rawEncode(pb);
    },
  },
  {
    rule: 'an unknown field nested in a plan component is refused',
    code: E.unknownField,
    bytes: () => {
      const pb = toPb(validState());
      pb.planIdentity!.components[0]!.$unknown = [{ no: 42, wireType: WireType.Varint, data: new Uint8Array([5]) }];
      return rawEncode(pb);
    },
  },

  // ---- framing ----
  {
    rule: 'another format is refused',
    code: E.unsupportedFormat,
    bytes: () => rawEncode({ ...toPb(validState()), format: 'someone-else.snapshot' }),
  },
  {
    rule: 'a payload without a format is refused',
    code: E.unsupportedFormat,
    bytes: () => rawEncode({ ...toPb(validState()), format: '' }),
  },
  {
    rule: 'another version is refused',
    code: E.unsupportedVersion,
    bytes: () => rawEncode({ ...toPb(validState()), version: 'v1alpha3' }),
  },
  {
    rule: 'another version is named even when the rest does not parse as v1alpha2',
    code: E.unsupportedVersion,
    bytes: () =>
      concat(
        new BinaryWriter()
          .tag(1, WireType.LengthDelimited)
          .string('loopx.run-snapshot')
          .tag(2, WireType.LengthDelimited)
          .string('v2')
          .finish(),
        new Uint8Array([0xff, 0xff]),
      ),
  },

  // ---- required content ----
  {
    rule: 'a payload without a definition is refused',
    code: E.missingField,
    bytes: () => rawEncode({ ...toPb(validState()), definition: undefined }),
  },
  {
    rule: 'a payload without a plan identity is refused',
    code: E.missingField,
    bytes: () => rawEncode({ ...toPb(validState()), planIdentity: undefined }),
  },
  {
    rule: 'a part without content is refused',
    code: E.missingField,
    bytes: () => {
      const pb = toPb(validState());
      pb.messages[0]!.parts[0]!.content = { case: undefined };
      return rawEncode(pb);
    },
  },
  { rule: 'an empty run id is refused', code: E.missingField, state: () => ({ ...validState(), runId: '' }) },
  {
    rule: 'an empty tool call id is refused',
    code: E.missingField,
    state: () => appended(msg('x1', 'assistant', [call('')]), msg('x2', 'tool', [result('')])),
  },
  {
    rule: 'an empty component module is refused',
    code: E.missingField,
    state: () => {
      const s = validState();
      return {
        ...s,
        planIdentity: { ...s.planIdentity, components: [{ ...s.planIdentity.components[0]!, module: '' }] },
      };
    },
  },

  // ---- values of the wrong type or form (export only: the wire cannot carry them) ----
  {
    rule: 'a fractional turn limit is refused',
    code: E.invalidField,
    state: () => ({ ...validState(), turnLimit: 1.5 }),
    exportOnly: true,
  },
  {
    rule: 'a negative completed turn count is refused',
    code: E.invalidField,
    state: () => ({ ...validState(), completedTurns: -1 }),
    exportOnly: true,
  },
  {
    rule: 'a text with a lone surrogate is refused',
    code: E.invalidField,
    state: () => appended(msg('x', 'user', [text('a\uD800b')])),
    exportOnly: true,
  },
  {
    rule: 'a non-array history is refused',
    code: E.invalidField,
    state: () => ({ ...validState(), messages: 'nope' }),
    exportOnly: true,
  },

  // ---- digests ----
  {
    rule: 'a 31-byte plan fingerprint is refused',
    code: E.invalidDigest,
    bytes: () => {
      const pb = toPb(validState());
      pb.planIdentity!.fingerprint = new Uint8Array(31);
      return rawEncode(pb);
    },
    state: () => {
      const s = validState();
      return { ...s, planIdentity: { ...s.planIdentity, fingerprint: s.planIdentity.fingerprint.slice(2) } };
    },
  },
  {
    rule: 'a 33-byte component source identity is refused',
    code: E.invalidDigest,
    bytes: () => {
      const pb = toPb(validState());
      pb.planIdentity!.components[1]!.sourceSha256 = new Uint8Array(33);
      return rawEncode(pb);
    },
  },
  {
    rule: 'an uppercase hex fingerprint is refused',
    code: E.invalidDigest,
    state: () => {
      const s = validState();
      return { ...s, planIdentity: { ...s.planIdentity, fingerprint: s.planIdentity.fingerprint.toUpperCase() } };
    },
    exportOnly: true,
  },

  // ---- lifecycle ----
  {
    rule: 'an active run is refused',
    code: E.activeLifecycle,
    state: () => ({ ...validState(), lifecycle: 'active' }),
  },
  {
    rule: 'an unspecified lifecycle is refused',
    code: E.invalidLifecycle,
    bytes: () => rawEncode({ ...toPb(validState()), lifecycle: PbLifecycle.UNSPECIFIED }),
  },
  {
    rule: 'an unknown lifecycle number is refused',
    code: E.invalidLifecycle,
    bytes: () => rawEncode({ ...toPb(validState()), lifecycle: 9 as PbLifecycle }),
  },
  {
    rule: 'an unknown lifecycle name is refused',
    code: E.invalidLifecycle,
    state: () => ({ ...validState(), lifecycle: 'paused' }),
    exportOnly: true,
  },

  // ---- roles ----
  {
    rule: 'an unspecified role is refused',
    code: E.invalidRole,
    bytes: () => {
      const pb = toPb(validState());
      pb.messages[1]!.role = PbRole.UNSPECIFIED;
      return rawEncode(pb);
    },
  },
  {
    rule: 'an unknown role number is refused',
    code: E.invalidRole,
    bytes: () => {
      const pb = toPb(validState());
      pb.messages[1]!.role = 17 as PbRole;
      return rawEncode(pb);
    },
    state: () => withMessage(validState(), 1, { ...validState().messages[1]!, role: 'robot' as Message['role'] }),
  },
  {
    rule: 'a user message carrying a tool call is refused',
    code: E.invalidRole,
    state: () => appended(msg('x1', 'user', [call('c9')]), msg('x2', 'tool', [result('c9')])),
  },
  {
    rule: 'a tool message carrying text is refused',
    code: E.invalidRole,
    state: () => appended(msg('x1', 'tool', [text('hi')])),
  },
  {
    rule: 'a system message carrying a tool result is refused',
    code: E.invalidRole,
    state: () => appended(msg('x1', 'system', [result('run_01/t1/k0')])),
  },

  // ---- tool result status and component kind enums ----
  {
    rule: 'an unspecified tool result status is refused',
    code: E.invalidStatus,
    bytes: () => {
      const pb = toPb(validState());
      const content = pb.messages[3]!.parts[0]!.content;
      if (content.case !== 'toolResult') throw new Error('fixture changed');
      content.value.status = PbStatus.UNSPECIFIED;
      return rawEncode(pb);
    },
    state: () => withMessage(validState(), 3, msg('run_01/t1/m1', 'tool', [result('run_01/t1/k0', 'maybe' as 'ok')])),
  },
  {
    rule: 'an unknown component kind is refused',
    code: E.invalidComponentKind,
    bytes: () => {
      const pb = toPb(validState());
      pb.planIdentity!.components[0]!.kind = 77 as PbKind;
      return rawEncode(pb);
    },
    state: () => {
      const s = validState();
      return {
        ...s,
        planIdentity: { ...s.planIdentity, components: [{ ...s.planIdentity.components[0]!, kind: 'plugin' }] },
      };
    },
  },

  // ---- RFC 0007 history invariants ----
  {
    rule: 'a duplicate message id is refused',
    code: E.duplicateMessageId,
    state: () => appended(msg('run_01/t0/m1', 'user', [text('again')])),
  },
  {
    rule: 'a duplicate tool call id is refused',
    code: E.duplicateCallId,
    state: () => appended(msg('x1', 'assistant', [call('run_01/t1/k0')]), msg('x2', 'tool', [result('run_01/t1/k0')])),
  },
  {
    rule: 'a second result for one tool call is refused',
    code: E.duplicateCallId,
    state: () => appended(msg('x1', 'tool', [result('run_01/t1/k0')])),
  },
  {
    rule: 'a tool call without a result is refused',
    code: E.unmatchedToolCall,
    state: () => appended(msg('x1', 'assistant', [call('c-open')])),
  },
  {
    rule: 'a tool result without a call is refused',
    code: E.unmatchedToolResult,
    state: () => appended(msg('x1', 'tool', [result('c-ghost')])),
  },
  {
    rule: 'a tool result before its call is refused',
    code: E.unmatchedToolResult,
    state: () => appended(msg('x1', 'tool', [result('c-late')]), msg('x2', 'assistant', [call('c-late')])),
  },
  {
    rule: 'a tool result naming another tool than its call is refused',
    code: E.unmatchedToolResult,
    state: () =>
      appended(msg('x1', 'assistant', [call('c1', 'math.add')]), msg('x2', 'tool', [result('c1', 'ok', 'math.mul')])),
  },
  {
    rule: 'a pending interaction is refused',
    code: E.pendingInteraction,
    state: () =>
      appended(
        msg('x1', 'assistant', [call('c1', 'human.ask')]),
        msg('x2', 'tool', [
          result('c1', 'interaction_pending', 'human.ask', '{"interaction_id":"ia_03","prompt":"ok?"}'),
        ]),
      ),
  },
  {
    rule: 'an unresolved tool mutation is refused',
    code: E.unresolvedMutation,
    state: () =>
      appended(
        msg('x1', 'assistant', [call('c1', 'outbox.append')]),
        msg('x2', 'tool', [result('c1', 'mutation_uncertain', 'outbox.append')]),
      ),
  },

  // ---- tool JSON ----
  {
    rule: 'tool arguments that are not JSON are refused',
    code: E.invalidJson,
    state: () =>
      appended(msg('x1', 'assistant', [call('c1', 't', '{"a":')]), msg('x2', 'tool', [result('c1', 'ok', 't')])),
  },
  {
    rule: 'a tool result that is not JSON is refused',
    code: E.invalidJson,
    state: () =>
      appended(msg('x1', 'assistant', [call('c1', 't')]), msg('x2', 'tool', [result('c1', 'ok', 't', 'undefined')])),
  },
  {
    rule: 'tool arguments nested deeper than the JSON depth bound are refused',
    code: E.invalidJson,
    state: () => {
      const deep = '['.repeat(SNAPSHOT_LIMITS.maxJsonDepth + 2) + ']'.repeat(SNAPSHOT_LIMITS.maxJsonDepth + 2);
      return appended(msg('x1', 'assistant', [call('c1', 't', deep)]), msg('x2', 'tool', [result('c1', 'ok', 't')]));
    },
  },
  {
    rule: 'tool arguments with unsorted keys are refused',
    code: E.nonCanonicalJson,
    state: () =>
      appended(
        msg('x1', 'assistant', [call('c1', 't', '{"b":1,"a":2}')]),
        msg('x2', 'tool', [result('c1', 'ok', 't')]),
      ),
  },
  {
    rule: 'tool arguments with whitespace are refused',
    code: E.nonCanonicalJson,
    state: () =>
      appended(msg('x1', 'assistant', [call('c1', 't', '{ "a": 1 }')]), msg('x2', 'tool', [result('c1', 'ok', 't')])),
  },
  {
    rule: 'a tool result with a non-canonical number is refused',
    code: E.nonCanonicalJson,
    state: () =>
      appended(msg('x1', 'assistant', [call('c1', 't')]), msg('x2', 'tool', [result('c1', 'ok', 't', '1.0')])),
  },
  {
    rule: 'a tool result with an unnecessary escape is refused',
    code: E.nonCanonicalJson,
    state: () =>
      appended(msg('x1', 'assistant', [call('c1', 't')]), msg('x2', 'tool', [result('c1', 'ok', 't', '"\\u0041"')])),
  },
  {
    rule: 'tool arguments with a duplicate key are refused',
    code: E.nonCanonicalJson,
    state: () =>
      appended(
        msg('x1', 'assistant', [call('c1', 't', '{"a":1,"a":1}')]),
        msg('x2', 'tool', [result('c1', 'ok', 't')]),
      ),
  },
  {
    rule: 'tool arguments with integer-like keys out of code-unit order are refused',
    code: E.nonCanonicalJson,
    state: () =>
      appended(
        msg('x1', 'assistant', [call('c1', 't', '{"2":1,"10":2}')]),
        msg('x2', 'tool', [result('c1', 'ok', 't')]),
      ),
  },

  // ---- bounds ----
  {
    rule: 'a payload above maxPayloadBytes is refused before parsing',
    code: E.oversized,
    bytes: () => new Uint8Array(SNAPSHOT_LIMITS.maxPayloadBytes + 1),
  },
  {
    rule: 'content whose total exceeds maxPayloadBytes is refused before encoding',
    code: E.oversized,
    exportOnly: true,
    state: () => ({
      ...validState(),
      messages: Array.from({ length: 70 }, (_, i) => msg(`big${i}`, 'user', [text('x'.repeat(250 * 1024))])),
    }),
  },
  {
    rule: 'an encoding above maxPayloadBytes is refused even when its content alone fits',
    code: E.oversized,
    exportOnly: true,
    state: () => ({
      ...validState(),
      messages: Array.from({ length: 64 }, (_, i) => msg(`big${i}`, 'user', [text('x'.repeat(262_140))])),
    }),
  },
  {
    rule: 'a message above maxMessageContentBytes is refused',
    code: E.oversized,
    state: () => appended(msg('x1', 'user', [text('é'.repeat(SNAPSHOT_LIMITS.maxMessageContentBytes / 2)), text('!')])),
  },
  {
    rule: 'more than maxMessages messages are refused',
    code: E.oversized,
    state: () => ({ ...validState(), messages: manyMessages(SNAPSHOT_LIMITS.maxMessages + 1) }),
  },
  {
    rule: 'more than maxPartsPerMessage parts are refused',
    code: E.oversized,
    state: () =>
      appended(
        msg(
          'x1',
          'user',
          Array.from({ length: SNAPSHOT_LIMITS.maxPartsPerMessage + 1 }, () => text('p')),
        ),
      ),
  },
  {
    rule: 'a run id above maxRunIdBytes is refused',
    code: E.oversized,
    state: () => ({ ...validState(), runId: 'r'.repeat(SNAPSHOT_LIMITS.maxRunIdBytes + 1) }),
  },
  {
    rule: 'a message id above maxIdBytes is refused',
    code: E.oversized,
    state: () => appended(msg('m'.repeat(SNAPSHOT_LIMITS.maxIdBytes + 1), 'user', [text('x')])),
  },
  {
    rule: 'a tool plan id above maxNameBytes is refused',
    code: E.oversized,
    state: () => {
      const s = validState();
      return { ...s, planIdentity: { ...s.planIdentity, toolPlanId: 'p'.repeat(SNAPSHOT_LIMITS.maxNameBytes + 1) } };
    },
  },
  {
    rule: 'more than maxInteractionIds used interaction ids are refused',
    code: E.oversized,
    state: () => ({
      ...validState(),
      usedInteractionIds: Array.from(
        { length: SNAPSHOT_LIMITS.maxInteractionIds + 1 },
        (_, i) => `ia_${String(i).padStart(6, '0')}`,
      ),
    }),
  },
  {
    rule: 'more than maxComponents plan components are refused',
    code: E.oversized,
    state: () => {
      const s = validState();
      const components = sortComponents(
        Array.from({ length: SNAPSHOT_LIMITS.maxComponents + 1 }, (_, i) => ({
          kind: 'stage' as const,
          name: `s${String(i).padStart(5, '0')}`,
          module: 'm',
          version: '1',
          sourceSha256: hex32(`s${i}`),
        })),
      );
      return { ...s, planIdentity: { ...s.planIdentity, components } };
    },
  },

  // ---- sequence ----
  {
    rule: 'a last sequence below 1 + 2 × completed turns is refused',
    code: E.invalidSequence,
    state: () => ({ ...validState(), lastSequence: 4 }),
  },
  {
    rule: 'more completed turns than the turn limit is refused',
    code: E.invalidSequence,
    state: () => ({ ...validState(), completedTurns: 9, lastSequence: 40 }),
  },
  {
    rule: 'a last sequence above 2^53 − 1 is refused',
    code: E.invalidSequence,
    state: () => ({ ...validState(), lastSequence: 2 ** 53 }),
    bytes: () => rawEncode({ ...toPb(validState()), lastSequence: 2n ** 53n }),
  },
  {
    rule: 'a zero last sequence is refused',
    code: E.invalidSequence,
    state: () => ({ ...validState(), completedTurns: 0, lastSequence: 0 }),
  },

  // ---- canonical order ----
  {
    rule: 'unsorted used interaction ids are refused',
    code: E.nonCanonicalOrder,
    state: () => ({ ...validState(), usedInteractionIds: ['ia_02', 'ia_01'] }),
  },
  {
    rule: 'a duplicated used interaction id is refused',
    code: E.nonCanonicalOrder,
    state: () => ({ ...validState(), usedInteractionIds: ['ia_01', 'ia_01'] }),
  },
  {
    rule: 'unsorted plan components are refused',
    code: E.nonCanonicalOrder,
    state: () => {
      const s = validState();
      return { ...s, planIdentity: { ...s.planIdentity, components: [...s.planIdentity.components].reverse() } };
    },
  },
  {
    rule: 'a duplicated plan component is refused',
    code: E.nonCanonicalOrder,
    state: () => {
      const s = validState();
      const c = s.planIdentity.components[0]!;
      return { ...s, planIdentity: { ...s.planIdentity, components: [c, c] } };
    },
  },

  // ---- canonical encoding (import only: the encoder only writes canonical bytes) ----
  {
    rule: 'a repeated scalar field (last one wins) is refused as non-canonical',
    code: E.nonCanonicalEncoding,
    bytes: () => concat(validBytes(), new BinaryWriter().tag(3, WireType.LengthDelimited).string('run_01').finish()),
  },
  {
    rule: 'fields out of field-number order are refused as non-canonical',
    code: E.nonCanonicalEncoding,
    bytes: () => {
      const b = validBytes();
      // format (tag 1, 18 bytes) is 20 bytes long, version (tag 2, 8 bytes) the next 10: swap them.
      return concat(b.subarray(20, 30), b.subarray(0, 20), b.subarray(30));
    },
  },
  {
    rule: 'a non-minimal varint is refused as non-canonical',
    code: E.nonCanonicalEncoding,
    // last_sequence = 17 (tag 0x58) followed by lifecycle = SUSPENDED (tag 0x60): write 17 in two bytes.
    bytes: () => patch(validBytes(), [0x58, 0x11, 0x60, 0x02], [0x58, 0x91, 0x00, 0x60, 0x02]),
  },
  {
    rule: 'an explicitly encoded zero value is refused as non-canonical',
    code: E.nonCanonicalEncoding,
    // The same state, but PlanIdentity.compatibility_identity written as an empty string (proto3
    // omits it): fields 1–8 and 10–12 come from the schema encoder, field 9 is written by hand.
    bytes: () => {
      const s = validState();
      const pb = toPb({ ...s, planIdentity: { ...s.planIdentity, compatibilityIdentity: '' } });
      const plan = pb.planIdentity!;
      const head = rawEncode({
        ...pb,
        planIdentity: undefined,
        usedInteractionIds: [],
        lastSequence: 0n,
        lifecycle: PbLifecycle.UNSPECIFIED,
      });
      const w = new BinaryWriter().tag(9, WireType.LengthDelimited).fork();
      for (const c of plan.components) w.tag(1, WireType.LengthDelimited).bytes(toBinary(ComponentIdentitySchema, c));
      w.tag(2, WireType.LengthDelimited).string(plan.toolPlanId);
      w.tag(3, WireType.LengthDelimited).string('');
      w.tag(4, WireType.LengthDelimited).bytes(plan.fingerprint).join();
      const tail = rawEncode(
        create(RunSnapshotSchema, {
          usedInteractionIds: pb.usedInteractionIds,
          lastSequence: pb.lastSequence,
          lifecycle: pb.lifecycle,
        }),
      );
      return concat(head, w.finish(), tail);
    },
  },
];

describe('snapshot codec refusals', () => {
  for (const c of cases) {
    if (c.state) {
      test(`export: ${c.rule}`, () => {
        expectRefusal(() => encodeSnapshot(c.state!() as RunSnapshotState), c.code);
      });
    }
    if (c.bytes || (c.state && !c.exportOnly)) {
      test(`import: ${c.rule}`, () => {
        const bytes = c.bytes ? c.bytes() : rawEncodeState(c.state!() as RunSnapshotState);
        expectRefusal(() => decodeSnapshot(bytes), c.code);
      });
    }
  }

  test('every snapshot error code has a refusal case', () => {
    const covered = new Set(cases.map((c) => c.code));
    expect(Object.values(SNAPSHOT_ERRORS).filter((code) => !covered.has(code))).toEqual([]);
  });

  test('a payload above maxPayloadBytes is refused without being parsed', () => {
    // All-zero bytes would be malformed (field number 0) if they were parsed.
    const e = expectRefusal(() => decodeSnapshot(new Uint8Array(SNAPSHOT_LIMITS.maxPayloadBytes + 1)), E.oversized);
    expect(e.details).toMatchObject({ bound: 'maxPayloadBytes', limit: SNAPSHOT_LIMITS.maxPayloadBytes });
  });

  test('an oversized refusal names its bound', () => {
    const s = validState();
    const e = expectRefusal(() => encodeSnapshot({ ...s, runId: 'r'.repeat(200) }), E.oversized);
    expect(e.details).toMatchObject({ bound: 'maxRunIdBytes', limit: 128, actual: 200 });
  });

  test('an unknown field refusal names where it is', () => {
    const pb = toPb(validState());
    pb.planIdentity!.components[1]!.$unknown = [{ no: 42, wireType: WireType.Varint, data: new Uint8Array([5]) }];
    const e = expectRefusal(() => decodeSnapshot(rawEncode(pb)), E.unknownField);
    expect(e.details).toEqual({ path: 'plan_identity.components[1]', fieldNumber: 42 });
  });

  test('a 16 MiB payload of empty messages is refused by count before it is parsed', () => {
    const framing = new BinaryWriter()
      .tag(1, WireType.LengthDelimited)
      .string('loopx.run-snapshot')
      .tag(2, WireType.LengthDelimited)
      .string('v1alpha2')
      .finish();
    const empties = new Uint8Array(SNAPSHOT_LIMITS.maxPayloadBytes - framing.byteLength);
    for (let i = 0; i < empties.length; i += 2) empties[i] = 0x42; // field 8, length 0
    const e = expectRefusal(() => decodeSnapshot(concat(framing, empties)), E.oversized);
    expect(e.details).toMatchObject({ bound: 'maxMessages', actual: SNAPSHOT_LIMITS.maxMessages + 1 });
  });

  test('a message of millions of empty parts is refused by count before it is parsed', () => {
    const parts = new Uint8Array(4_000_000);
    for (let i = 0; i < parts.length; i += 2) parts[i] = 0x1a; // Message.parts (field 3), length 0
    const message = new BinaryWriter()
      .tag(8, WireType.LengthDelimited)
      .bytes(concat(new Uint8Array([0x0a, 0x01, 0x6d]), parts))
      .finish();
    const e = expectRefusal(() => decodeSnapshot(concat(validBytes().subarray(0, 30), message)), E.oversized);
    expect(e.details).toMatchObject({ bound: 'maxPartsPerMessage', path: 'messages[0]' });
  });

  test('a payload of millions of unknown fields is refused at the first one', () => {
    const unknown = new Uint8Array(8_000_000);
    for (let i = 0; i < unknown.length; i += 2) unknown[i] = 0x78; // field 15, varint 0
    const e = expectRefusal(() => decodeSnapshot(concat(validBytes().subarray(0, 30), unknown)), E.unknownField);
    expect(e.details).toEqual({ path: '.', fieldNumber: 15 });
  });

  test('a refusal carries no payload content', () => {
    const secret = 'sk-live-SECRET-CONTENT';
    const s = appended(
      msg('x1', 'assistant', [call('c1', 't', `{ "token": "${secret}" }`)]),
      msg('x2', 'tool', [result('c1', 'ok', 't')]),
    );
    const e = expectRefusal(() => encodeSnapshot(s), E.nonCanonicalJson);
    expect(JSON.stringify(e.toJSON())).not.toContain(secret);
    expect(e.message).not.toContain(secret);
  });
});
