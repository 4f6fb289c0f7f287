/**
 * The file-backed machine configuration store under a runtime root:
 *
 *   machine/configuration.json                                  the document
 *   machine/configuration/transactions/<transaction_id>.json    receipts (never overwritten)
 *   machine/configuration/transactions/<id>.intent.json         an apply in flight
 *   locks/machine-configuration.lock                            flock held across apply
 *
 * Apply order (each step durable): intent → configuration → receipt → drop intent. Crash points
 * for tests: config.apply.after_intent, config.apply.after_configuration_write,
 * config.apply.after_receipt. Reads take no lock.
 */
import { mkdirSync, readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import {
  rejected,
  type LoopxError,
  faultPoint,
  withExclusiveLock,
  fsyncDir,
  writeFileDurable,
  readRegularFileOnce,
} from '../../core/index.js';
import { assertRuntimeRoot, LAYOUT } from '../layout.js';
import {
  checkRevision,
  CONFIG_MAX_BYTES,
  decodeIntent,
  decodeReceipt,
  encodeIntent,
  encodeReceipt,
  exactRead,
  makeIntent,
  planApply,
  readbackFailed,
  receiptFromIntent,
  replayedReceipt,
  requestDigest,
  toRead,
  TRANSACTION_ID,
  type ApplyIntent,
} from './codec.js';
import type { ConfigExactRead, ConfigStore, TransactionReceipt } from './contract.js';

export const TRANSACTIONS_DIR = join('machine', 'configuration', 'transactions');
const INTENT = /^([A-Za-z0-9][A-Za-z0-9_-]{0,127})\.intent\.json$/;

const unreadable = (what: string): LoopxError =>
  rejected('config_unreadable', `A machine configuration file cannot be read: ${what}.`, {
    nextAction: 'replace the path with a regular file (restore it from a backup)',
  });

/** Read a path's bytes exactly once: `null` only for a confirmed absence (ENOENT). */
export function readOnce(path: string): Uint8Array | null {
  return readRegularFileOnce(path, CONFIG_MAX_BYTES, { unreadable, tooLarge: 'it exceeds 16 MiB' });
}

export function openFileConfigStore(root: string): ConfigStore {
  assertRuntimeRoot(root);
  const configPath = join(root, LAYOUT.machineConfiguration);
  const txDir = join(root, TRANSACTIONS_DIR);
  const intentPath = (id: string) => join(txDir, `${id}.intent.json`);

  const readExact = (): ConfigExactRead => exactRead(readOnce(configPath));
  const receipt = (transactionId: string): TransactionReceipt | undefined => {
    if (!TRANSACTION_ID.test(transactionId)) return undefined;
    const bytes = readOnce(join(txDir, `${transactionId}.json`));
    return bytes === null ? undefined : decodeReceipt(bytes, transactionId);
  };

  const dropIntent = (id: string): void => {
    unlinkSync(intentPath(id));
    fsyncDir(txDir);
  };

  /** Read back, publish the receipt (never overwriting), then drop the intent. */
  const finish = (intent: ApplyIntent): TransactionReceipt => {
    if (readExact().revision !== intent.applied_revision) throw readbackFailed();
    const applied = receiptFromIntent(intent);
    writeFileDurable(join(txDir, `${intent.transaction_id}.json`), encodeReceipt(applied), { exclusive: true });
    faultPoint('config.apply.after_receipt');
    dropIntent(intent.transaction_id);
    return applied;
  };

  /** Settle an apply a crash interrupted: it is the last write, so the revision is its prior or its result. */
  const resolvePending = (): void => {
    for (const name of readdirSync(txDir)) {
      const id = INTENT.exec(name)?.[1];
      if (id === undefined) continue;
      const bytes = readOnce(intentPath(id));
      if (bytes === null) continue;
      const intent = decodeIntent(bytes, id);
      if (receipt(id) !== undefined) dropIntent(id);
      else if (readExact().revision === intent.applied_revision) finish(intent);
      else dropIntent(id);
    }
  };

  return {
    read: () => toRead(readExact()),
    readExact,
    receipt,
    apply(tx) {
      const digest = requestDigest(tx);
      return withExclusiveLock(join(root, 'locks'), 'machine-configuration.lock', () => {
        mkdirSync(txDir, { recursive: true, mode: 0o700 });
        resolvePending();
        const existing = receipt(tx.transactionId);
        if (existing) return replayedReceipt(existing, digest);
        const current = readExact();
        checkRevision(current.revision, tx.expectedRevision);
        const plan = planApply(current, tx);
        const intent = makeIntent(tx.transactionId, digest, current.revision, plan);
        writeFileDurable(intentPath(tx.transactionId), encodeIntent(intent));
        faultPoint('config.apply.after_intent');
        writeFileDurable(configPath, plan.bytes);
        faultPoint('config.apply.after_configuration_write');
        return finish(intent);
      });
    },
  } satisfies ConfigStore;
}
