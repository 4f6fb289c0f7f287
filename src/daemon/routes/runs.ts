/**
 * The daemon's run routes: list, show (with the evidence of its uncertain calls), follow events —
 * while active, or live until the run ends with the run's view as it changes —, suspend, resume,
 * answer, resolve, cancel, export and import a snapshot. Every command goes through the same engine
 * call as the CLI's verb; a refusal is the engine's typed one.
 */
import type { Readable } from 'node:stream';
import { isLoopxError, sha256Hex, usageError } from '../../core/index.js';
import {
  ENVELOPE_MAX_BYTES,
  runSummary,
  type CallEvidence,
  type Engine,
  type Resolution,
  type RunView,
} from '../../runtime/index.js';
import { requestBody } from '../body.js';
import { bodyNotOctetStream, bodyTooLarge, daemonInternal, fieldInvalid } from '../errors.js';
import { bodyText, engineFor, sse, WRITE, type Routes } from '../routing.js';

/** How often a live stream re-reads the run's view (changes made by another process reach it no later than this). */
const LIVE_VIEW_MS = 500;
/** How often a live stream looks for events committed by another process. */
const LIVE_POLL_MS = 200;
const FOLLOW_MODES = ['while-active', 'until-terminal'] as const;
type FollowMode = (typeof FOLLOW_MODES)[number];
/** The CLI's `run resolve` choices (`--committed RESULT | --absent | --abandon`), by the same names. */
const RESOLUTIONS = ['committed', 'absent', 'abandon'] as const;

/** Runs: list, show, follow events, suspend, resume, answer, resolve, cancel, export and import a snapshot. */
export function registerRunRoutes(routes: Routes): void {
  registerRunReads(routes);
  registerRunCommands(routes);
  registerRunTransfer(routes);
}

/** The run as the run page reads it: `run show`, each uncertain call with the evidence the run and the effect owner hold (or null). */
async function runPage(engine: Engine, runId: string): Promise<RunView> {
  const view = await engine.show(runId);
  const waiting = view.waiting_for;
  if (waiting?.kind !== 'resolution') return view;
  const evidence = new Map<string, CallEvidence>(
    (await engine.callEvidence(runId, waiting.call_ids)).map((e) => [e.call_id, e]),
  );
  return {
    ...view,
    waiting_for: {
      ...waiting,
      effects: waiting.effects.map((e) => ({ ...e, evidence: evidence.get(e.call_id) ?? null })),
    },
  };
}

function registerRunReads(r: Routes): void {
  const { app } = r;
  app.get('/api/runs', async (req) => {
    const runs = await (await engineFor(r, req))((e) => e.list(), true);
    return { runs: runs.map((r) => ({ ...runSummary(r), definition: r.definition, turn_limit: r.turn_limit })) };
  });
  app.get<{ Params: { id: string } }>('/api/runs/:id', async (req) =>
    (await engineFor(r, req))((e) => runPage(e, req.params.id), true),
  );
  app.get<{ Params: { id: string }; Querystring: { after?: string; follow?: string } }>(
    '/api/runs/:id/events',
    async (req, reply) => {
      const header = req.headers['last-event-id'];
      const raw = typeof header === 'string' ? header : (req.query.after ?? '0');
      if (!/^\d{1,15}$/.test(raw))
        throw usageError('daemon_cursor_invalid', 'The event cursor must be a sequence number.');
      const follow = req.query.follow ?? 'while-active';
      if (!(FOLLOW_MODES as readonly string[]).includes(follow))
        throw fieldInvalid(`follow is one of ${FOLLOW_MODES.join(', ')}.`);
      const runId = req.params.id;
      await (
        await engineFor(r, req)
      )((e) => e.show(runId), true); // 404 before the stream opens
      const out = sse(req, reply);
      try {
        await (
          await engineFor(r, req)
        )(async (engine) => {
          const views = follow === 'until-terminal' ? liveViews(engine, runId, out) : undefined;
          try {
            const options = {
              after: Number(raw),
              follow: follow as FollowMode,
              signal: out.signal,
              ...(views ? { pollMs: LIVE_POLL_MS } : {}),
            };
            for await (const ev of engine.events(runId, options)) {
              out.send(
                ev.type,
                { run_id: ev.runId, sequence: ev.sequence, type: ev.type, at: ev.at, data: ev.data },
                ev.sequence,
              );
              views?.changed();
            }
          } finally {
            await views?.stop();
          }
        }, true);
      } catch (e) {
        // The typed refusal as the error body carries it (code, message, next action, details).
        if (!out.signal.aborted) out.send('error', (isLoopxError(e) ? e : daemonInternal()).toJSON());
      } finally {
        out.end();
      }
    },
  );
}

/**
 * The run's view on a live stream, as `event: run` (no id: it is no event of the run): first when
 * the stream opens, then whenever it changed — soon after an event, and on a timer for what changes
 * without one (a suspend request made while the run is driven) — and always last, as the stream ends.
 */
