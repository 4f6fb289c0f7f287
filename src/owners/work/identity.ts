/**
 * Store identity and incarnation of a work store: minted once at creation, checked on every open.
 * A store opened for another Goal, or whose incarnation or identity is not the one the caller
 * expects (a database swapped for other bytes), is refused — never served.
 */
import { randomBytes } from 'node:crypto';
import { rejected } from '../../core/index.js';
import { formatStoreIdentity } from '../../store/index.js';
import type { WorkStoreIdentity } from './contract.js';

export interface IdentityExpectations {
  readonly goal_id: string;
  /** Refuse unless the store's incarnation is exactly this (a caller that remembers which database it wrote). */
  readonly expected_incarnation?: string;
  /** Refuse unless the store's identity is exactly this. */
  readonly expected_store_identity?: string;
}

/** A new identity under a registered storage provider. */
export function mintIdentity(provider: string, goalId: string): WorkStoreIdentity {
  return {
    store_identity: formatStoreIdentity(provider, randomBytes(16).toString('hex')),
    incarnation: randomBytes(16).toString('hex'),
    goal_id: goalId,
  };
}

export function checkIdentity(actual: WorkStoreIdentity, expect: IdentityExpectations): void {
  if (actual.goal_id !== expect.goal_id) {
    throw rejected('work_store_goal_mismatch', 'This work store belongs to another Goal.', {
      nextAction: 'open the work database of the Goal it belongs to',
      details: { goal_id: expect.goal_id, store_goal_id: actual.goal_id },
    });
  }
  if (expect.expected_incarnation !== undefined && actual.incarnation !== expect.expected_incarnation) {
    throw foreignIncarnation(actual.incarnation, expect.expected_incarnation);
  }
  if (expect.expected_store_identity !== undefined && actual.store_identity !== expect.expected_store_identity) {
    throw rejected('work_store_identity_mismatch', 'The work store has another store identity than expected.', {
      nextAction: `inspect the Goal (a replaced store must be adopted, not opened): loopx goal show ${expect.goal_id}`,
      details: { store_identity: actual.store_identity, expected_store_identity: expect.expected_store_identity },
    });
  }
}

export const foreignIncarnation = (found: string, expected: string) =>
  rejected(
    'work_store_foreign_incarnation',
    'The work store belongs to a foreign incarnation; its revisions are not this store’s.',
    {
      nextAction: 'do not write to it; restore or adopt the Goal through recovery',
      details: { incarnation: found, expected_incarnation: expected },
    },
  );
