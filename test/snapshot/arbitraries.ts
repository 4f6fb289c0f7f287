/**
 * Valid run states for the snapshot tests: one realistic hand-written state and seeded generators.
 * No vitest import: the cross-process fixture (a plain Node child) imports this file too.
 */
import fc from 'fast-check';
import { canonicalJson } from '../../src/core/canonical-json.js';
import { sha256Hex } from '../../src/core/digest.js';
import {
  compareComponents,
  COMPONENT_KINDS,
  type ComponentIdentity,
  type Message,
  type Part,
  type RunSnapshotState,
  type SnapshotLifecycle,
} from '../../src/snapshot/index.js';

export type Mutable<T> = { -readonly [K in keyof T]: T[K] extends readonly (infer U)[] ? U[] : T[K] };

export const hex32 = (label: string): string => sha256Hex(label);

/** A suspended run after two completed turns: one tool round trip, then a text answer. */
export function validState(): Mutable<RunSnapshotState> {
  const runId = 'run_01';
  const m = (turn: number, i: number): string => `${runId}/t${turn}/m${i}`;
  const messages: Message[] = [
    { id: m(0, 0), role: 'system', parts: [{ type: 'text', text: 'You are a careful agent.' }] },
    { id: m(0, 1), role: 'user', parts: [{ type: 'text', text: 'Add 2 and 3, then ask me. ✓ 日本語 🧪' }] },
    {
      id: m(1, 0),
      role: 'assistant',
      parts: [
        { type: 'text', text: 'Adding.' },
        { type: 'tool_call', callId: `${runId}/t1/k0`, toolName: 'math.add', argumentsJson: '{"a":2,"b":3}' },
      ],
    },
    {
      id: m(1, 1),
      role: 'tool',
      parts: [
        { type: 'tool_result', callId: `${runId}/t1/k0`, toolName: 'math.add', status: 'ok', resultJson: '{"sum":5}' },
      ],
    },
    { id: m(2, 0), role: 'assistant', parts: [{ type: 'text', text: 'The sum is 5.' }] },
  ];
  return {
    runId,
    definition: { id: 'demo.adder', version: '1.0.0' },
    model: { provider: 'scripted', modelId: 'scripted-1' },
    turnLimit: 8,
    completedTurns: 2,
    messages,
    planIdentity: {
      components: sortComponents([
        {
          kind: 'static_tool',
          name: 'math.add',
          module: 'loopx/engine/builtin',
          version: '0.1.0',
          sourceSha256: hex32('builtin'),
        },
        {
          kind: 'provider',
          name: 'scripted',
          module: 'loopx/engine/providers/scripted',
          version: '0.1.0',
          sourceSha256: hex32('scripted'),
        },
      ]),
      toolPlanId: 'loopx.builtin.v1',
      compatibilityIdentity: 'loopx/0.1.0',
      fingerprint: hex32('fingerprint'),
    },
    usedInteractionIds: ['ia_01', 'ia_02'],
    lastSequence: 17,
    lifecycle: 'suspended',
  };
}

export const sortComponents = (cs: ComponentIdentity[]): ComponentIdentity[] => [...cs].sort(compareComponents);

/** Replace one message (by index) of a state. */
export function withMessage(
  state: Mutable<RunSnapshotState>,
  index: number,
  message: Message,
): Mutable<RunSnapshotState> {
  const messages = [...state.messages];
  messages[index] = message;
  return { ...state, messages };
}

// ---- generators of valid states ----

const idText = fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 12 });
const anyText = fc.string({ unit: 'binary', maxLength: 40 });
const jsonText = fc
  .oneof(fc.jsonValue({ maxDepth: 3 }), fc.jsonValue({ maxDepth: 2, stringUnit: 'binary' }))
  .map((v) => canonicalJson(v));

const componentArb: fc.Arbitrary<ComponentIdentity> = fc.record({
  kind: fc.constantFrom(...COMPONENT_KINDS),
  name: idText,
  module: idText,
  version: idText,
  sourceSha256: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('hex')),
});

