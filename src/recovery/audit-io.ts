/**
 * A recovery audit's bytes: as written (two-space JSON, final newline), bounded for publication,
 * and read back with its content address re-checked.
 */
import { join } from 'node:path';
import { notFound, readRegularFileOnce, rejected } from '../core/index.js';
import { AUDIT_FILE, AUDIT_SCHEMA, recoveryIdOf, type RecoveryAudit } from './audit.js';
import { AUDIT_CODES } from './codes.js';
import { decodeManifestBytes } from './inputs.js';
import { RECOVERY_LIMITS } from './limits.js';
import { capacityRefusal } from './members.js';

/** The audit's bytes as written to disk. */
export const auditBytes = (audit: RecoveryAudit): Buffer => Buffer.from(`${JSON.stringify(audit, null, 2)}\n`, 'utf8');

/**
 * The bytes verify may publish: at most 16 MiB, the most `audit show` reads back — so every
 * published audit can be shown. Over it, the whole verification is refused.
 */
export function publishableAuditBytes(audit: RecoveryAudit): Buffer {
  const bytes = auditBytes(audit);
  if (bytes.length > RECOVERY_LIMITS.savedAuditBytes)
    throw capacityRefusal('auditBytes', bytes.length, RECOVERY_LIMITS.savedAuditBytes);
  return bytes;
}

/** Read `<destination>/recovery-audit.json` back: the exact bytes, decoded, content address re-checked. */
export function showAudit(destination: string): { bytes: Buffer; audit: RecoveryAudit } {
  let bytes: Buffer;
  try {
    const read = readRegularFileOnce(join(destination, AUDIT_FILE), RECOVERY_LIMITS.savedAuditBytes);
    if (read === null) throw new Error('absent');
    bytes = Buffer.from(read.buffer, read.byteOffset, read.byteLength);
  } catch {
    throw notFound(AUDIT_CODES.notFound, 'There is no readable recovery audit in that destination.', {
      nextAction: 'pass the destination a verify --execute created',
    });
  }
  let doc: unknown;
  try {
    doc = decodeManifestBytes(bytes);
  } catch {
    doc = undefined;
  }
  const audit = doc as RecoveryAudit | undefined;
  if (
    !audit ||
    typeof audit !== 'object' ||
    audit.schema_version !== AUDIT_SCHEMA ||
    typeof audit.recovery_id !== 'string' ||
    audit.execution_authority_granted !== false
  ) {
    throw rejected(AUDIT_CODES.invalid, 'The recovery audit is not a loopx_state_recovery_audit_v0 document.', {
      nextAction: 'run verify --execute again into a new destination',
    });
  }
  if (recoveryIdOf(audit) !== audit.recovery_id || !auditBytes(audit).equals(bytes)) {
    throw rejected(
      AUDIT_CODES.digestMismatch,
      'The recovery audit does not match its content address: it was changed after it was written.',
      {
        nextAction: 'run verify --execute again into a new destination',
      },
    );
  }
  return { bytes, audit };
}
