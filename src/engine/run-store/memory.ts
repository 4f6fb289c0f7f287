/** In-memory reference run store: the contract without a disk, for engine tests. */
import { randomBytes } from 'node:crypto';
import type { DefinitionIdentity, Message } from '../../snapshot/index.js';
import { definitionBody, parseAgentDefinition, type AgentDefinition } from '../agent.js';
import type { RunEvent } from '../events.js';
import type { MutationRecord, RunCommit, RunHead, RunStore } from './contract.js';
import { committed, definitionConflict, emptyCommit, sequenceConflict } from './errors.js';

/** One run as this store holds it. */
interface MemoryRun {
  head: RunHead;
  messages: Message[];
  mutations: Map<string, MutationRecord>;
  events: RunEvent[];
}

const clone = <T>(v: T): T => structuredClone(v);

/** Apply one commit to the runs held — sequence checked, then all of it at once — and tell the listeners. */
function commitTo(
  runs: Map<string, MemoryRun>,
  suspendRequests: Set<string>,
  listeners: Set<(runId: string) => void>,
  c: RunCommit,
): RunEvent[] {
  if (c.events.length === 0) throw emptyCommit();
  const existing = runs.get(c.head.runId);
  const found = existing?.head.lastSequence;
  if (c.expectedSequence === 0 ? existing !== undefined : found !== c.expectedSequence) {
    throw sequenceConflict(c.head.runId, c.expectedSequence, found);
  }
  const next = committed(c, new Date().toISOString());
  const events = clone(next.events);
  const rec = existing ?? {
    head: c.head,
    messages: [] as Message[],
    mutations: new Map<string, MutationRecord>(),
    events: [] as RunEvent[],
  };
  rec.head = clone(next.head);
  for (const m of c.messages ?? []) rec.messages[m.index] = clone(m.message);
  for (const m of c.mutations ?? []) rec.mutations.set(m.callId, clone(m));
  rec.events.push(...events);
  runs.set(c.head.runId, rec);
  if (c.clearSuspendRequest) suspendRequests.delete(c.head.runId);
  for (const l of listeners) l(c.head.runId);
  return clone(events);
}

export function memoryRunStore(): RunStore {
  const defs = new Map<string, string>();
  const runs = new Map<string, MemoryRun>();
  const suspendRequests = new Set<string>();
  const listeners = new Set<(runId: string) => void>();
  const rootId = `root_${randomBytes(12).toString('hex')}`;
  const meta = new Map<string, string>();

  const putDefinition = (def: AgentDefinition, body = definitionBody(def)): void => {
    const key = `${def.id}\u0000${def.version}`;
    const existing = defs.get(key);
    if (existing === undefined) defs.set(key, body);
    else if (existing !== body) throw definitionConflict(def);
  };

  const store: RunStore = {
    putDefinition: async (def) => putDefinition(def),
    async getDefinition(identity: DefinitionIdentity) {
      const body = defs.get(`${identity.id}\u0000${identity.version}`);
      return body ? parseAgentDefinition(JSON.parse(body)) : undefined;
    },
    definitionBodyOf: async (identity) => defs.get(`${identity.id}\u0000${identity.version}`),
    get: async (runId) => (runs.has(runId) ? clone(runs.get(runId)!.head) : undefined),
    list: async () => [...runs.values()].map((r) => clone(r.head)),
    messages: async (runId) => clone(runs.get(runId)?.messages ?? []),
    mutations: async (runId) =>
      clone([...(runs.get(runId)?.mutations.values() ?? [])].sort((a, b) => (a.callId < b.callId ? -1 : 1))),
    commit: async (c) => commitTo(runs, suspendRequests, listeners, c),
    readEvents: async (runId, after, limit) =>
      clone((runs.get(runId)?.events ?? []).filter((e) => e.sequence > after).slice(0, limit)),
    async insertImported(head, messages, definition, body) {
      if (runs.has(head.runId)) throw sequenceConflict(head.runId, 0, runs.get(head.runId)!.head.lastSequence);
      putDefinition(definition, body);
      const at = new Date().toISOString();
      runs.set(head.runId, {
        head: clone({ ...head, createdAt: at, updatedAt: at }),
        messages: clone([...messages]),
        mutations: new Map(),
        events: [],
      });
      for (const l of listeners) l(head.runId);
    },
    rootId: async () => rootId,
    readRootMeta: async (key) => meta.get(key),
    writeRootMeta: async (key, value) => void meta.set(key, value),
    async requestSuspend(runId) {
      suspendRequests.add(runId);
      for (const l of listeners) l(runId);
    },
    suspendRequested: async (runId) => suspendRequests.has(runId),
    onCommit(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close() {
      listeners.clear();
    },
  };
  return store;
}
