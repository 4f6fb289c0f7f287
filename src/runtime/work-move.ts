/**
 * `loopx goal move-work`: a Goal's work (Todos, history, receipts, leases, fence) moved to a store
 * of another provider — PostgreSQL to SQLite and back — through a reviewed plan the operator
 * confirms by its digest. It is the rollback path of a Goal whose work a database service keeps:
 * a fenced export of the source and an import into a new store, never a byte copy.
 *
 * The coordinator owns only its journal (`goals/<goal_id>/work-move.json`, removed when the move
 * is done); the work owner does each step on its own stores (owners/work/move.ts):
 *
 *   0. admission to the root is closed and drained: no writer of the root is inside its write work;
 *   1. the journal records the move id, the confirmed digest and both places (a store an earlier
 *      move left at the destination's place is set aside first, kept as history);
 *   2. the source's last transaction marks it moved to the new store (leases released, fence
 *      replaced): every writer of the source is refused `work_store_moved` from then on;
 *   3. the new store imports the source's lineages and history and adopts its head;
 *   4. the Goal's record names the new store (a SQLite source is set aside as history);
 *   5. each receiver the Goal delivered to has its fence raised to the new store's; the journal is
 *      removed; admission reopens.
 *
 * Interrupted, the same command with the same digest resumes from the journal: each step reads
 * back what it did. A failed step leaves the source as it was until step 2, and the Goal's work
 * where its record names it until step 5.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  canonicalJson,
  conflict,
  faultPoint,
  readRegularFileOnce,
  rejected,
  sha256Hex,
  usageError,
  writeFileDurable,
  type LoopxError,
} from '../core/index.js';
import {
  describeLocation,
  goal as goalOwner,
  inRoot,
  isServiceLocation,
  LAYOUT,
  rootStoreLocation,
  work as workOwner,
  type GoalWorkLocation,
} from '../owners/index.js';
import { closeAdmission } from './admission.js';
import { raiseReceiverFences, type RaisedFence } from './receiver-fences.js';
import { withAuthority, withRootOwners } from './root.js';

export const WORK_MOVE_PLAN_SCHEMA = 'loopx_work_move_plan_v0';
const JOURNAL_SCHEMA = 'loopx_work_move_journal_v0';
const DRAIN_MS = 30_000;

/** Where the Goal's work is, as the plan shows it. */
export interface MoveStore {
  readonly provider: string;
  /** The provider and its place, without secrets: `postgresql (schema s, env:NAME)`, `sqlite`. */
  readonly where: string;
}

export interface WorkMovePlan {
  readonly schema_version: typeof WORK_MOVE_PLAN_SCHEMA;
  readonly goal_id: string;
  readonly goal_instance_id: string;
  readonly source: MoveStore & {
    readonly store_identity: string;
    readonly cursor: number;
    readonly provider_revision: string;
  };
  readonly destination: MoveStore & { readonly database_url: string | null; readonly schema: string | null };
  /** The receipts that move: the source's own transactions and every history it holds from before. */
  readonly receipts: number;
  readonly lineages: number;
  readonly todos: number;
  readonly digest: string;
}

export interface WorkMoveResult {
  readonly goal_id: string;
  readonly move_id: string;
  readonly source: { readonly provider: string; readonly store_identity: string };
  readonly destination: { readonly provider: string; readonly store_identity: string; readonly cursor: number };
  readonly receipts: number;
  readonly receivers: readonly RaisedFence[];
}

/** A move request: the provider and, for a service, the reference and schema (unset: the root's). */
export type WorkMoveRequest = workOwner.WorkProviderRequest;

interface Journal {
  readonly schema_version: typeof JOURNAL_SCHEMA;
  readonly move_id: string;
  readonly digest: string;
  readonly source: GoalWorkLocation;
  readonly destination: GoalWorkLocation;
}

const journalPath = (root: string, goalId: string) => join(root, LAYOUT.goalDir(goalId), 'work-move.json');

/** A next action naming the move to `l` (`then`: options after the place, such as `--confirm <digest>`). */
function moveAction(what: string, goalId: string, l: GoalWorkLocation, then = ''): string {
  const s = l as { database_url?: string; schema?: string };
  return s.database_url === undefined || s.schema === undefined
    ? `${what}: loopx goal move-work ${goalId} --to ${l.provider}${then}`
    : `${what}: loopx goal move-work ${goalId} --to ${l.provider} --database-url ${s.database_url} --pg-schema ${s.schema}${then}`;
}

const confirmMismatch = (goalId: string, to: GoalWorkLocation): LoopxError =>
  conflict('work_move_confirm_mismatch', 'The confirmed digest is not the digest of the move plan now.', {
    nextAction: moveAction('preview the move again', goalId, to),
    details: { goal_id: goalId },
  });

