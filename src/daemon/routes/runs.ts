/** The daemon's run routes: list, show, follow events, suspend, resume, export and import a snapshot. */
import type { Readable } from 'node:stream';
import { isLoopxError, sha256Hex, usageError } from '../../core/index.js';
import { ENVELOPE_MAX_BYTES, runSummary } from '../../runtime/index.js';
import { requestBody } from '../body.js';
import { bodyNotOctetStream, bodyTooLarge, daemonInternal } from '../errors.js';
import { sse, WRITE, type Routes } from '../routing.js';

/** Runs: list, show, follow events, suspend, resume, export and import a snapshot. */
export function registerRunRoutes({ app, timeouts, withEngine }: Routes): void {
  app.get('/api/runs', async () => {
    const runs = await withEngine((e) => e.list(), true);
    return { runs: runs.map((r) => ({ ...runSummary(r), definition: r.definition, turn_limit: r.turn_limit })) };
  });
  app.get<{ Params: { id: string } }>('/api/runs/:id', async (req) => withEngine((e) => e.show(req.params.id), true));
  app.get<{ Params: { id: string }; Querystring: { after?: string } }>('/api/runs/:id/events', async (req, reply) => {
    const header = req.headers['last-event-id'];
    const raw = typeof header === 'string' ? header : (req.query.after ?? '0');
    if (!/^\d{1,15}$/.test(raw)) throw usageError('daemon_cursor_invalid', 'The event cursor must be a sequence number.');
    await withEngine((e) => e.show(req.params.id), true); // 404 before the stream opens
    const out = sse(req, reply);
    try {
      await withEngine(async (engine) => {
        for await (const ev of engine.events(req.params.id, { after: Number(raw), follow: 'while-active', signal: out.signal })) {
          out.send(ev.type, { run_id: ev.runId, sequence: ev.sequence, type: ev.type, at: ev.at, data: ev.data }, ev.sequence);
        }
      }, true);
    } catch (e) {
      // The typed refusal as the error body carries it (code, message, next action, details).
      if (!out.signal.aborted) out.send('error', (isLoopxError(e) ? e : daemonInternal()).toJSON());
    } finally {
      out.end();
    }
  });
  app.post<{ Params: { id: string } }>('/api/runs/:id/suspend', { config: WRITE }, async (req) => runSummary(await withEngine((e) => e.suspend(req.params.id))));
  app.post<{ Params: { id: string }; Body: { turns?: unknown } | undefined }>('/api/runs/:id/resume', { config: WRITE }, async (req) => {
    const turns = req.body?.turns;
    if (turns !== undefined && (typeof turns !== 'number' || !Number.isSafeInteger(turns) || turns < 1))
      throw usageError('daemon_turns_invalid', 'turns must be a positive integer.');
    return runSummary(await withEngine((e) => e.resume(req.params.id, turns !== undefined ? { turns } : {})));
  });
  app.post<{ Params: { id: string } }>('/api/runs/:id/export', { config: WRITE }, async (req, reply) => {
    const signed = await withEngine((e) => e.exportEnvelope(req.params.id));
    return reply
      .type('application/octet-stream')
      .header('x-loopx-sha256', sha256Hex(signed.bytes))
      .header('content-disposition', `attachment; filename="${signed.state.runId.replace(/[^A-Za-z0-9._-]/g, '_')}.snapshot"`)
      .send(Buffer.from(signed.bytes));
  });
  app.post('/api/runs/import', { config: WRITE }, async (req) => {
    const max = ENVELOPE_MAX_BYTES;
    const parts: Buffer[] = [];
    let size = 0;
    if (typeof req.body !== 'object' || req.body === null || !('pipe' in req.body)) throw bodyNotOctetStream('snapshot');
    for await (const c of requestBody(req.raw, req.body as Readable, timeouts.bodyIdleMs)) {
      size += c.length;
      if (size > max) throw bodyTooLarge('snapshot');
      parts.push(c);
    }
    const view = await withEngine((e) => e.importSnapshot(new Uint8Array(Buffer.concat(parts))));
    return runSummary(view);
  });
}
