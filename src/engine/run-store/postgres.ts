/**
 * PostgreSQL run store: the run kernel's state and event log as tables of an installation's
 * schema (component `runs`, migrated by `loopx db migrate`), so that any host of a cluster can read
 * a run's events and resume it. The columns are those of `engine.db` (heads, messages, mutations
 * and event data as JSON text; instants as ISO text), so a run reads the same from either store.
 *
 * Rules it keeps, beside the contract's (contract.ts):
 * - A commit is one transaction. The head write is the sequence check, as in SQLite: a new run's
 *   row is inserted only if absent, an existing one updated only `WHERE last_sequence = expected`;
 *   no row changed is `run_sequence_conflict`, and nothing of the commit lands.
 * - Fencing at the resource: a store opened with a `fence` runs it first inside every commit and
 *   import transaction — the run authority's check that this process still holds the run's lease
 *   at its epoch (a row locked `FOR SHARE`, so no takeover can commit in between). A writer whose
 *   lease another host took over fails in the database, whatever it believes in memory.
 * - A COMMIT whose answer the connection lost is `run_commit_ambiguous`: the driver stops, and the
 *   next one reads the run as the database has it (a commit is keyed by its sequence, so a retry
 *   of a commit that landed is a sequence conflict, never a second copy).
 * - It decides nothing about runs (the kernel does) and does not own the pool: `close` ends the
 *   store, not the database.
 */
import { randomBytes } from 'node:crypto';
import { internal, isLoopxError, type LoopxError } from '../../core/index.js';
import {
  PgCommitAmbiguous,
  isUniqueViolation,
  pgFailure,
  requireSchemaVersion,
  type PgDatabase,
  type PgMigration,
  type PgQuery,
} from '../../store/index.js';
import type { DefinitionIdentity, Message } from '../../snapshot/index.js';
import { definitionBody, parseAgentDefinition, type AgentDefinition } from '../agent.js';
import type { RunEvent } from '../events.js';
import type { MutationRecord, RootMetaKey, RunCommit, RunHead, RunStore } from './contract.js';
import { committed, definitionConflict, emptyCommit, sequenceConflict } from './errors.js';

/** The component `loopx db migrate` records these tables under. */
export const RUNS_COMPONENT = 'runs';

/** The `runs` component's tables; keys are compared bytewise (`COLLATE "C"`), as in SQLite. */
export const RUNS_PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    sql: `CREATE TABLE run_definitions (
       id TEXT COLLATE "C" NOT NULL,
       version TEXT COLLATE "C" NOT NULL,
       body TEXT NOT NULL,
       PRIMARY KEY (id, version)
     );
     CREATE TABLE runs (
       run_id TEXT COLLATE "C" PRIMARY KEY,
       lifecycle TEXT NOT NULL,
       last_sequence BIGINT NOT NULL CHECK (last_sequence >= 0),
       created_at TEXT NOT NULL,
       head TEXT NOT NULL
     );
     CREATE TABLE run_messages (
       run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (run_id),
       idx INTEGER NOT NULL CHECK (idx >= 0),
       body TEXT NOT NULL,
       PRIMARY KEY (run_id, idx)
     );
     CREATE TABLE run_mutations (
       run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (run_id),
       call_id TEXT COLLATE "C" NOT NULL,
       body TEXT NOT NULL,
       PRIMARY KEY (run_id, call_id)
     );
     CREATE TABLE run_events (
       run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (run_id),
       sequence BIGINT NOT NULL CHECK (sequence >= 1),
       type TEXT NOT NULL,
       at TEXT NOT NULL,
       data TEXT NOT NULL,
       epoch BIGINT,
       PRIMARY KEY (run_id, sequence)
     );
     CREATE TABLE run_suspend_requests (run_id TEXT COLLATE "C" PRIMARY KEY);
     CREATE TABLE run_store_meta (key TEXT COLLATE "C" PRIMARY KEY, value TEXT NOT NULL);`,
  },
];

/**
 * The run authority's check, run first inside a commit's transaction: throws when this process no
 * longer holds the run at its epoch; else the epoch, which every event of the commit records (so
 * the database itself shows which owner wrote what, and that no epoch wrote after a later one).
 */
