/** Reading a snapshot file under the envelope's size bound, with typed refusals. */
import { readFileSync, statSync } from 'node:fs';
import { notFound, rejected } from '../../core/errors.js';
import { SNAPSHOT_LIMITS } from '../../snapshot/index.js';

export function readSnapshotFile(file: string): Uint8Array {
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    throw notFound('snapshot_file_missing', 'The snapshot file does not exist.', { nextAction: 'pass the path written by loopx run export' });
  }
  if (size > SNAPSHOT_LIMITS.maxPayloadBytes + 1024) throw rejected('envelope_oversized', 'The snapshot file is larger than any snapshot can be.');
  return new Uint8Array(readFileSync(file));
}