/** One model turn: an assistant message (text and/or tool calls) and, if it called tools, their results. */
const turnArb = fc.record({
  text: fc.option(anyText, { nil: undefined }),
  calls: fc.array(fc.record({ toolName: idText, args: jsonText, result: jsonText, ok: fc.boolean() }), {
    maxLength: 3,
  }),
});

export const validStateArb: fc.Arbitrary<RunSnapshotState> = fc
  .record({
    runId: idText,
    definition: fc.record({ id: idText, version: idText }),
    model: fc.record({ provider: idText, modelId: idText }),
    prompt: fc.array(fc.record({ role: fc.constantFrom('system' as const, 'user' as const), text: anyText }), {
      maxLength: 2,
    }),
    turns: fc.array(turnArb, { maxLength: 5 }),
    extraTurnLimit: fc.integer({ min: 0, max: 1000 }),
    extraSequence: fc.oneof(fc.integer({ min: 0, max: 100 }), fc.constant(Number.MAX_SAFE_INTEGER)),
    components: fc.uniqueArray(componentArb, {
      maxLength: 4,
      selector: (c) => [c.kind, c.name, c.module, c.version, c.sourceSha256].join('\u0000'),
    }),
    toolPlanId: idText,
    compatibilityIdentity: fc.oneof(fc.constant(''), idText),
    fingerprint: fc.uint8Array({ minLength: 32, maxLength: 32 }),
    interactionIds: fc.uniqueArray(fc.string({ unit: 'binary', minLength: 1, maxLength: 8 }), { maxLength: 4 }),
    lifecycle: fc.constantFrom<SnapshotLifecycle>('suspended', 'completed', 'failed', 'cancelled'),
  })
  .map((g): RunSnapshotState => {
    const messages: Message[] = g.prompt.map((p, i) => ({
      id: `${g.runId}/t0/m${i}`,
      role: p.role,
      parts: [{ type: 'text', text: p.text }],
    }));
    g.turns.forEach((turn, index) => {
      const t = index + 1;
      const parts: Part[] = turn.text === undefined ? [] : [{ type: 'text', text: turn.text }];
      turn.calls.forEach((c, k) =>
        parts.push({
          type: 'tool_call',
          callId: `${g.runId}/t${t}/k${k}`,
          toolName: c.toolName,
          argumentsJson: c.args,
        }),
      );
      messages.push({ id: `${g.runId}/t${t}/m0`, role: 'assistant', parts });
      if (turn.calls.length > 0) {
        messages.push({
          id: `${g.runId}/t${t}/m1`,
          role: 'tool',
          parts: turn.calls.map((c, k) => ({
            type: 'tool_result',
            callId: `${g.runId}/t${t}/k${k}`,
            toolName: c.toolName,
            status: c.ok ? 'ok' : 'error',
            resultJson: c.result,
          })),
        });
      }
    });
    const completedTurns = g.turns.length;
    return {
      runId: g.runId,
      definition: g.definition,
      model: g.model,
      turnLimit: completedTurns + g.extraTurnLimit,
      completedTurns,
      messages,
      planIdentity: {
        components: sortComponents(g.components),
        toolPlanId: g.toolPlanId,
        compatibilityIdentity: g.compatibilityIdentity,
        fingerprint: Buffer.from(g.fingerprint).toString('hex'),
      },
      usedInteractionIds: [...g.interactionIds].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
      lastSequence: Math.min(Number.MAX_SAFE_INTEGER, 1 + 2 * completedTurns + g.extraSequence),
      lifecycle: g.lifecycle,
    };
  });

/** The states both the test process and the child processes encode (same seed → same states). */
export const CROSS_PROCESS_SEED = 20_070;
export const crossProcessStates = (): RunSnapshotState[] => [
  validState(),
  ...fc.sample(validStateArb, { seed: CROSS_PROCESS_SEED, numRuns: 25 }),
];