export type RunFence = (q: PgQuery, runId: string) => Promise<number>;

export interface PgRunStoreOptions {
  /** Fencing at the resource (the PostgreSQL run authority's `fence`); without it commits are fenced by sequence only. */
  readonly fence?: RunFence;
}

const commitAmbiguous = (runId: string, cause: unknown): LoopxError =>
  internal(
    'run_commit_ambiguous',
    `The database connection was lost while committing run ${runId}; whether the step landed is read back by the next driver.`,
    {
      cause,
      nextAction: `see where the run stands: loopx run show ${runId}`,
      details: { run_id: runId },
    },
  );

const parseHead = (text: unknown): RunHead => JSON.parse(String(text)) as RunHead;

/** Store a definition once; the same id and version with another body is a conflict (the insert is the check). */
async function putDefinitionIn(q: PgQuery, def: AgentDefinition, body = definitionBody(def)): Promise<void> {
  const inserted = await q(
    'INSERT INTO run_definitions (id, version, body) VALUES ($1, $2, $3) ON CONFLICT (id, version) DO NOTHING RETURNING 1',
    [def.id, def.version, body],
  );
  if (inserted.length === 1) return;
  const [existing] = await q<{ body: string }>('SELECT body FROM run_definitions WHERE id = $1 AND version = $2', [
    def.id,
    def.version,
  ]);
  if (existing?.body !== body) throw definitionConflict(def);
}

async function upsertMessages(
  q: PgQuery,
  runId: string,
  messages: ReadonlyArray<{ index: number; message: Message }>,
): Promise<void> {
  if (messages.length === 0) return;
  await q(
    `INSERT INTO run_messages (run_id, idx, body) SELECT $1, * FROM unnest($2::int[], $3::text[])
     ON CONFLICT (run_id, idx) DO UPDATE SET body = EXCLUDED.body`,
    [runId, messages.map((m) => m.index), messages.map((m) => JSON.stringify(m.message))],
  );
}

async function lastSequenceIn(q: PgQuery, runId: string): Promise<number | undefined> {
  const [row] = await q<{ last_sequence: string }>('SELECT last_sequence FROM runs WHERE run_id = $1', [runId]);
  return row ? Number(row.last_sequence) : undefined;
}

/** The head moves from the expected sequence (the write is the check), then its messages, mutations and events; `epoch` is the fence's. */
async function commitIn(q: PgQuery, c: RunCommit, epoch: number | null): Promise<RunEvent[]> {
  const runId = c.head.runId;
  const at = new Date().toISOString();
  const { isNew, head, headJson, events: appended } = committed(c, at);
  const last = head.lastSequence;
  const moved = isNew
    ? await q(
        'INSERT INTO runs (run_id, lifecycle, last_sequence, created_at, head) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (run_id) DO NOTHING RETURNING 1',
        [runId, head.lifecycle, last, at, headJson],
      )
    : await q(
        'UPDATE runs SET lifecycle = $1, last_sequence = $2, head = $3 WHERE run_id = $4 AND last_sequence = $5 RETURNING 1',
        [head.lifecycle, last, headJson, runId, c.expectedSequence],
      );
  if (moved.length !== 1) throw sequenceConflict(runId, c.expectedSequence, await lastSequenceIn(q, runId));
  await upsertMessages(q, runId, c.messages ?? []);
  const mutations = c.mutations ?? [];
  if (mutations.length > 0) {
    await q(
      `INSERT INTO run_mutations (run_id, call_id, body) SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
       ON CONFLICT (run_id, call_id) DO UPDATE SET body = EXCLUDED.body`,
      [mutations.map((m) => m.runId), mutations.map((m) => m.callId), mutations.map((m) => JSON.stringify(m))],
    );
  }
  await q(
    'INSERT INTO run_events (run_id, sequence, type, at, data, epoch) SELECT $1, s, t, $2, d, $6 FROM unnest($3::bigint[], $4::text[], $5::text[]) AS e (s, t, d)',
    [
      runId,
      at,
      appended.map((e) => e.sequence),
      appended.map((e) => e.type),
      appended.map((e) => JSON.stringify(e.data)),
      epoch,
    ],
  );
  if (c.clearSuspendRequest) await q('DELETE FROM run_suspend_requests WHERE run_id = $1', [runId]);
  return appended;
}

