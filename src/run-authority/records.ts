/**
 * The one encoding of a durable run record (`loopx.run-authority.record/v1`): every provider
 * stores these bytes and reads them back through `decodeRecord`, so a record round-trips the same
 * way everywhere and a damaged one is `authority_record_corrupt` — never treated as absent.
 */
import { recordCorrupt } from './errors.js';
import type { RunRecord, RunRecordState } from './contract.js';

const RECORD_SCHEMA = 'loopx.run-authority.record/v1';
const STATES: readonly RunRecordState[] = ['ACTIVE', 'SUSPENDED', 'IMPORTING', 'TERMINAL'];

export function encodeRecord(record: RunRecord): string {
  const doc = {
    schema: RECORD_SCHEMA,
    run_id: record.runId,
    state: record.state,
    transition_generation: record.transitionGeneration,
    owner_root: record.ownerRoot,
    ...(record.payloadSha256 !== undefined ? { payload_sha256: record.payloadSha256 } : {}),
    ...(record.claimHmac !== undefined ? { claim_hmac: record.claimHmac } : {}),
    ...(record.keyGeneration !== undefined ? { key_generation: record.keyGeneration } : {}),
    ...(record.claimGeneration !== undefined ? { claim_generation: record.claimGeneration } : {}),
    ...(record.lastSequence !== undefined ? { last_sequence: record.lastSequence } : {}),
    updated_at: record.updatedAt,
  };
  return `${JSON.stringify(doc)}\n`;
}

export function decodeRecord(runId: string, raw: Uint8Array | string): RunRecord {
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(typeof raw === 'string' ? raw : Buffer.from(raw).toString('utf8')) as Record<string, unknown>;
  } catch {
    throw recordCorrupt(runId, 'not JSON');
  }
  if (
    doc.schema !== RECORD_SCHEMA ||
    doc.run_id !== runId ||
    !STATES.includes(doc.state as RunRecordState) ||
    !Number.isSafeInteger(doc.transition_generation) ||
    typeof doc.owner_root !== 'string'
  ) {
    throw recordCorrupt(runId, 'malformed');
  }
  return {
    runId,
    state: doc.state as RunRecordState,
    transitionGeneration: doc.transition_generation as number,
    ownerRoot: doc.owner_root as string,
    ...(typeof doc.payload_sha256 === 'string' ? { payloadSha256: doc.payload_sha256 } : {}),
    ...(typeof doc.claim_hmac === 'string' ? { claimHmac: doc.claim_hmac } : {}),
    ...(typeof doc.key_generation === 'number' ? { keyGeneration: doc.key_generation } : {}),
    ...(typeof doc.claim_generation === 'number' ? { claimGeneration: doc.claim_generation } : {}),
    ...(typeof doc.last_sequence === 'number' ? { lastSequence: doc.last_sequence } : {}),
    updatedAt: String(doc.updated_at),
  };
}
