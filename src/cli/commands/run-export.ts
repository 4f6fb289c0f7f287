/** `loopx run export <id> --out <file>` — writes the validated v1alpha2 payload, never over an existing file. */
import type { Command } from 'commander';
import { writeFileDurable } from '../../core/fs.js';
import { emit, withEngine, type GlobalOptions } from '../context.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  run
    .command('export <id>')
    .description('export a suspended or finished run as a snapshot payload')
    .requiredOption('--out <file>', 'where to write the snapshot (must not exist)')
    .action(async (id: string, o: { out: string }) => {
      const g = globals();
      const snap = await withEngine(g, (engine) => engine.exportSnapshot(id));
      writeFileDurable(o.out, snap.bytes, { exclusive: true });
      const doc = {
        run_id: snap.state.runId,
        lifecycle: snap.state.lifecycle,
        last_sequence: snap.state.lastSequence,
        completed_turns: snap.state.completedTurns,
        payload_sha256: snap.sha256,
        payload_bytes: snap.bytes.byteLength,
      };
      emit(g, doc, (d, out) => out.line(`exported run ${d.run_id} (${d.lifecycle}, last sequence ${d.last_sequence}): ${d.payload_bytes} bytes, sha256 ${d.payload_sha256}`));
    });
}
