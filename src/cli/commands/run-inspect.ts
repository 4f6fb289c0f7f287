/**
 * `loopx run inspect <file> [--verify]` — decode and validate a signed snapshot, and render it.
 * With --verify a claim that does not verify is a refusal — exit 3 with `run import`'s one
 * secret-safe `snapshot_claim_invalid` — so a script that trusts the exit code never accepts a
 * forged claim.
 */
import type { Command } from 'commander';
import { toHex } from '../../core/index.js';
import { emit, runtime, withClaimChecker, type GlobalOptions } from '../context.js';
import { snapshotToJson } from './snapshot-json.js';
import { readSnapshotFile } from './snapshot-file.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  run
    .command('inspect <file>')
    .description(
      'validate a snapshot file and show it (as JSON with --json); --verify checks its claim against your run authority',
    )
    .option(
      '--verify',
      'check the claim against the local run authority (changes nothing; exit 3 when it does not verify)',
    )
    .action(async (file: string, o: { verify?: boolean }) => {
      const g = globals();
      const bytes = await readSnapshotFile(file);
      const { claimInvalid, decodeEnvelope } = await runtime();
      const env = decodeEnvelope(bytes);
      const state = env.state;
      const verification = o.verify ? await withClaimChecker(g, (engine) => engine.verifySnapshot(bytes)) : undefined;
      if (verification && !verification.valid) throw claimInvalid();
      const doc = {
        format: env.format,
        payload_sha256: toHex(env.payloadSha256),
        payload_bytes: env.payload.byteLength,
        claim: { scope_id: toHex(env.claim.scopeId), key_generation: env.claim.keyGeneration },
        ...(verification
          ? { verification: { valid: verification.valid, record_state: verification.record_state } }
          : {}),
        snapshot: snapshotToJson(state),
      };
      emit(g, doc, (d, out) => {
        const s = state;
        out.line(
          `snapshot of run ${s.runId}: ${s.lifecycle}, ${s.completedTurns}/${s.turnLimit} turns, last sequence ${s.lastSequence}`,
        );
        out.line(`  agent ${s.definition.id}@${s.definition.version}, model ${s.model.provider}/${s.model.modelId}`);
        out.line(`  ${s.messages.length} messages, ${s.usedInteractionIds.length} used interaction ids`);
        out.line(
          `  tool plan ${s.planIdentity.toolPlanId}, ${s.planIdentity.components.length} components, compatibility ${s.planIdentity.compatibilityIdentity || '(empty: inspection only)'}`,
        );
        out.line(`  plan fingerprint ${s.planIdentity.fingerprint}`);
        out.line(`  payload ${d.payload_bytes} bytes, sha256 ${d.payload_sha256}`);
        out.line(`  claim: scope ${d.claim.scope_id.slice(0, 16)}…, key generation ${d.claim.key_generation}`);
        if (verification)
          out.line(
            `  verified against your run authority: record ${verification.record_state}${verification.record_state === 'SUSPENDED' ? ' (importable)' : ''}`,
          );
      });
    });
}
