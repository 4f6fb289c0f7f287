/** `loopx run inspect <file>` — decode and validate a snapshot, and render it. */
import { readFileSync, statSync } from 'node:fs';
import type { Command } from 'commander';
import { notFound, rejected } from '../../core/errors.js';
import { decodeSnapshot, snapshotDigest, SNAPSHOT_LIMITS } from '../../snapshot/index.js';
import { snapshotToJson } from './snapshot-json.js';
import { emit, type GlobalOptions } from '../context.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  run
    .command('inspect <file>')
    .description('validate a snapshot file and show it (as JSON with --json)')
    .action(async (file: string) => {
      const g = globals();
      let size: number;
      try {
        size = statSync(file).size;
      } catch {
        throw notFound('snapshot_file_missing', 'The snapshot file does not exist.', { nextAction: 'pass the path written by loopx run export' });
      }
      if (size > SNAPSHOT_LIMITS.maxPayloadBytes) throw rejected('snapshot_too_large', `The snapshot is larger than ${SNAPSHOT_LIMITS.maxPayloadBytes} bytes.`);
      const bytes = new Uint8Array(readFileSync(file));
      const state = decodeSnapshot(bytes);
      const doc = { payload_sha256: snapshotDigest(bytes), payload_bytes: bytes.byteLength, snapshot: snapshotToJson(state) };
      emit(g, doc, (d, out) => {
        const s = state;
        out.line(`snapshot of run ${s.runId}: ${s.lifecycle}, ${s.completedTurns}/${s.turnLimit} turns, last sequence ${s.lastSequence}`);
        out.line(`  agent ${s.definition.id}@${s.definition.version}, model ${s.model.provider}/${s.model.modelId}`);
        out.line(`  ${s.messages.length} messages, ${s.usedInteractionIds.length} used interaction ids`);
        out.line(`  tool plan ${s.planIdentity.toolPlanId}, ${s.planIdentity.components.length} components, compatibility ${s.planIdentity.compatibilityIdentity || '(empty: inspection only)'}`);
        out.line(`  plan fingerprint ${s.planIdentity.fingerprint}`);
        out.line(`  payload ${d.payload_bytes} bytes, sha256 ${d.payload_sha256}`);
      });
    });
}
