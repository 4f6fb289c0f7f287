/**
 * Snapshot payload codec vs the naive baseline on the same state object: a run of 1,000
 * messages totalling about 1 MiB of content (text, tool-call arguments and tool results with
 * nested canonical JSON). Encode is measured with its validation and the payload SHA-256;
 * decode with its full validation (including the canonical re-encoding check) and the SHA-256
 * an importer takes of the bytes. The baselines do no validation at all.
 *
 * Decode (2026-12-03, shared 2-core box at load 10–16, so wall-clock ratios swing widely):
 * before — one pass to peek the framing, the pre-scan, protobuf-es fromBinary, the unknown-field
 * walk, the mapping, validation, then the wire-canonical walk — 1.59×, 3.25×, 3.53× wall-clock;
 * by CPU time (process.cpuUsage, same loop) 1.93×, 2.04×, 2.08×. After — one fused pass
 * (src/snapshot/wire-decode.ts) that decodes canonical payloads straight to state with every
 * pre-validation check, then validation — 1.91×, 1.99×, 3.36× wall-clock in the same interleaved
 * runs; by CPU time 1.03×, 1.19×, 1.43× (decode alone ~1.1 ms, validation ~3 ms of which the
 * canonical-JSON scan of tool arguments/results is most, SHA-256 0.8 ms; baseline ~4.5 ms).
 */
import { canonicalJson } from '../src/core/canonical-json.js';
import { sha256Hex } from '../src/core/digest.js';
import {
  decodeSnapshot,
  encodeSnapshot,
  snapshotDigest,
  type Message,
  type RunSnapshotState,
} from '../src/snapshot/index.js';
import { measurePaired, type BenchFigure, type PairedSide } from './harness.js';

const MESSAGES = 1_000;

/** Deterministic filler text (mixed ASCII and a little non-ASCII, as real transcripts are). */
function prose(seed: number, bytes: number): string {
  const words = [
    'the',
    'agent',
    'reads',
    'a',
    'file',
    'and',
    'writes',
    'its',
    'plan',
    'café',
    'naïve',
    'résumé',
    'result',
    'tool',
    'call',
    'turn',
  ];
  let out = '';
  let x = seed * 2654435761;
  while (Buffer.byteLength(out) < bytes) {
    x = (x * 1103515245 + 12345) >>> 0;
    out += words[x % words.length]! + (x % 13 === 0 ? '.\n' : ' ');
  }
  return out;
}

function jsonPayload(seed: number, bytes: number): string {
  const rows: unknown[] = [];
  let i = 0;
  let text = '';
  while (Buffer.byteLength(text) < bytes) {
    rows.push({
      id: seed * 1000 + i,
      path: `src/module_${i}.ts`,
      score: (i * 0.37) % 1,
      tags: ['a', 'b', `t${i}`],
      note: prose(seed + i, 48),
    });
    i++;
    text = canonicalJson({ rows, ok: true, seed });
  }
  return text;
}

