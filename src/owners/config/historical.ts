/**
 * The config owner's recovery-contract read side: decode the machine configuration and its
 * transaction receipts from a COPY of a root. Read-only: no lock file, no directory, no write,
 * no pending-intent resolution, no authority — the result is history. A copied directory that is
 * a link is unreadable (never followed out of the copy).
 */
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { isLoopxError } from '../../core/index.js';
import { LAYOUT } from '../layout.js';
import { decodeReceipt, exactRead } from './codec.js';
import type {
  ConfigExactRead,
  ConfigFinding,
  ConfigFindingCode,
  ConfigHistoricalRead,
  TransactionReceipt,
} from './contract.js';
import { readOnce, TRANSACTIONS_DIR } from './file.js';

const RECEIPT = /^([A-Za-z0-9][A-Za-z0-9_-]{0,127})\.json$/;
const INTENT = /^([A-Za-z0-9][A-Za-z0-9_-]{0,127})\.intent\.json$/;

/** 'dir' | 'absent' | 'other' for a path, without following a final link. */
function kindOf(path: string): 'dir' | 'absent' | 'other' {
  try {
    return lstatSync(path).isDirectory() ? 'dir' : 'other';
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
    return 'other';
  }
}

export function readHistoricalCopy(copiedRootDir: string): ConfigHistoricalRead {
  const findings: ConfigFinding[] = [];
  const add = (
    code: ConfigFindingCode,
    subject: string,
    next_action: string,
    severity: 'error' | 'warning' = 'error',
  ): void => {
    findings.push({ code, severity, subject, next_action });
  };
  const capture = <T>(subject: string, fn: () => T): T | undefined => {
    try {
      return fn();
    } catch (e) {
      if (!isLoopxError(e) || !e.code.startsWith('config_')) throw e;
      add(e.code as ConfigFindingCode, subject, e.nextAction ?? 'restore this file from a backup');
      return undefined;
    }
  };

  let configuration: ConfigExactRead | null = null;
  const receipts: TransactionReceipt[] = [];
  const machineDir = join(copiedRootDir, 'machine');
  const dirs = [copiedRootDir, machineDir, join(machineDir, 'configuration'), join(copiedRootDir, TRANSACTIONS_DIR)];
  const subjects = ['.', 'machine', 'machine/configuration', TRANSACTIONS_DIR];
  const kinds = dirs.map(kindOf);
  const linked = kinds.findIndex((k, i) => k === 'other' || (i === 0 && k === 'absent'));
  if (linked >= 0) {
    add('config_unreadable', subjects[linked]!, 'extract the backup again; a state directory must be a real directory');
    return { ok: false, configuration: null, receipts, findings };
  }

  configuration =
    capture(LAYOUT.machineConfiguration, () => exactRead(readOnce(join(copiedRootDir, LAYOUT.machineConfiguration)))) ??
    null;
  if (kinds[3] === 'dir') {
    const txDir = join(copiedRootDir, TRANSACTIONS_DIR);
    for (const name of readdirSync(txDir).sort()) {
      if (name.startsWith('.')) continue; // an interrupted durable write's temp file
      const subject = `${TRANSACTIONS_DIR}/${name}`;
      const intent = INTENT.exec(name);
      if (intent) {
        add(
          'config_transaction_pending',
          subject,
          'the transaction was in flight at capture; retry it on a live store',
          'warning',
        );
        continue;
      }
      const id = RECEIPT.exec(name)?.[1];
      if (id === undefined) {
        add('config_receipt_invalid', subject, 'remove the unknown entry from the transactions directory');
        continue;
      }
      const receipt = capture(subject, () => {
        const bytes = readOnce(join(txDir, name));
        return bytes === null ? undefined : decodeReceipt(bytes, id);
      });
      if (receipt) receipts.push(receipt);
    }
  }
  return { ok: !findings.some((f) => f.severity === 'error'), configuration, receipts, findings };
}
