/** The daemon's Goal routes: Goals and Todos read, and the operator's writes through the same runtime calls as the CLI. */
import type { FastifyRequest } from 'fastify';
import { sha256Hex } from '../../core/index.js';
import { addTodo, goalDetail, operatorOperationId, TODO_STATUSES, todoView, transitionGoal, updateTodo, withGoalWriter, withRootOwners } from '../../runtime/index.js';
import { fieldInvalid } from '../errors.js';
import { bodyText, WRITE, type Routes } from '../routing.js';

const goalView = (g: { goal_id: string; goal_instance_id: string; title: string; lifecycle: string; docs: readonly { name: string; sha256: string; bytes: number }[] }) => ({
  goal_id: g.goal_id,
  goal_instance_id: g.goal_instance_id,
  title: g.title,
  lifecycle: g.lifecycle,
  docs: g.docs.map((d) => ({ name: d.name, sha256: d.sha256, bytes: d.bytes })),
});

/** Goals and Todos: read, and the operator's writes through the same runtime calls as `loopx todo` and `loopx goal`. */
export function registerGoalRoutes({ app, root, o }: Routes): void {
  const access = { root, ...(o.authorityDir !== undefined ? { authorityDir: o.authorityDir } : {}) };
  const opId = (req: FastifyRequest) => {
    const key = req.headers['idempotency-key'];
    return typeof key === 'string' && key.length > 0 ? `ui:${sha256Hex(key).slice(0, 32)}` : operatorOperationId('ui');
  };
  app.post<{ Params: { id: string }; Body: { title?: unknown; text?: unknown } | undefined }>('/api/goals/:id/todos', { config: WRITE }, async (req, reply) => {
    const input = { operation_id: opId(req), title: bodyText(req.body?.title, 'title')!, ...(req.body?.text !== undefined ? { text: bodyText(req.body.text, 'text')! } : {}) };
    const r = await withGoalWriter(access, (guard) => addTodo(root, req.params.id, input, guard));
    return reply.code(201).send({ result: r.result, cursor: r.cursor, todo: todoView(r.receipt.todo!) });
  });
  app.post<{ Params: { id: string; todo: string }; Body: { status?: unknown; note?: unknown } | undefined }>('/api/goals/:id/todos/:todo', { config: WRITE }, async (req) => {
    const status = bodyText(req.body?.status, 'status', true);
    const note = bodyText(req.body?.note, 'note', true);
    if (status !== undefined && !(TODO_STATUSES as readonly string[]).includes(status)) throw fieldInvalid(`status is one of ${TODO_STATUSES.join(', ')}.`);
    if (status === undefined && note === undefined) throw fieldInvalid('send status and/or note.');
    const input = {
      operation_id: opId(req),
      todo_id: req.params.todo,
      lease_owner: 'operator:ui',
      ...(status !== undefined ? { status: status as (typeof TODO_STATUSES)[number] } : {}),
      ...(note !== undefined ? { note } : {}),
    };
    const r = await withGoalWriter(access, (guard) => updateTodo(root, req.params.id, input, guard));
    return { result: r.result, cursor: r.cursor, todo: todoView(r.receipt.todo!) };
  });
  for (const verb of ['pause', 'resume', 'retire'] as const) {
    app.post<{ Params: { id: string } }>(`/api/goals/:id/${verb}`, { config: WRITE }, async (req) =>
      goalView(await withGoalWriter(access, () => transitionGoal(root, req.params.id, verb))),
    );
  }
  app.get('/api/goals', async () => ({ goals: (await withRootOwners(root, (ow) => ow.goals.list())).map(goalView) }));
  app.get<{ Params: { id: string } }>('/api/goals/:id', async (req) =>
    withRootOwners(root, async (ow) => {
      const d = await goalDetail(ow, root, req.params.id, { todos: true });
      return {
        ...goalView(d.record),
        // A lifetime a recovery minted: the lineage it continues and the lifetime it superseded (null: the lineage's first).
        lineage: d.record.lineage ?? null,
        counts: d.counts,
        committed_transactions: d.committed_transactions,
        handoff_mode: d.handoff_mode,
        todos: d.todos,
      };
    }),
  );
}
