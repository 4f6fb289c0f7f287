/**
 * Reconciliation of an uncertain effect under its ORIGINAL operation id (ARCHITECTURE.md
 * principle 6). It asks the external system, then settles through the journal: committed or
 * absent when the answer is certain, otherwise a visible hold. It never dispatches anything.
 */
import { isLoopxError } from '../../core/index.js';
import type { EffectJournal, EffectRecord, ReconcileObservation, ReconcileQuery, ReconcileResult } from './contract.js';
import { effectNotFound, notDispatched } from './errors.js';
import { checkId, isUncertain } from './rules.js';

type Primitives = Pick<EffectJournal, 'get' | 'settle' | 'holdUnknown'>;

const REASON = /^[a-z][a-z0-9_]{0,63}$/;

/** A query's answer, checked: anything malformed counts as "still unknown". */
function checked(o: unknown): ReconcileObservation {
  if (typeof o !== 'object' || o === null) return { status: 'unknown', reason: 'observation_malformed' };
  const obs = o as Record<string, unknown>;
  if (obs.status === 'committed' && 'receipt' in obs) return obs as ReconcileObservation;
  if (obs.status === 'absent') return obs as ReconcileObservation;
  if (obs.status === 'unknown' && typeof obs.reason === 'string' && REASON.test(obs.reason))
    return obs as ReconcileObservation;
  return { status: 'unknown', reason: 'observation_malformed' };
}

export async function reconcileEffect(
  journal: Primitives,
  operationId: string,
  query: ReconcileQuery,
): Promise<ReconcileResult> {
  checkId(operationId, 'operation_id');
  const e = await journal.get(operationId);
  if (e === undefined) throw effectNotFound(operationId);
  if (!isUncertain(e)) {
    if (e.outcome === 'pending') throw notDispatched(operationId);
    return { effect: e, resolution: 'already_settled' };
  }
  let observation: ReconcileObservation;
  try {
    observation = checked(await query(e));
  } catch {
    observation = { status: 'unknown', reason: 'query_failed' };
  }
  try {
    return await settleObservation(journal, e, observation);
  } catch (err) {
    // Someone else settled it while we were asking: their outcome stands; report it.
    if (isLoopxError(err) && err.code === 'effect_already_settled')
      return { effect: (await journal.get(operationId))!, resolution: 'already_settled' };
    throw err;
  }
}

async function settleObservation(
  journal: Primitives,
  e: EffectRecord,
  o: ReconcileObservation,
): Promise<ReconcileResult> {
  if (o.status === 'committed') {
    const { effect } = await journal.settle(e.operation_id, 'committed', { reconciled: true, observation: o.receipt });
    return { effect, resolution: 'committed' };
  }
  if (o.status === 'absent') {
    const { effect } = await journal.settle(e.operation_id, 'absent', {
      reconciled: true,
      observation: o.receipt ?? null,
    });
    return { effect, resolution: 'absent' };
  }
  if (e.outcome === 'pending') await journal.settle(e.operation_id, 'unknown', { reconciled: false, reason: o.reason });
  return { effect: await journal.holdUnknown(e.operation_id, o.reason), resolution: 'held' };
}