/** 250 turns × (assistant with a tool call, tool result, assistant text, user text) = 1,000 messages. */
export function benchState(): RunSnapshotState {
  const runId = 'run_bench_0001';
  const messages: Message[] = [];
  for (let t = 1; messages.length < MESSAGES; t++) {
    const callId = `${runId}/t${t}/k0`;
    messages.push({
      id: `${runId}/t${t}/m0`,
      role: 'assistant',
      parts: [
        { type: 'text', text: prose(t, 400) },
        {
          type: 'tool_call',
          callId,
          toolName: 'repo.search',
          argumentsJson: canonicalJson({ query: prose(t + 1, 200), limit: 20, filters: { lang: 'ts', since: t } }),
        },
      ],
    });
    messages.push({
      id: `${runId}/t${t}/m1`,
      role: 'tool',
      parts: [{ type: 'tool_result', callId, toolName: 'repo.search', status: 'ok', resultJson: jsonPayload(t, 1500) }],
    });
    messages.push({ id: `${runId}/t${t}/m2`, role: 'assistant', parts: [{ type: 'text', text: prose(t + 2, 1000) }] });
    messages.push({ id: `${runId}/t${t}/m3`, role: 'user', parts: [{ type: 'text', text: prose(t + 3, 1000) }] });
  }
  const turns = MESSAGES / 4;
  return {
    runId,
    definition: { id: 'bench.agent', version: '1.0.0' },
    model: { provider: 'scripted', modelId: 'scripted-1' },
    turnLimit: 1_000,
    completedTurns: turns,
    messages,
    planIdentity: {
      components: [
        {
          kind: 'provider',
          name: 'scripted',
          module: 'loopx/engine/providers/scripted',
          version: '0.1.0',
          sourceSha256: sha256Hex('p'),
        },
        {
          kind: 'static_tool',
          name: 'repo.search',
          module: 'bench/tools',
          version: '0.1.0',
          sourceSha256: sha256Hex('t'),
        },
      ],
      toolPlanId: 'bench.plan.v1',
      compatibilityIdentity: 'bench/1',
      fingerprint: sha256Hex('fingerprint'),
    },
    usedInteractionIds: [],
    lastSequence: 1 + 4 * turns,
    lifecycle: 'suspended',
  };
}

const contentBytes = (s: RunSnapshotState): number =>
  s.messages.reduce(
    (n, m) =>
      n +
      m.parts.reduce(
        (k, p) =>
          k + Buffer.byteLength(p.type === 'text' ? p.text : p.type === 'tool_call' ? p.argumentsJson : p.resultJson),
        0,
      ),
    0,
  );

export async function run(): Promise<BenchFigure[]> {
  const state = benchState();
  const bytes = encodeSnapshot(state);
  const json = JSON.stringify(state);
  const mib = (n: number): string => `${(n / 1024 / 1024).toFixed(2)} MiB`;
  const sizes = `content ${mib(contentBytes(state))}, payload ${mib(bytes.byteLength)}, JSON ${mib(Buffer.byteLength(json))}`;
  // Steady state for both sides: the JIT warms the JavaScript codec far more slowly than native JSON.
  const opts = { iterations: 10, samples: 15, warmup: 40 };

  // Each loopx side and its baseline in alternating samples, so a load spike falls on both sides.
  const enc = await measurePaired(
    () => snapshotDigest(encodeSnapshot(state)),
    () => sha256Hex(JSON.stringify(state)),
    opts,
  );
  const dec = await measurePaired(
    () => {
      snapshotDigest(bytes);
      return decodeSnapshot(bytes);
    },
    () => {
      sha256Hex(json);
      return JSON.parse(json) as unknown;
    },
    opts,
  );
  const cpu = (p: { a: PairedSide; b: PairedSide }): string =>
    `CPU per call ${(p.a.cpu / 1000).toFixed(2)} ms vs ${(p.b.cpu / 1000).toFixed(2)} ms (${(p.a.cpu / p.b.cpu).toFixed(2)}×)`;
  const [encode, encodeBaseline, decode, decodeBaseline] = [enc.a.seconds, enc.b.seconds, dec.a.seconds, dec.b.seconds];

  return [
    {
      name: `snapshot encode+validate+digest (${MESSAGES.toLocaleString('en')} messages)`,
      seconds: encode,
      baselineName: 'JSON.stringify + SHA-256',
      baselineSeconds: encodeBaseline,
      target: '≤ 2×',
      ratioKind: 'cost',
      extra: `${sizes}\n  ${cpu(enc)}`,
    },
    {
      name: `snapshot digest+decode+validate (${MESSAGES.toLocaleString('en')} messages)`,
      seconds: decode,
      baselineName: 'SHA-256 + JSON.parse',
      baselineSeconds: decodeBaseline,
      target: '≤ 1.5×',
      ratioKind: 'cost',
      extra: `decode includes every fail-closed check and the wire-level canonical-encoding check\n  ${cpu(dec)}`,
    },
  ];
}