/** An imported run: its head and messages (and definition), only when the run is not known yet. */
async function importIn(
  q: PgQuery,
  head: RunHead,
  messages: readonly Message[],
  definition: AgentDefinition,
  body: string | undefined,
): Promise<void> {
  const found = await lastSequenceIn(q, head.runId);
  if (found !== undefined) throw sequenceConflict(head.runId, 0, found);
  await putDefinitionIn(q, definition, body);
  const at = new Date().toISOString();
  const h: RunHead = { ...head, createdAt: at, updatedAt: at };
  try {
    await q('INSERT INTO runs (run_id, lifecycle, last_sequence, created_at, head) VALUES ($1, $2, $3, $4, $5)', [
      h.runId,
      h.lifecycle,
      h.lastSequence,
      at,
      JSON.stringify(h),
    ]);
  } catch (e) {
    // Another importer of the same run committed between our read and this insert.
    if (isUniqueViolation(e)) throw sequenceConflict(head.runId, 0, undefined);
    throw e;
  }
  await upsertMessages(
    q,
    h.runId,
    messages.map((message, index) => ({ index, message })),
  );
}

class PgRunStore implements RunStore {
  readonly #db: PgDatabase;
  readonly #fence: RunFence | undefined;
  readonly #listeners = new Set<(runId: string) => void>();
  #closed = false;
  #checked: Promise<void> | undefined;

  constructor(db: PgDatabase, options: PgRunStoreOptions) {
    this.#db = db;
    this.#fence = options.fence;
  }

