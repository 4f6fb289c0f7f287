/**
 * `loopx demo` (what `npm start` runs): the main job on the embedded default — a scripted agent
 * run in a fresh root that works for two turns, suspends at the boundary, is exported as a
 * validated snapshot and inspected back.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { writeFileDurable } from '../../core/index.js';
import { emit, resolveRoot, runtime, withEngine, type GlobalOptions } from '../context.js';
import { snapshotToJson } from './snapshot-json.js';

function exampleAgentPath(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++, dir = dirname(dir)) {
    const candidate = join(dir, 'examples', 'agents', 'researcher.json');
    try {
      readFileSync(candidate);
      return candidate;
    } catch {
      /* keep walking up to the package root */
    }
  }
  throw new Error('examples/agents/researcher.json is missing from the package');
}

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command('demo')
    .description('run a scripted agent that suspends, export its snapshot and inspect it in the runtime root')
    .action(async () => {
      const g = globals();
      const root = resolveRoot(g);
      const { decodeEnvelope, parseAgentDefinition } = await runtime();
      await withEngine(g, async (engine) => {
        const agent = parseAgentDefinition(JSON.parse(readFileSync(exampleAgentPath(), 'utf8')));
        const started = await engine.start(agent, {
          input: 'Add 2 and 40, then record the answer.',
          suspendAfterTurns: 2,
        });
        const snap = await engine.exportEnvelope(started.run_id);
        mkdirSync(join(root, 'exports'), { recursive: true, mode: 0o700 });
        const relative = join('exports', `${started.run_id}.snapshot`);
        const file = join(root, relative);
        writeFileDurable(file, snap.bytes, { exclusive: true });
        const decoded = decodeEnvelope(new Uint8Array(readFileSync(file))).state;
        const verified = await engine.verifySnapshot(new Uint8Array(readFileSync(file)));
        const doc = {
          run: {
            run_id: started.run_id,
            status: started.status,
            completed_turns: started.completed_turns,
            last_sequence: started.last_sequence,
          },
          snapshot: {
            file_in_root: relative,
            payload_sha256: snap.payloadSha256,
            envelope_bytes: snap.bytes.byteLength,
            lifecycle: decoded.lifecycle,
            messages: decoded.messages.length,
            claim_verified: verified.valid,
            key_generation: snap.envelope.claim.keyGeneration,
          },
          inspected: snapshotToJson(decoded),
        };
        emit(g, doc, (d, out) => {
          out.line(`1. started run ${d.run.run_id} of ${agent.id}@${agent.version} (scripted model)`);
          out.line(
            `2. it worked ${d.run.completed_turns} turns and ${d.run.status} at the turn boundary (last event sequence ${d.run.last_sequence})`,
          );
          out.line(
            `3. exported a validated v1alpha2 snapshot, signed by your run authority (key generation ${d.snapshot.key_generation}), to ${d.snapshot.file_in_root} in the root: ${d.snapshot.envelope_bytes} bytes, payload sha256 ${d.snapshot.payload_sha256}`,
          );
          out.line(
            `4. inspected it back (claim ${d.snapshot.claim_verified ? 'verified' : 'NOT verified'}): ${d.snapshot.lifecycle}, ${d.snapshot.messages} messages:`,
          );
          for (const m of decoded.messages) {
            const summary = m.parts
              .map((p) =>
                p.type === 'text'
                  ? JSON.stringify(p.text.slice(0, 60))
                  : p.type === 'tool_call'
                    ? `call ${p.toolName}(${p.argumentsJson})`
                    : `result ${p.status} ${p.resultJson}`,
              )
              .join(' ');
            out.line(`   ${m.role.padEnd(9)} ${summary}`);
          }
          out.line('');
          out.hint(`Next: loopx run resume ${d.run.run_id}`);
          out.hint(`then: loopx run answer ${d.run.run_id} confirm-1 yes`);
        });
      });
    });
}
