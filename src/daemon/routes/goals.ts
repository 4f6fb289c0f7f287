/**
 * The daemon's Goal routes: Goals and Todos read — with their sessions, runs, effects, holds,
 * paged committed history and progress, and for a lifetime a recovery superseded the root the
 * Goal continues in (by the name the daemon serves it under, never a path) — and the operator's
 * writes through the same runtime calls as the CLI (`loopx todo`, `loopx goal`, `loopx work
 * run`). Every route also serves a root one of the daemon's recoveries made (`?root=<name>`,
 * placeOf), so a recovered Goal is seen and continued where it was recovered.
 */
import { basename } from 'node:path';
import type { FastifyRequest } from 'fastify';
import { samePhysicalPath, sha256Hex } from '../../core/index.js';
import {
  addTodo,
  goalActivity,
  goalDetail,
  goalHistory,
  goalProgress,
  HISTORY_PAGE_MAX,
  operatorOperationId,
  TODO_STATUSES,
  todoView,
  transitionGoal,
  updateTodo,
  withGoalWriter,
  withRootOwners,
  type RootOwners,
} from '../../runtime/index.js';
import { fieldInvalid } from '../errors.js';
import { bodyText, placeOf, WRITE, type PlaceQuery, type Routes } from '../routing.js';

const goalView = (g: {
  goal_id: string;
  goal_instance_id: string;
  title: string;
  lifecycle: string;
  docs: readonly { name: string; sha256: string; bytes: number }[];
}) => ({
  goal_id: g.goal_id,
  goal_instance_id: g.goal_instance_id,
  title: g.title,
  lifecycle: g.lifecycle,
  docs: g.docs.map((d) => ({ name: d.name, sha256: d.sha256, bytes: d.bytes })),
});

const opId = (req: FastifyRequest) => {
  const key = req.headers['idempotency-key'];
  return typeof key === 'string' && key.length > 0 ? `ui:${sha256Hex(key).slice(0, 32)}` : operatorOperationId('ui');
};

/** A cursor or page size from the query string: absent, or a whole number in range. */
function queryInt(v: string | undefined, field: string, min: number, max: number): number | undefined {
  if (v === undefined) return undefined;
  if (!/^\d{1,15}$/.test(v) || Number(v) < min || Number(v) > max)
    throw fieldInvalid(`${field} must be a whole number from ${min} to ${max}.`);
  return Number(v);
}

type Supersession = NonNullable<Awaited<ReturnType<typeof goalDetail>>['superseded_by']>;

/**
 * Where a recovery took a Goal's lifetime, without a path: the new lifetime, the root's id, and
 * the name this daemon serves that root under (`?root=<name>`: a root one of its recoveries made),
 * or null when it does not serve it.
 */
async function supersededBy({ adoptions }: Routes, s: Supersession) {
  let served: string | null = null;
  if (s.directory !== undefined) {
    for (const { name } of await adoptions.recoveredRoots()) {
      if (samePhysicalPath(await adoptions.recoveredRoot(name), s.directory)) served = name;
    }
    // A recovery made elsewhere into a root beside this one: served too (adoptions.ts, continuation).
    if (served === null)
      served = await adoptions.recoveredRoot(basename(s.directory)).then(
        (dir) => (samePhysicalPath(dir, s.directory!) ? basename(s.directory!) : null),
        () => null,
      );
  }
  return {
    goal_instance_id: s.goal_instance_id,
    root_id: s.root_id,
    root: served,
    recovery_id: s.recovery_id,
    recorded_at: s.recorded_at,
  };
}

