/**
 * In-memory reference configuration store: the same contract over one byte buffer and a map of
 * encoded receipts. `initialBytes` seeds arbitrary (even invalid) content for tests.
 */
import {
  checkRevision,
  decodeReceipt,
  encodeReceipt,
  exactRead,
  makeIntent,
  planApply,
  readbackFailed,
  receiptFromIntent,
  replayedReceipt,
  requestDigest,
  toRead,
} from './codec.js';
import type { ConfigStore } from './contract.js';

export function memoryConfigStore(initialBytes: Uint8Array | null = null): ConfigStore {
  let stored: Uint8Array | null = initialBytes === null ? null : new Uint8Array(initialBytes);
  const receipts = new Map<string, Uint8Array>();
  const readExact = () => exactRead(stored);
  const receipt = (transactionId: string) => {
    const bytes = receipts.get(transactionId);
    return bytes === undefined ? undefined : decodeReceipt(bytes, transactionId);
  };

  return {
    read: () => toRead(readExact()),
    readExact,
    receipt,
    apply(tx) {
      const digest = requestDigest(tx);
      const existing = receipt(tx.transactionId);
      if (existing) return replayedReceipt(existing, digest);
      const current = readExact();
      checkRevision(current.revision, tx.expectedRevision);
      const plan = planApply(current, tx);
      stored = plan.bytes;
      if (readExact().revision !== plan.appliedRevision) throw readbackFailed();
      const applied = receiptFromIntent(makeIntent(tx.transactionId, digest, current.revision, plan));
      receipts.set(tx.transactionId, encodeReceipt(applied));
      return applied;
    },
  } satisfies ConfigStore;
}
