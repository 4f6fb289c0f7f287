/** Reading a snapshot file under the envelope's size bound, with typed refusals. */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { destinationOccupied, LoopxError, notFound, rejected } from '../../core/index.js';
import { runtime } from '../context.js';

export async function readSnapshotFile(file: string): Promise<Uint8Array> {
  let size: number;
  try {
    const st = statSync(file);
    if (!st.isFile())
      throw rejected('snapshot_not_a_file', 'The snapshot path is not a regular file.', {
        nextAction: 'pass the file written by loopx run export',
      });
    size = st.size;
  } catch (e) {
    if (e instanceof LoopxError) throw e;
    throw notFound('snapshot_file_missing', 'The snapshot file does not exist.', {
      nextAction: 'pass the path written by loopx run export',
    });
  }
  const { ENVELOPE_MAX_BYTES, envelopeOversized } = await runtime();
  if (size > ENVELOPE_MAX_BYTES) throw envelopeOversized();
  return new Uint8Array(readFileSync(file));
}

const outputDirMissing = (why: string): LoopxError =>
  notFound('output_dir_missing', `The directory for --out ${why}.`, {
    nextAction: 'create the directory, or choose another --out',
  });

/** Check an output path before anything is signed or recorded: its directory exists and the name is free. */
export function checkOutputPath(file: string): void {
  let dir;
  try {
    dir = statSync(dirname(resolve(file)));
  } catch {
    throw outputDirMissing('does not exist');
  }
  if (!dir.isDirectory()) throw outputDirMissing('is not a directory');
  if (existsSync(file)) throw destinationOccupied();
}
