/**
 * Lease writes of the work owner, per Todo and only in hard_lease mode (release excepted):
 *   acquire/takeover  version +1, epoch +1, new execution identity and expiry
 *   renew             version +1, epoch kept, expiry = clock + TTL
 *   transfer          version +1, epoch +1, new owner and key
 *   release           version and epoch kept, released status persisted
 * Each plans inside the shared commit loop (commit.ts); expiry is decided against the injected
 * clock only (an expiry equal to "now" is expired).
 */
import { conflict } from '../../core/index.js';
import { execute, readProjection, type WorkCore } from './commit.js';
import { leaseVersionMismatch } from './errors.js';
import { actor, invalid, leaseProof, nat, todoId, ttl } from './inputs.js';
import { leaseAuthorization, leaseExpired, type Lease } from './model.js';
import { changed, expiry, findTodo, leaseId, refuseTerminal, requireHardLease, requireLease } from './rules.js';
import type {
  AcquireLeaseRequest,
  LeaseStatus,
  ReleaseLeaseRequest,
  RenewLeaseRequest,
  TransferLeaseRequest,
  WorkOperationResult,
} from './api.js';

export async function leaseStatus(core: WorkCore, id: string): Promise<LeaseStatus> {
  const t = findTodo((await readProjection(core)).p, id);
  const now = core.clock();
  return {
    todo_id: id,
    lease: t.lease,
    authorization: leaseAuthorization(t.lease, now),
    observed_at: now.toISOString(),
  };
}

export async function acquireLease(core: WorkCore, r: AcquireLeaseRequest): Promise<WorkOperationResult> {
  const id = todoId(r.todo_id);
  const owner = actor('owner', r.owner);
  const key = actor('execution_key', r.execution_key);
  const ttlMs = ttl(r.ttl_ms);
  const expectedVersion = nat('expected_version', r.expected_version);
  return execute(
    core,
    'acquire_lease',
    r,
    { todo_id: id, owner, execution_key: key, ttl_ms: ttlMs, expected_version: expectedVersion },
    ({ p, now, at, operationId, storeIdentity }) => {
      requireHardLease(p);
      const t = findTodo(p, id);
      refuseTerminal(t);
      const current = t.lease;
      const version = current?.version ?? 0;
      if (version !== expectedVersion) {
        throw leaseVersionMismatch(id, version, expectedVersion);
      }
      if (current !== null && current.status === 'active' && !leaseExpired(current, now)) {
        throw conflict('lease_held', `Todo ${id} is leased until ${current.expires_at}.`, {
          nextAction: 'wait for the lease to expire or be released',
          details: { todo_id: id, lease_epoch: current.lease_epoch, expires_at: current.expires_at },
        });
      }
      const lease: Lease = {
        lease_id: leaseId(storeIdentity, operationId),
        owner,
        execution_key: key,
        lease_epoch: (current?.lease_epoch ?? 0) + 1,
        version: version + 1,
        status: 'active',
        acquired_at: at,
        expires_at: expiry(now, ttlMs),
        released_at: null,
      };
      return changed(t, 'lease_acquire', at, { lease, claimed_by: owner });
    },
  );
}

export async function renewLease(core: WorkCore, r: RenewLeaseRequest): Promise<WorkOperationResult> {
  const id = todoId(r.todo_id);
  const proof = leaseProof({ owner: r.owner, execution_key: r.execution_key, lease_epoch: r.lease_epoch })!;
  const expectedVersion = nat('expected_version', r.expected_version);
  const ttlMs = ttl(r.ttl_ms);
  return execute(
    core,
    'renew_lease',
    r,
    { todo_id: id, ...proof, expected_version: expectedVersion, ttl_ms: ttlMs },
    ({ p, now, at }) => {
      requireHardLease(p);
      const t = findTodo(p, id);
      const lease = requireLease(t, proof, now, 'maintain', expectedVersion);
      return changed(t, 'lease_renew', at, {
        lease: { ...lease, version: lease.version + 1, expires_at: expiry(now, ttlMs) },
      });
    },
  );
}

export async function transferLease(core: WorkCore, r: TransferLeaseRequest): Promise<WorkOperationResult> {
  const id = todoId(r.todo_id);
  const proof = leaseProof({ owner: r.owner, execution_key: r.execution_key, lease_epoch: r.lease_epoch })!;
  const expectedVersion = nat('expected_version', r.expected_version);
  const ttlMs = ttl(r.ttl_ms);
  const toOwner = actor('to_owner', r.to_owner);
  const toKey = actor('to_execution_key', r.to_execution_key);
  if (toOwner === proof.owner && toKey === proof.execution_key)
    throw invalid('to_owner', 'a transfer names another owner or execution key');
  const params = {
    todo_id: id,
    ...proof,
    expected_version: expectedVersion,
    ttl_ms: ttlMs,
    to_owner: toOwner,
    to_execution_key: toKey,
  };
  return execute(core, 'transfer_lease', r, params, ({ p, now, at, operationId, storeIdentity }) => {
    requireHardLease(p);
    const t = findTodo(p, id);
    const lease = requireLease(t, proof, now, 'maintain', expectedVersion);
    const next: Lease = {
      ...lease,
      lease_id: leaseId(storeIdentity, operationId),
      owner: toOwner,
      execution_key: toKey,
      lease_epoch: lease.lease_epoch + 1,
      version: lease.version + 1,
      acquired_at: at,
      expires_at: expiry(now, ttlMs),
    };
    return changed(t, 'lease_transfer', at, { lease: next, claimed_by: toOwner });
  });
}

export async function releaseLease(core: WorkCore, r: ReleaseLeaseRequest): Promise<WorkOperationResult> {
  const id = todoId(r.todo_id);
  const proof = leaseProof({ owner: r.owner, execution_key: r.execution_key, lease_epoch: r.lease_epoch })!;
  const expectedVersion = nat('expected_version', r.expected_version);
  return execute(
    core,
    'release_lease',
    r,
    { todo_id: id, ...proof, expected_version: expectedVersion },
    ({ p, now, at }) => {
      const t = findTodo(p, id);
      const lease = requireLease(t, proof, now, 'release', expectedVersion);
      return changed(t, 'lease_release', at, {
        lease: { ...lease, status: 'released', released_at: at },
        claimed_by: t.claimed_by === lease.owner ? null : t.claimed_by,
      });
    },
  );
}