const moveInProgress = (goalId: string, j: Journal): LoopxError =>
  conflict('work_move_in_progress', `A move of Goal ${goalId}'s work is in progress; finish it first.`, {
    nextAction: moveAction('finish it', goalId, j.destination, ` --confirm ${j.digest}`),
    details: { goal_id: goalId, move_id: j.move_id },
  });

const writersBusy = (goalId: string, to: GoalWorkLocation): LoopxError =>
  conflict('work_move_writers_busy', 'Writers of this root did not finish in time; nothing was moved.', {
    nextAction: moveAction("let the root's work runs finish, then preview again", goalId, to),
    details: { goal_id: goalId },
  });

const schemaRequired = (): LoopxError =>
  usageError(
    'work_move_schema_required',
    'This root keeps its Goal state outside PostgreSQL: a move there names the schema it goes to.',
    'name a migrated schema: loopx goal move-work --help',
  );

const tooLarge = (goalId: string, cursor: number): LoopxError =>
  rejected(
    'work_move_too_large',
    `Goal ${goalId}'s work has ${cursor} transactions; a move carries at most ${workOwner.MAX_RETAINED_TRANSACTIONS - 1}.`,
    {
      nextAction: 'keep the Goal where it is; start a new Goal for further work',
      details: { goal_id: goalId, cursor },
    },
  );

const journalInvalid = (goalId: string): LoopxError =>
  rejected('work_move_journal_invalid', `The journal of Goal ${goalId}'s work move cannot be read.`, {
    nextAction: "restore the Goal's directory from a backup",
    details: { goal_id: goalId },
  });

function readJournal(root: string, goalId: string): Journal | undefined {
  const bytes = readRegularFileOnce(journalPath(root, goalId), 16 * 1024, {
    unreadable: () => journalInvalid(goalId),
  });
  if (bytes === null) return undefined;
  let j: Journal;
  try {
    j = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as Journal;
  } catch {
    throw journalInvalid(goalId);
  }
  if (
    j?.schema_version !== JOURNAL_SCHEMA ||
    !/^[0-9a-f]{64}$/.test(j.move_id) ||
    !/^[0-9a-f]{64}$/.test(j.digest) ||
    typeof j.source?.provider !== 'string' ||
    typeof j.destination?.provider !== 'string'
  )
    throw journalInvalid(goalId);
  return j;
}

/** The plan of a move, from the Goal's store as it is now. */
export async function planWorkMove(root: string, goalId: string, request: WorkMoveRequest): Promise<WorkMovePlan> {
  const goal = await withRootOwners(root, (owners) => owners.goals.get(goalId));
  if (goal === undefined) throw goalOwner.goalNotFound(goalId);
  const { location } = workOwner.moveDestination(root, goalId, request);
  // A schema left unnamed would be a new one at each preview (and never migrated).
  if (request.schema === undefined && isServiceLocation(location) && !isServiceLocation(rootStoreLocation(root)))
    throw schemaRequired();
  await workOwner.assertGoalWorkReady(location);
  const source = workOwner.goalWorkLocation(root, goalId);
  const work = await workOwner.openGoalWork({ root, goal_id: goalId });
  try {
    const view = await work.view();
    // The source's history, with the move's own last transaction, travels as one verified export.
    if (view.cursor + 1 > workOwner.MAX_RETAINED_TRANSACTIONS) throw tooLarge(goalId, view.cursor);
    const lineages = await work.lineage();
    const d = location as { database_url?: string; schema?: string };
    const body = {
      schema_version: WORK_MOVE_PLAN_SCHEMA,
      goal_id: goalId,
      goal_instance_id: goal.goal_instance_id,
      source: {
        provider: source.provider,
        where: describeLocation(source),
        store_identity: view.store_identity,
        cursor: view.cursor,
        provider_revision: view.provider_revision,
      },
      destination: {
        provider: location.provider,
        // A service's row key is chosen afresh at each preview: the digest binds the place, not the key.
        where: describeLocation(location),
        database_url: d.database_url ?? null,
        schema: d.schema ?? null,
      },
      receipts: view.cursor + lineages.reduce((n, l) => n + l.source_head_cursor, 0),
      lineages: lineages.length,
      todos: view.todos.length,
    } as const;
    return { ...body, digest: sha256Hex(canonicalJson(body)) };
  } finally {
    work.close();
  }
}