/** A Goal as the Goals list and the Goal page show it. */
async function goalSummary(r: Routes, ow: RootOwners, root: string, goalId: string, todos: boolean) {
  const authorityDir = r.o.authorityDir;
  const d = await goalDetail(ow, root, goalId, {
    todos,
    authority: authorityDir !== undefined ? { authorityDir } : {},
  });
  return {
    ...goalView(d.record),
    // A lifetime a recovery minted: the lineage it continues and the lifetime it superseded (null: the lineage's first).
    lineage: d.record.lineage ?? null,
    // A lifetime a recovery superseded: where the Goal continues (null: it is live here).
    superseded_by: d.superseded_by ? await supersededBy(r, d.superseded_by) : null,
    counts: d.counts,
    committed_transactions: d.committed_transactions,
    handoff_mode: d.handoff_mode,
    work_provider: d.work_provider,
    last_activity: d.last_activity,
    // Each Todo with its lease holder and when that lease expires (null: no live lease).
    ...(todos
      ? {
          todos: (d.todos ?? []).map((t) => ({
            ...todoView(t),
            lease_expires_at: t.lease?.status === 'active' ? t.lease.expires_at : null,
          })),
        }
      : {}),
  };
}

/** The recovery of this daemon that minted a Goal's lifetime: from which backup, captured when, and what it could not bring back. */
async function recoveredFrom({ adoptions }: Routes, recoveryId: string | undefined) {
  if (recoveryId === undefined) return null;
  let v: Awaited<ReturnType<typeof adoptions.show>>;
  try {
    v = await adoptions.show(recoveryId);
  } catch {
    return null; // recovered by the command line, or by another daemon: the lineage alone says it
  }
  return {
    recovery_id: v.recovery_id,
    backup_id: v.status.backup_id,
    captured_at_end: v.status.capture.captured_at_end,
    achieved_profile: v.status.capture.achieved_profile,
    state: v.status.state,
    lost_or_unknown: v.status.preview.lost_or_unknown,
  };
}

/** Todos: add one, change one's status or note. */
function registerTodoRoutes(r: Routes): void {
  const { app, o } = r;
  const authority = o.authorityDir !== undefined ? { authorityDir: o.authorityDir } : {};
  app.post<{ Params: { id: string }; Querystring: PlaceQuery; Body: { title?: unknown; text?: unknown } | undefined }>(
    '/api/goals/:id/todos',
    { config: WRITE },
    async (req, reply) => {
      const root = await placeOf(r, req);
      const input = {
        operation_id: opId(req),
        title: bodyText(req.body?.title, 'title')!,
        ...(req.body?.text !== undefined ? { text: bodyText(req.body.text, 'text')! } : {}),
      };
      const res = await withGoalWriter({ root, ...authority }, (guard) => addTodo(root, req.params.id, input, guard));
      return reply.code(201).send({ result: res.result, cursor: res.cursor, todo: todoView(res.receipt.todo!) });
    },
  );
  app.post<{
    Params: { id: string; todo: string };
    Querystring: PlaceQuery;
    Body: { status?: unknown; note?: unknown } | undefined;
  }>('/api/goals/:id/todos/:todo', { config: WRITE }, async (req) => {
    const root = await placeOf(r, req);
    const status = bodyText(req.body?.status, 'status', true);
    const note = bodyText(req.body?.note, 'note', true);
    if (status !== undefined && !(TODO_STATUSES as readonly string[]).includes(status))
      throw fieldInvalid(`status is one of ${TODO_STATUSES.join(', ')}.`);
    if (status === undefined && note === undefined) throw fieldInvalid('send status and/or note.');
    const input = {
      operation_id: opId(req),
      todo_id: req.params.todo,
      lease_owner: 'operator:ui',
      ...(status !== undefined ? { status: status as (typeof TODO_STATUSES)[number] } : {}),
      ...(note !== undefined ? { note } : {}),
    };
    const res = await withGoalWriter({ root, ...authority }, (guard) => updateTodo(root, req.params.id, input, guard));
    return { result: res.result, cursor: res.cursor, todo: todoView(res.receipt.todo!) };
  });
}

