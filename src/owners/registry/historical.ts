/**
 * The registry's recovery-contract read side: decode `registry.json` from a COPY of a root.
 * Read-only: no lock file, no directory, no write, no authority — the result is history.
 */
import { join } from 'node:path';
import { lstatSync } from 'node:fs';
import { isLoopxError } from '../../core/index.js';
import { LAYOUT } from '../layout.js';
import { exactRead } from './codec.js';
import type { RegistryFindingCode, RegistryHistoricalRead } from './contract.js';
import { readRegistryBytes, unreadable } from './file.js';

const CODES: readonly RegistryFindingCode[] = ['registry_unknown_schema', 'registry_malformed', 'registry_unreadable'];

const isDirectory = (path: string): boolean => {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
};

export function readHistoricalCopy(copiedRootDir: string): RegistryHistoricalRead {
  try {
    if (!isDirectory(copiedRootDir)) throw unreadable('the copied root is not a directory');
    return { ok: true, read: exactRead(readRegistryBytes(join(copiedRootDir, LAYOUT.registry))), findings: [] };
  } catch (e) {
    if (!isLoopxError(e) || !CODES.includes(e.code as RegistryFindingCode)) throw e;
    return {
      ok: false,
      findings: [
        {
          code: e.code as RegistryFindingCode,
          severity: 'error',
          subject: LAYOUT.registry,
          next_action: e.nextAction ?? 'restore registry.json from a backup',
        },
      ],
    };
  }
}