/** `loopx goal move-work … --confirm <digest>`: the move the digest names, done or resumed. */
export async function applyWorkMove(
  root: string,
  goalId: string,
  request: WorkMoveRequest,
  confirm: string,
  access: { readonly authorityDir?: string } = {},
): Promise<WorkMoveResult> {
  const wanted = workOwner.goalWorkLocation(root, goalId);
  const gate = await closeAdmission(root, { timeoutMs: DRAIN_MS });
  try {
    let journal = readJournal(root, goalId);
    if (journal !== undefined && journal.digest !== confirm) throw moveInProgress(goalId, journal);
    if (!gate.drained) throw writersBusy(goalId, journal?.destination ?? wanted);
    if (journal === undefined) journal = await begin(root, goalId, request, confirm);
    return await carryOut(root, goalId, journal, access);
  } finally {
    gate.release();
  }
}

/** Steps 0–1: the plan checked against the digest, the destination's place cleared, the journal written. */
async function begin(root: string, goalId: string, request: WorkMoveRequest, confirm: string): Promise<Journal> {
  const plan = await planWorkMove(root, goalId, request);
  const { location } = workOwner.moveDestination(root, goalId, request);
  if (plan.digest !== confirm) throw confirmMismatch(goalId, location);
  const moveId = randomBytes(32).toString('hex');
  workOwner.setAsideForMove(root, goalId, location, moveId);
  const journal: Journal = {
    schema_version: JOURNAL_SCHEMA,
    move_id: moveId,
    digest: confirm,
    source: workOwner.goalWorkLocation(root, goalId),
    destination: location,
  };
  writeFileDurable(journalPath(root, goalId), `${canonicalJson(journal)}\n`);
  faultPoint('work.move.after-journal');
  return journal;
}

/** Steps 2–5, each reading back what an interrupted run did. */
async function carryOut(
  root: string,
  goalId: string,
  j: Journal,
  access: { readonly authorityDir?: string },
): Promise<WorkMoveResult> {
  const destination = await workOwner.openWorkAt({ root, goal_id: goalId, create: true }, j.destination);
  try {
    // Until the new store has adopted the source's head (its `move:<id>:in` receipt), the source is where the
    // work is: fenced, then carried over. Never decided by comparing records: a set-aside source is not reopened.
    if ((await destination.readReceipt(`move:${j.move_id}:in`)) === undefined)
      await carryOver(root, goalId, j, destination, access);
    if (canonicalJson(workOwner.goalWorkLocation(root, goalId)) !== canonicalJson(j.destination))
      workOwner.recordMovedWork(root, goalId, j.destination);
    faultPoint('work.move.after-record');
    // A source in the root's files is kept aside as history (a later move there starts on a store of its own).
    if (inRoot(j.source)) workOwner.setAsideForMove(root, goalId, j.source, j.move_id);
    faultPoint('work.move.after-set-aside');
    const receivers = await raiseReceiverFences(root, [goalId]);
    const lineages = await destination.lineage();
    const from = lineages.find((l) => l.recovery_id === j.move_id);
    if (existsSync(journalPath(root, goalId))) rmSync(journalPath(root, goalId));
    return {
      goal_id: goalId,
      move_id: j.move_id,
      source: { provider: j.source.provider, store_identity: from?.source_store_identity ?? '' },
      destination: {
        provider: j.destination.provider,
        store_identity: (await destination.storeIdentity()).store_identity,
        cursor: (await destination.view()).cursor,
      },
      receipts: lineages.reduce((n, l) => n + l.source_head_cursor, 0),
      receivers,
    };
  } finally {
    destination.close();
  }
}

/**
 * Steps 2–3: the source fenced — and this user's run authority told of its moved head, so a copy
 * of the root from before the move is refused `root_rolled_back` — and its work imported by the new store.
 */
async function carryOver(
  root: string,
  goalId: string,
  j: Journal,
  destination: workOwner.WorkOwner,
  access: { readonly authorityDir?: string },
): Promise<void> {
  const source = await workOwner.openWorkAt({ root, goal_id: goalId }, j.source);
  try {
    const into = await destination.storeIdentity();
    await source.moveOut({
      operation_id: `move:${j.move_id}:out`,
      move_id: j.move_id,
      to: { provider: j.destination.provider, store_identity: into.store_identity },
    });
    const moved = await source.view();
    const goal = await withRootOwners(root, (owners) => owners.goals.get(goalId));
    if (goal !== undefined)
      await withAuthority(access, (authority) =>
        authority.observeWorkHead({
          goal_id: goalId,
          goal_instance_id: goal.goal_instance_id,
          store_identity: moved.store_identity,
          cursor: moved.cursor,
          provider_revision: moved.provider_revision,
        }),
      );
    faultPoint('work.move.after-out');
    await destination.importMovedWork({ operation_id: `move:${j.move_id}:in`, move_id: j.move_id, source });
    faultPoint('work.move.after-import');
  } finally {
    source.close();
  }
}
