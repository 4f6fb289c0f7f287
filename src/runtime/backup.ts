/**
 * `loopx backup-state --execute` with its capture profile: the runtime's part is admission. A
 * quiescent backup closes admission to the root (a durable gate every writer entry honours, held by
 * this process, so its death reopens it), waits up to the quiesce timeout for running work to drain,
 * captures against that one epoch and reopens admission whatever happened. Online and
 * crash-consistent backups leave admission alone (crash-consistent proves the root stopped itself).
 * What was achieved is the backup producer's evidence, never this layer's claim.
 */
import { create, formatProfileConflict, type BackupPlan, type BackupResult, type CreateOptions } from '../backup/index.js';
import { closeAdmission } from './admission.js';

export interface ProfiledCreateOptions extends CreateOptions {
  /** Quiescent: how long running work may take to drain (default 30 s). */
  readonly quiesceTimeoutMs?: number;
}

export const DEFAULT_QUIESCE_TIMEOUT_MS = 30_000;

export async function createBackupWithProfile(p: BackupPlan, options: ProfiledCreateOptions = {}): Promise<BackupResult> {
  const { quiesceTimeoutMs, ...rest } = options;
  if (rest.format === 'v0' && (rest.profile !== undefined || rest.requireProfile === true)) throw formatProfileConflict();
  if (rest.profile !== 'quiescent') return create(p, rest);
  const closed = await closeAdmission(p.root, { timeoutMs: quiesceTimeoutMs ?? DEFAULT_QUIESCE_TIMEOUT_MS });
  try {
    return await create(p, { ...rest, quiescence: { epoch: closed.epoch, drained: closed.drained, waited_ms: Math.round(closed.waitedMs) } });
  } finally {
    closed.release();
  }
}
