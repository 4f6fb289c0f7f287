/** `loopx run export <id> --out <file>` — the signed envelope, never written over an existing file. */
import type { Command } from 'commander';
import { toHex, writeFileDurable } from '../../core/index.js';
import { emit, withEngine, type GlobalOptions } from '../context.js';
import { checkOutputPath } from './snapshot-file.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  run
    .command('export <id>')
    .description('export a suspended or finished run as a snapshot signed by your run authority')
    .requiredOption('--out <file>', 'where to write the snapshot (must not exist)')
    .action(async (id: string, o: { out: string }) => {
      const g = globals();
      checkOutputPath(o.out);
      const signed = await withEngine(g, (engine) => engine.exportEnvelope(id));
      writeFileDurable(o.out, signed.bytes, { exclusive: true });
      const doc = {
        format: signed.envelope.format,
        run_id: signed.state.runId,
        last_sequence: signed.state.lastSequence,
        lifecycle: signed.state.lifecycle,
        payload_sha256: signed.payloadSha256,
        scope_id: toHex(signed.envelope.claim.scopeId),
        key_generation: signed.envelope.claim.keyGeneration,
      };
      emit(g, doc, (d, out) =>
        out.line(
          `exported run ${d.run_id} (${d.lifecycle}, last sequence ${d.last_sequence}), signed by scope ${d.scope_id.slice(0, 16)}… generation ${d.key_generation}; payload sha256 ${d.payload_sha256}`,
        ),
      );
    });
}
