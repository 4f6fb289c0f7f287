/**
 * The Goal-wide writes of the work owner: the handoff mode (soft_claim ↔ hard_lease, only while
 * no open Todo is claimed and no lease is active) and the writer fence (engaging mints a new
 * token one epoch on; every older token is refused from then on). Both plan inside the shared
 * commit loop (commit.ts).
 */
import { randomBytes } from 'node:crypto';
import { conflict } from '../../core/index.js';
import { execute, type WorkCore } from './commit.js';
import { nothingToRevoke } from './errors.js';
import { invalid } from './inputs.js';
import {
  isTerminal,
  leaseAuthorization,
  HANDOFF_MODES,
  type FenceToken,
  type WorkEvent,
  type WorkProjection,
} from './model.js';
import { changed } from './rules.js';
import type {
  EngageFenceRequest,
  MoveOutRequest,
  RevokeAuthorityRequest,
  SetHandoffModeRequest,
  WorkOperationResult,
} from './api.js';

export async function setHandoffMode(core: WorkCore, r: SetHandoffModeRequest): Promise<WorkOperationResult> {
  if (!(HANDOFF_MODES as readonly unknown[]).includes(r.handoff_mode))
    throw invalid('handoff_mode', `one of ${HANDOFF_MODES.join(', ')}`);
  const mode = r.handoff_mode;
  return execute(core, 'set_handoff_mode', r, { handoff_mode: mode }, ({ p, now }) => {
    if (mode !== p.handoff_mode) {
      const busy = p.todos.find(
        (t) => (!isTerminal(t.status) && t.claimed_by !== null) || leaseAuthorization(t.lease, now) === 'active',
      );
      if (busy) {
        throw conflict(
          'handoff_mode_not_quiescent',
          'The handoff mode changes only while no open Todo is claimed and no lease is active.',
          {
            nextAction: 'release claims and leases (or let leases expire), then retry',
            details: { todo_id: busy.todo_id },
          },
        );
      }
    }
    return { events: [{ type: 'handoff_mode_set', handoff_mode: mode }], handoff_mode: mode };
  });
}

/** Every active lease released, and a new writer fence when one exists: no earlier authority survives. */
function revoked(p: WorkProjection, now: Date, at: string): { events: WorkEvent[]; fence?: FenceToken } {
  const events: WorkEvent[] = [];
  for (const t of p.todos) {
    if (t.lease === null || leaseAuthorization(t.lease, now) !== 'active') continue;
    const lease = t.lease;
    events.push(
      ...changed(t, 'lease_revoke', at, {
        lease: { ...lease, status: 'released', released_at: at },
        claimed_by: t.claimed_by === lease.owner ? null : t.claimed_by,
      }).events,
    );
  }
  const fence = p.fence === null ? undefined : { fence_id: randomBytes(16).toString('hex'), epoch: p.fence.epoch + 1 };
  if (fence) events.push({ type: 'fence_engaged', fence: { ...fence, engaged_at: at } });
  return fence ? { events, fence } : { events };
}

/** Releases every active lease and engages a new writer fence when one exists (a store rotation). */
export async function revokeAuthority(core: WorkCore, r: RevokeAuthorityRequest): Promise<WorkOperationResult> {
  if (r.reason !== 'store_rotation') throw invalid('reason', 'store_rotation');
  return execute(core, 'revoke_authority', r, { reason: r.reason }, ({ p, now, at }) => {
    const planned = revoked(p, now, at);
    if (planned.events.length === 0) throw nothingToRevoke(p.goal_id);
    return planned;
  });
}

const MOVE_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const STORE_IDENTITY = /^[a-z][a-z0-9_-]{0,31}:[0-9a-f]{32}$/;

/** The last transaction of a store whose work moves on (`MoveOutRequest`): authority revoked, the store marked moved. */
export async function moveOut(core: WorkCore, r: MoveOutRequest): Promise<WorkOperationResult> {
  if (typeof r.move_id !== 'string' || !MOVE_ID.test(r.move_id))
    throw invalid('move_id', '1–128 of A–Z a–z 0–9 _ . : -');
  const to = r.to as Partial<MoveOutRequest['to']> | undefined;
  if (typeof to?.provider !== 'string' || !/^[a-z][a-z0-9_-]{0,31}$/.test(to.provider))
    throw invalid('to.provider', 'a provider name');
  if (typeof to.store_identity !== 'string' || !STORE_IDENTITY.test(to.store_identity))
    throw invalid('to.store_identity', '<provider>:<32 hex>');
  if (to.store_identity === core.identity.store_identity)
    throw invalid('to.store_identity', 'another store than this one');
  const moved_to = { move_id: r.move_id, provider: to.provider, store_identity: to.store_identity };
  return execute(core, 'move_out', r, { ...moved_to }, ({ p, now, at }) => {
    const { events } = revoked(p, now, at);
    return { events: [...events, { type: 'store_moved', moved_to }] };
  });
}

export async function engageFence(core: WorkCore, r: EngageFenceRequest): Promise<WorkOperationResult> {
  return execute(core, 'engage_fence', r, {}, ({ p, at }) => {
    const fence = { fence_id: randomBytes(16).toString('hex'), epoch: (p.fence?.epoch ?? 0) + 1 };
    return { events: [{ type: 'fence_engaged', fence: { ...fence, engaged_at: at } }], fence };
  });
}