/** Goal work runs: the agents offered, and a run started (answered once admitted; driven in the background). */
function registerWorkRunRoutes(r: Routes): void {
  const { app, o, drives } = r;
  app.get('/api/agents', async () => ({
    agents: drives.agents().map((a) => ({
      id: a.id,
      version: a.version,
      turn_limit: a.turnLimit,
      model: `${a.model.provider}/${a.model.modelId}`,
    })),
  }));
  app.post<{
    Params: { id: string };
    Querystring: PlaceQuery;
    Body: { agent?: unknown; turns?: unknown; input?: unknown; sink_url?: unknown } | undefined;
  }>('/api/goals/:id/work-runs', { config: WRITE }, async (req, reply) => {
    const root = await placeOf(r, req);
    const name = bodyText(req.body?.agent, 'agent')!;
    const agent = drives.agents().find((a) => a.id === name || `${a.id}@${a.version}` === name);
    if (!agent) throw fieldInvalid(`agent must name one of the agents GET /api/agents lists.`);
    const turns = req.body?.turns;
    if (turns !== undefined && (typeof turns !== 'number' || !Number.isSafeInteger(turns) || turns < 1))
      throw fieldInvalid('turns must be a positive integer.');
    const input = bodyText(req.body?.input, 'input', true);
    const sink = bodyText(req.body?.sink_url, 'sink_url', true);
    if (sink !== undefined && !/^https?:\/\/[^\s/]+/.test(sink))
      throw fieldInvalid('sink_url must be an http or https address.');
    const runId = await drives.start({
      root,
      goalId: req.params.id,
      agent,
      ...(o.authorityDir !== undefined ? { authorityDir: o.authorityDir } : {}),
      ...(turns !== undefined ? { turns: turns as number } : {}),
      ...(input !== undefined ? { input } : {}),
      ...(sink !== undefined ? { webhookUrl: sink } : {}),
    });
    return reply.code(202).send({ run_id: runId, goal_id: req.params.id });
  });
}

/** Goals and Todos: read, and the operator's writes through the same runtime calls as `loopx todo`, `loopx goal` and `loopx work run`. */
export function registerGoalRoutes(r: Routes): void {
  const { app, o, adoptions } = r;
  const authority = o.authorityDir !== undefined ? { authorityDir: o.authorityDir } : {};
  registerTodoRoutes(r);
  registerWorkRunRoutes(r);
  for (const verb of ['pause', 'resume', 'retire'] as const) {
    app.post<{ Params: { id: string }; Querystring: PlaceQuery }>(
      `/api/goals/:id/${verb}`,
      { config: WRITE },
      async (req) => {
        const root = await placeOf(r, req);
        return goalView(
          await withGoalWriter({ root, ...authority }, (guard) => transitionGoal(root, req.params.id, verb, guard)),
        );
      },
    );
  }
  // The roots this daemon's recoveries made, whose Goals it serves too.
  app.get('/api/roots', async () => ({ roots: await adoptions.recoveredRoots() }));
  app.get<{ Querystring: PlaceQuery }>('/api/goals', async (req) => {
    const root = await placeOf(r, req);
    return {
      goals: await withRootOwners(root, async (ow) =>
        Promise.all(ow.goals.list().map((g) => goalSummary(r, ow, root, g.goal_id, false))),
      ),
    };
  });
  app.get<{ Params: { id: string }; Querystring: PlaceQuery }>('/api/goals/:id', async (req) => {
    const root = await placeOf(r, req);
    const goal = await withRootOwners(root, (ow) => goalSummary(r, ow, root, req.params.id, true));
    return { ...goal, recovery: await recoveredFrom(r, goal.lineage?.supersedes?.recovery_id) };
  });
  app.get<{ Params: { id: string }; Querystring: PlaceQuery }>('/api/goals/:id/activity', async (req) =>
    goalActivity({ root: await placeOf(r, req), ...authority }, req.params.id),
  );
  app.get<{ Params: { id: string }; Querystring: PlaceQuery & { after?: string; limit?: string } }>(
    '/api/goals/:id/history',
    async (req) => {
      const after = queryInt(req.query.after, 'after', 0, Number.MAX_SAFE_INTEGER);
      const limit = queryInt(req.query.limit, 'limit', 1, HISTORY_PAGE_MAX) ?? 25;
      return goalHistory(await placeOf(r, req), req.params.id, { ...(after !== undefined ? { after } : {}), limit });
    },
  );
  app.get<{ Params: { id: string }; Querystring: PlaceQuery }>('/api/goals/:id/progress', async (req) =>
    goalProgress(await placeOf(r, req), req.params.id),
  );
}