  /** The schema version once per store; a refusal is not remembered (a schema migrated later opens). */
  async #open(): Promise<void> {
    if (this.#closed) throw internal('run_store_closed', 'The run store is closed.');
    await (this.#checked ??= requireSchemaVersion(this.#db, RUNS_COMPONENT, RUNS_PG_MIGRATIONS).catch((e: unknown) => {
      this.#checked = undefined;
      throw e;
    }));
  }

  #typed(e: unknown): never {
    throw isLoopxError(e) ? e : pgFailure(e, this.#db.schema);
  }

  /** A read is one statement (snapshot-consistent on its own): one round trip, no transaction. */
  async #read<T>(fn: (q: PgQuery) => Promise<T>): Promise<T> {
    await this.#open();
    return fn(this.#db.query).catch((e: unknown) => this.#typed(e));
  }

  /** One write transaction of `runId`; the fence first, when the store has one (`fn` gets its epoch, else null). */
  async #write<T>(runId: string, fenced: boolean, fn: (q: PgQuery, epoch: number | null) => Promise<T>): Promise<T> {
    await this.#open();
    try {
      return await this.#db.transaction(async (q) => fn(q, fenced && this.#fence ? await this.#fence(q, runId) : null));
    } catch (e) {
      if (e instanceof PgCommitAmbiguous) throw commitAmbiguous(runId, e);
      return this.#typed(e);
    }
  }

  #notify(runId: string): void {
    for (const l of this.#listeners) l(runId);
  }

  async putDefinition(def: AgentDefinition): Promise<void> {
    await this.#write('', false, (q) => putDefinitionIn(q, def));
  }

  async getDefinition(identity: DefinitionIdentity): Promise<AgentDefinition | undefined> {
    const body = await this.definitionBodyOf(identity);
    return body === undefined ? undefined : parseAgentDefinition(JSON.parse(body));
  }

  definitionBodyOf(identity: DefinitionIdentity): Promise<string | undefined> {
    return this.#read(
      async (q) =>
        (
          await q<{ body: string }>('SELECT body FROM run_definitions WHERE id = $1 AND version = $2', [
            identity.id,
            identity.version,
          ])
        )[0]?.body,
    );
  }

  get(runId: string): Promise<RunHead | undefined> {
    return this.#read(
      async (q) =>
        (await q<{ head: string }>('SELECT head FROM runs WHERE run_id = $1', [runId])).map((r) =>
          parseHead(r.head),
        )[0],
    );
  }

  list(): Promise<RunHead[]> {
    return this.#read(async (q) =>
      (await q<{ head: string }>('SELECT head FROM runs ORDER BY created_at, run_id')).map((r) => parseHead(r.head)),
    );
  }

  messages(runId: string): Promise<Message[]> {
    return this.#read(async (q) =>
      (await q<{ body: string }>('SELECT body FROM run_messages WHERE run_id = $1 ORDER BY idx', [runId])).map(
        (r) => JSON.parse(r.body) as Message,
      ),
    );
  }

  mutations(runId: string): Promise<MutationRecord[]> {
    return this.#read(async (q) =>
      (await q<{ body: string }>('SELECT body FROM run_mutations WHERE run_id = $1 ORDER BY call_id', [runId])).map(
        (r) => JSON.parse(r.body) as MutationRecord,
      ),
    );
  }

  async commit(c: RunCommit): Promise<RunEvent[]> {
    if (c.events.length === 0) throw emptyCommit();
    const events = await this.#write(c.head.runId, true, (q, epoch) => commitIn(q, c, epoch));
    this.#notify(c.head.runId);
    return events;
  }

  readEvents(runId: string, afterSequence: number, limit: number): Promise<RunEvent[]> {
    return this.#read(async (q) =>
      (
        await q<{ sequence: string; type: string; at: string; data: string }>(
          'SELECT sequence, type, at, data FROM run_events WHERE run_id = $1 AND sequence > $2 ORDER BY sequence LIMIT $3',
          [runId, afterSequence, limit],
        )
      ).map((r) => ({
        runId,
        sequence: Number(r.sequence),
        type: r.type as RunEvent['type'],
        at: r.at,
        data: JSON.parse(r.data) as RunEvent['data'],
      })),
    );
  }

  async insertImported(
    head: RunHead,
    messages: readonly Message[],
    definition: AgentDefinition,
    body?: string,
  ): Promise<void> {
    await this.#write(head.runId, true, (q) => importIn(q, head, messages, definition, body));
    this.#notify(head.runId);
  }

  async rootId(): Promise<string> {
    const known = await this.#read(
      async (q) => (await q<{ value: string }>(`SELECT value FROM run_store_meta WHERE key = 'root_id'`))[0]?.value,
    );
    if (known !== undefined) return known;
    // Minted once; a racing process's id is kept (ON CONFLICT DO NOTHING), then read back.
    return this.#write('', false, async (q) => {
      await q(`INSERT INTO run_store_meta (key, value) VALUES ('root_id', $1) ON CONFLICT (key) DO NOTHING`, [
        `root_${randomBytes(12).toString('hex')}`,
      ]);
      return (await q<{ value: string }>(`SELECT value FROM run_store_meta WHERE key = 'root_id'`))[0]!.value;
    });
  }

  async readRootMeta(key: RootMetaKey): Promise<string | undefined> {
    return this.#read(
      async (q) => (await q<{ value: string }>('SELECT value FROM run_store_meta WHERE key = $1', [key]))[0]?.value,
    );
  }

  async writeRootMeta(key: Exclude<RootMetaKey, 'root_id'>, value: string): Promise<void> {
    await this.#write('', false, (q) =>
      q(
        'INSERT INTO run_store_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value',
        [key, value],
      ),
    );
  }

  async requestSuspend(runId: string): Promise<void> {
    await this.#write(runId, false, (q) =>
      q('INSERT INTO run_suspend_requests (run_id) VALUES ($1) ON CONFLICT (run_id) DO NOTHING', [runId]),
    );
    this.#notify(runId);
  }

  suspendRequested(runId: string): Promise<boolean> {
    return this.#read(
      async (q) => (await q('SELECT 1 FROM run_suspend_requests WHERE run_id = $1', [runId])).length > 0,
    );
  }

  onCommit(listener: (runId: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  close(): void {
    this.#closed = true;
    this.#listeners.clear();
  }
}

export function openPgRunStore(db: PgDatabase, options: PgRunStoreOptions = {}): RunStore {
  return new PgRunStore(db, options);
}
