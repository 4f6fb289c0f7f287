/** Reading a snapshot file under the envelope's size bound, with typed refusals. */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { conflict, LoopxError, notFound, rejected } from '../../core/index.js';
import { SNAPSHOT_LIMITS } from '../../snapshot/index.js';

export function readSnapshotFile(file: string): Uint8Array {
  let size: number;
  try {
    const st = statSync(file);
    if (!st.isFile()) throw rejected('snapshot_not_a_file', 'The snapshot path is not a regular file.', { nextAction: 'pass the file written by loopx run export' });
    size = st.size;
  } catch (e) {
    if (e instanceof LoopxError) throw e;
    throw notFound('snapshot_file_missing', 'The snapshot file does not exist.', { nextAction: 'pass the path written by loopx run export' });
  }
  if (size > SNAPSHOT_LIMITS.maxPayloadBytes + 1024) throw rejected('envelope_oversized', 'The snapshot file is larger than any snapshot can be.');
  return new Uint8Array(readFileSync(file));
}

/** Check an output path before anything is signed or recorded: its directory exists and the name is free. */
export function checkOutputPath(file: string): void {
  let dir;
  try {
    dir = statSync(dirname(resolve(file)));
  } catch {
    throw notFound('output_dir_missing', 'The directory for --out does not exist.', { nextAction: 'create the directory, or choose another --out' });
  }
  if (!dir.isDirectory()) throw rejected('output_dir_missing', 'The parent of --out is not a directory.', { nextAction: 'choose another --out' });
  if (existsSync(file)) throw conflict('destination_occupied', 'The output file already exists; loopx never overwrites it.', { nextAction: 'choose a new output path' });
}
