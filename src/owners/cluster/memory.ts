/**
 * The in-memory cluster port: the reference implementation of contract.ts, for tests and
 * embedding. Its clock is `now` (default `Date.now`); its wake-ups reach the watchers of the same
 * state object, after the write that caused them (a microtask later, as a notification arrives
 * after its commit). Several ports opened on one `MemoryClusterState` share it, as several
 * processes share one database.
 */
import {
  CANCEL_REQUESTED,
  type ClusterInstance,
  type ClusterPort,
  type ClusterWork,
  type InstanceJoin,
  type InstanceState,
  type SubmittedWork,
} from './contract.js';
import { instanceExists } from './errors.js';

interface InstanceRow extends InstanceJoin {
  state: InstanceState;
  heartbeat_at: number;
  readonly order: number;
}

interface WorkRow extends SubmittedWork {
  state: ClusterWork['state'];
  held_code: string | null;
  readonly order: number;
}

export interface MemoryClusterState {
  readonly instances: Map<string, InstanceRow>;
  readonly work: Map<string, WorkRow>;
  readonly watchers: Set<() => void>;
  next: number;
}

export const createMemoryClusterState = (): MemoryClusterState => ({
  instances: new Map(),
  work: new Map(),
  watchers: new Set(),
  next: 0,
});

export interface MemoryClusterOptions {
  /** Shared with other ports (another process's view of the same cluster); a fresh one by default. */
  readonly state?: MemoryClusterState;
  /** The provider's clock, in milliseconds. */
  readonly now?: () => number;
}

const byOrder = (a: { order: number }, b: { order: number }) => a.order - b.order;
const workOf = (r: WorkRow): ClusterWork => ({
  run_id: r.run_id,
  agent: r.agent,
  input: r.input,
  state: r.state,
  held_code: r.held_code,
});

class MemoryClusterPort implements ClusterPort {
  readonly #s: MemoryClusterState;
  readonly #now: () => number;

  constructor(options: MemoryClusterOptions) {
    this.#s = options.state ?? createMemoryClusterState();
    this.#now = options.now ?? Date.now;
  }

  // ── membership ──

  async join(member: InstanceJoin): Promise<void> {
    if (this.#s.instances.has(member.instance_id)) throw instanceExists(member.instance_id);
    this.#s.instances.set(member.instance_id, {
      ...member,
      state: 'active',
      heartbeat_at: this.#now(),
      order: this.#s.next++,
    });
  }

  async heartbeat(instanceId: string): Promise<InstanceState | undefined> {
    const r = this.#s.instances.get(instanceId);
    if (r) r.heartbeat_at = this.#now();
    return r?.state;
  }

  async requestDrain(instanceId: string): Promise<InstanceState | undefined> {
    const r = this.#s.instances.get(instanceId);
    if (!r) return undefined;
    if (r.state === 'active') r.state = 'draining';
    this.#notify();
    return r.state;
  }

  async markInstance(instanceId: string, state: Exclude<InstanceState, 'active'>): Promise<void> {
    const r = this.#s.instances.get(instanceId);
    if (r && (state !== 'draining' || r.state === 'active')) r.state = state;
  }

  async instance(instanceId: string): Promise<ClusterInstance | undefined> {
    const r = this.#s.instances.get(instanceId);
    return r && this.#instanceOf(r);
  }

  async instances(): Promise<ClusterInstance[]> {
    return [...this.#s.instances.values()].sort(byOrder).map((r) => this.#instanceOf(r));
  }

  // ── the work queue ──

  async submit(work: SubmittedWork): Promise<boolean> {
    if (this.#s.work.has(work.run_id)) return false;
    this.#s.work.set(work.run_id, {
      run_id: work.run_id,
      agent: work.agent,
      input: work.input,
      state: 'pending',
      held_code: null,
      order: this.#s.next++,
    });
    this.#notify();
    return true;
  }

  async work(runId: string): Promise<ClusterWork | undefined> {
    const r = this.#s.work.get(runId);
    return r && workOf(r);
  }

  async listWork(): Promise<ClusterWork[]> {
    return [...this.#s.work.values()].sort(byOrder).map(workOf);
  }

  async pending({
    limit,
    excluding = [],
  }: {
    readonly limit: number;
    readonly excluding?: readonly string[];
  }): Promise<string[]> {
    const out = new Set(excluding);
    return this.#ids((r) => r.state === 'pending' && !out.has(r.run_id), limit);
  }

  async held({ code, limit }: { readonly code: string; readonly limit: number }): Promise<string[]> {
    return this.#ids((r) => r.state === 'held' && r.held_code === code, limit);
  }

  async hold(runId: string, code: string): Promise<boolean> {
    return this.#move(runId, (r) => r.state === 'pending', 'held', code);
  }

  async requeue(runId: string): Promise<boolean> {
    const moved = this.#move(runId, (r) => r.state === 'held' && r.held_code !== CANCEL_REQUESTED, 'pending', null);
    if (moved) this.#notify();
    return moved;
  }

  async requestCancel(runId: string): Promise<boolean> {
    return this.#move(runId, (r) => r.state !== 'finished', 'held', CANCEL_REQUESTED);
  }

  async finish(runId: string): Promise<boolean> {
    // A finished run keeps the held code it had, as the database row does.
    return this.#move(runId, (r) => r.state !== 'finished', 'finished', undefined);
  }

  // ── wake-ups ──

  async wake(): Promise<void> {
    this.#notify();
  }

  async watch(onWake: () => void): Promise<() => void> {
    const w = (): void => onWake();
    this.#s.watchers.add(w);
    return () => void this.#s.watchers.delete(w);
  }

  /** Watchers hear of a change after the write that made it, as a notification arrives after its commit. */
  #notify(): void {
    const watchers = [...this.#s.watchers];
    queueMicrotask(() => watchers.forEach((w) => w()));
  }

  #instanceOf(r: InstanceRow): ClusterInstance {
    const t = this.#now();
    return {
      instance_id: r.instance_id,
      host: r.host,
      pid: r.pid,
      lease_ms: r.lease_ms,
      state: r.state,
      live: r.heartbeat_at + r.lease_ms > t,
      heartbeat_age_ms: t - r.heartbeat_at,
    };
  }

  #ids(when: (r: WorkRow) => boolean, limit: number): string[] {
    return [...this.#s.work.values()]
      .filter(when)
      .sort(byOrder)
      .slice(0, limit)
      .map((r) => r.run_id);
  }

  /** One conditional transition: applied only when `when` holds of the current row (`heldCode` undefined keeps the code). */
  #move(
    runId: string,
    when: (r: WorkRow) => boolean,
    state: WorkRow['state'],
    heldCode: string | null | undefined,
  ): boolean {
    const r = this.#s.work.get(runId);
    if (!r || !when(r)) return false;
    r.state = state;
    if (heldCode !== undefined) r.held_code = heldCode;
    return true;
  }
}

export const memoryClusterPort = (options: MemoryClusterOptions = {}): ClusterPort => new MemoryClusterPort(options);
