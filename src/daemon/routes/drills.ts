/**
 * The daemon's recovery-drill routes (the service in drills.ts does the work): start the short
 * drill, follow its stages, list and read the kept receipts. The service is this registration's
 * own; the app's close stops a running drill (its process group killed, its state removed).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DrillService, type DrillJob } from '../drills.js';
import { sse, WRITE, type Routes } from '../routing.js';

/** A drill job's stages and result as server-sent events, until it ends or the client goes. */
async function streamDrill(
  req: FastifyRequest<{ Params: { id: string } }>,
  reply: FastifyReply,
  drills: DrillService,
): Promise<void> {
  const { job, events } = drills.job(req.params.id);
  const out = sse(req, reply);
  let step = 0;
  const progress = (stage: string) => out.send('progress', { step: ++step, stage }, step);
  for (const stage of job.stages) progress(stage);
  if (job.state !== 'running') {
    out.send('result', job);
    out.end();
    return;
  }
  await new Promise<void>((resolveDone) => {
    const result = (j: DrillJob) => {
      out.send('result', j);
      finish();
    };
    const finish = () => {
      events.off('stage', progress);
      events.off('result', result);
      out.end();
      resolveDone();
    };
    events.on('stage', progress);
    events.once('result', result);
    out.signal.addEventListener('abort', finish, { once: true });
  });
}

export function registerDrillRoutes({ app, root }: Routes): void {
  const drills = new DrillService(root);
  app.addHook('onClose', async () => drills.close());
  app.get('/api/drills', async () => drills.list());
  app.post('/api/drills', { config: WRITE }, async (_req, reply) => reply.code(202).send(drills.start()));
  app.get<{ Params: { id: string } }>('/api/drills/jobs/:id', async (req) => drills.job(req.params.id).job);
  app.get<{ Params: { id: string } }>('/api/drills/jobs/:id/events', async (req, reply) =>
    streamDrill(req, reply, drills),
  );
  app.get<{ Params: { id: string } }>('/api/drills/:id', async (req, reply) =>
    reply.type('application/json').send(drills.receipt(req.params.id)),
  );
}