function liveViews(
  engine: Engine,
  runId: string,
  out: ReturnType<typeof sse>,
): { changed(): void; stop(): Promise<void> } {
  let last = '';
  let chain: Promise<void> = Promise.resolve();
  let soon: NodeJS.Timeout | undefined;
  const push = (always = false): Promise<void> =>
    (chain = chain
      .then(async () => {
        if (out.signal.aborted) return;
        const view = await runPage(engine, runId);
        const text = JSON.stringify(view);
        if (always || text !== last) out.send('run', view);
        last = text;
      })
      .catch(() => undefined)); // a view that could not be read now is read again on the next tick
  void push();
  const timer = setInterval(() => void push(), LIVE_VIEW_MS);
  return {
    changed() {
      soon ??= setTimeout(() => {
        soon = undefined;
        void push();
      }, 0);
    },
    async stop() {
      clearInterval(timer);
      clearTimeout(soon);
      await push(true);
    },
  };
}

/** Suspend, resume, answer, resolve and cancel: the CLI's verbs, through the same engine calls. */
function registerRunCommands(r: Routes): void {
  const { app } = r;
  app.post<{ Params: { id: string } }>('/api/runs/:id/suspend', { config: WRITE }, async (req) =>
    runSummary(await (await engineFor(r, req))((e) => e.suspend(req.params.id))),
  );
  app.post<{ Params: { id: string }; Body: { turns?: unknown } | undefined }>(
    '/api/runs/:id/resume',
    { config: WRITE },
    async (req) => {
      const turns = req.body?.turns;
      if (turns !== undefined && (typeof turns !== 'number' || !Number.isSafeInteger(turns) || turns < 1))
        throw usageError('daemon_turns_invalid', 'turns must be a positive integer.');
      return runSummary(
        await (
          await engineFor(r, req)
        )((e) => e.resume(req.params.id, turns !== undefined ? { turns } : {})),
      );
    },
  );
  app.post<{ Params: { id: string }; Body: { interaction_id?: unknown; text?: unknown } | undefined }>(
    '/api/runs/:id/answer',
    { config: WRITE },
    async (req) => {
      const interactionId = bodyText(req.body?.interaction_id, 'interaction_id')!;
      const text = bodyText(req.body?.text, 'text')!;
      return runSummary(await (await engineFor(r, req))((e) => e.answer(req.params.id, interactionId, text)));
    },
  );
  app.post<{ Params: { id: string }; Body: { call_id?: unknown; resolution?: unknown; result?: unknown } | undefined }>(
    '/api/runs/:id/resolve',
    { config: WRITE },
    async (req) => {
      const callId = bodyText(req.body?.call_id, 'call_id')!;
      const resolution = resolutionOf(req.body?.resolution, req.body?.result);
      return runSummary(await (await engineFor(r, req))((e) => e.resolve(req.params.id, callId, resolution)));
    },
  );
  app.post<{ Params: { id: string } }>('/api/runs/:id/cancel', { config: WRITE }, async (req) =>
    runSummary(await (await engineFor(r, req))((e) => e.cancel(req.params.id))),
  );
}

/** `resolution` (committed, absent or abandon) and, with committed only, `result`: the operation's result as JSON text (the CLI's `--committed RESULT`). */
function resolutionOf(kind: unknown, result: unknown): Resolution {
  const k = bodyText(kind, 'resolution')!;
  if (!(RESOLUTIONS as readonly string[]).includes(k))
    throw fieldInvalid(`resolution is one of ${RESOLUTIONS.join(', ')}.`);
  if (k === 'committed') {
    if (typeof result !== 'string' || result.length === 0)
      throw fieldInvalid('result, the operation’s result as JSON text, goes with committed.');
    return { kind: 'committed', resultJson: result };
  }
  if (result !== undefined) throw fieldInvalid('result goes with committed only.');
  return k === 'absent' ? { kind: 'absent' } : { kind: 'abandon' };
}

/** Export a run's signed snapshot; import one. */
function registerRunTransfer({ app, timeouts, withEngine }: Routes): void {
  app.post<{ Params: { id: string } }>('/api/runs/:id/export', { config: WRITE }, async (req, reply) => {
    const signed = await withEngine((e) => e.exportEnvelope(req.params.id));
    return reply
      .type('application/octet-stream')
      .header('x-loopx-sha256', sha256Hex(signed.bytes))
      .header(
        'content-disposition',
        `attachment; filename="${signed.state.runId.replace(/[^A-Za-z0-9._-]/g, '_')}.snapshot"`,
      )
      .send(Buffer.from(signed.bytes));
  });
  app.post('/api/runs/import', { config: WRITE }, async (req) => {
    const max = ENVELOPE_MAX_BYTES;
    const parts: Buffer[] = [];
    let size = 0;
    if (typeof req.body !== 'object' || req.body === null || !('pipe' in req.body))
      throw bodyNotOctetStream('snapshot');
    for await (const c of requestBody(req.raw, req.body as Readable, timeouts.bodyIdleMs)) {
      size += c.length;
      if (size > max) throw bodyTooLarge('snapshot');
      parts.push(c);
    }
    const view = await withEngine((e) => e.importSnapshot(new Uint8Array(Buffer.concat(parts))));
    return runSummary(view);
  });
}
