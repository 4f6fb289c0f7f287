/** The daemon's backup, audit and recovery routes (the services in backups.ts and adoptions.ts do the work). */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { sha256Hex } from '../../core/index.js';
import { listWorkspace, showWorkspaceGoal } from '../../runtime/index.js';
import { BACKUP_LOCATIONS, type BackupLocation, type BackupService, type Job, type UploadPart } from '../backups.js';
import { BackupCreator, OFFERED_PROFILES } from '../backup-create.js';
import type { CaptureProfile } from '../../runtime/index.js';
import { requestBody } from '../body.js';
import { bodyNotOctetStream, fieldInvalid, routeNotFound } from '../errors.js';
import { bodyText, sse, WRITE, type Routes } from '../routing.js';

/** A backup job's progress and result as server-sent events, until it ends or the client goes. */
async function streamJob(
  req: FastifyRequest<{ Params: { id: string } }>,
  reply: FastifyReply,
  backups: BackupService,
): Promise<void> {
  const { job, events } = backups.job(req.params.id);
  const out = sse(req, reply);
  if (job.progress) out.send('progress', job.progress);
  if (job.state !== 'verifying') {
    out.send('result', job);
    out.end();
    return;
  }
  await new Promise<void>((resolveDone) => {
    const progress = (p: unknown) => out.send('progress', p);
    const result = (j: Job) => {
      out.send('result', j);
      finish();
    };
    const finish = () => {
      events.off('progress', progress);
      events.off('result', result);
      out.end();
      resolveDone();
    };
    events.on('progress', progress);
    events.once('result', result);
    out.signal.addEventListener('abort', finish, { once: true });
  });
}

/** Backups: the root's backups, uploads, verify jobs and their events. */
export function registerBackupRoutes({ app, o, root, timeouts, backups }: Routes): void {
  const creator = new BackupCreator(root, backups, o.authorityDir);
  app.addHook('onClose', async () => creator.close());
  const location = (v: unknown, fallback: BackupLocation): BackupLocation => {
    if (v === undefined) return fallback;
    if (!(BACKUP_LOCATIONS as readonly unknown[]).includes(v))
      throw fieldInvalid(`location is one of ${BACKUP_LOCATIONS.join(', ')}.`);
    return v as BackupLocation;
  };
  app.get('/api/backups', async () => ({ backups: backups.listBackups() }));
  // Back up now: into the user's backups folder (outside any root) unless the root's own is asked for.
  app.post<{ Body: { location?: unknown; profile?: unknown } | undefined }>(
    '/api/backups',
    { config: WRITE },
    async (req, reply) => {
      const profile = req.body?.profile ?? 'online';
      if (!(OFFERED_PROFILES as readonly unknown[]).includes(profile))
        throw fieldInvalid(`profile is one of ${OFFERED_PROFILES.join(', ')}.`);
      return reply.code(202).send(creator.start(location(req.body?.location, 'user'), profile as CaptureProfile));
    },
  );
  app.get('/api/backups/runs', async () => ({ runs: creator.list() }));
  app.get<{ Params: { id: string } }>('/api/backups/runs/:id', async (req) => creator.get(req.params.id));
  app.post<{ Params: { id: string }; Body: { location?: unknown } | undefined }>(
    '/api/backups/:id/verify',
    { config: WRITE },
    async (req, reply) =>
      reply
        .code(202)
        .send({ job_id: backups.startBackupVerify(req.params.id, location(req.body?.location, 'root')).job_id }),
  );
  app.post('/api/backups/uploads', { config: WRITE }, async (_req, reply) =>
    reply.code(201).send({ upload_id: backups.createUpload() }),
  );
  app.get('/api/backups/uploads', async () => ({ uploads: backups.listUploads() }));
  app.delete<{ Params: { id: string } }>('/api/backups/uploads/:id', { config: WRITE }, async (req, reply) => {
    backups.discardUpload(req.params.id);
    return reply.code(204).send();
  });
  app.put<{ Params: { id: string; part: string } }>(
    '/api/backups/uploads/:id/:part',
    { config: WRITE },
    async (req) => {
      const part = req.params.part;
      if (part !== 'archive' && part !== 'manifest') throw routeNotFound();
      if (typeof req.body !== 'object' || req.body === null || !('pipe' in req.body)) throw bodyNotOctetStream(part);
      const declared = req.headers['content-length'] !== undefined ? Number(req.headers['content-length']) : undefined;
      const body = req.body as Readable;
      return backups.receive(
        req.params.id,
        part as UploadPart,
        body,
        requestBody(req.raw, body, timeouts.bodyIdleMs),
        Number.isFinite(declared) ? declared : undefined,
      );
    },
  );
  app.post<{ Params: { id: string } }>('/api/backups/uploads/:id/verify', { config: WRITE }, async (req, reply) =>
    reply.code(202).send({ job_id: backups.startVerify(req.params.id).job_id }),
  );
  app.get<{ Params: { id: string } }>('/api/backups/jobs/:id', async (req) => backups.job(req.params.id).job);
  app.get<{ Params: { id: string } }>('/api/backups/jobs/:id/events', async (req, reply) =>
    streamJob(req, reply, backups),
  );
}

/** Audits and their recovery workspaces. */
export function registerAuditRoutes({ app, backups }: Routes): void {
  app.get('/api/audits', async () => ({ audits: backups.listAudits() }));
  app.get<{ Params: { id: string } }>('/api/audits/:id', async (req) => backups.summary(req.params.id));
  // What the backup holds in the operator's terms: from the private audit, for the token's holder only.
  app.get<{ Params: { id: string } }>('/api/audits/:id/contents', async (req) => backups.contents(req.params.id));
  app.get<{ Params: { id: string } }>('/api/audits/:id/raw', async (req, reply) => {
    const { bytes } = backups.audit(req.params.id);
    const digest = sha256Hex(bytes);
    return reply.type('application/json').header('x-loopx-sha256', digest).header('etag', `"${digest}"`).send(bytes);
  });
  // An audit's recovery workspace read back through the owners' historical readers: read only, inert.
  app.get<{ Params: { id: string } }>('/api/audits/:id/workspace', async (req) =>
    listWorkspace(backups.destination(req.params.id)),
  );
  app.get<{ Params: { id: string; goal: string } }>('/api/audits/:id/workspace/goals/:goal', async (req) => {
    // Over HTTP the listing is a route, never the destination's path.
    return showWorkspaceGoal(backups.destination(req.params.id), req.params.goal, {
      listAction: `GET /api/audits/${req.params.id}/workspace`,
    });
  });
}

/** Recoveries: one Goal of an audit recovered into a new root beside this one (adoptions.ts). */
export function registerRecoveryRoutes({ app, adoptions, backups }: Routes): void {
  const text = (v: unknown, field: string) => bodyText(v, field, true);
  app.get('/api/recoveries', async () => ({ recoveries: await adoptions.list() }));
  app.get<{ Params: { id: string }; Querystring: { goal?: string } }>(
    '/api/audits/:id/recoveries/proposal',
    async (req) => ({
      destination_name: adoptions.proposeName(text(req.query.goal, 'goal') ?? 'goal'),
    }),
  );
  app.post<{ Params: { id: string }; Body: { goal_id?: unknown; destination_name?: unknown } | undefined }>(
    '/api/audits/:id/recoveries',
    { config: WRITE },
    async (req, reply) => {
      const goal = text(req.body?.goal_id, 'goal_id');
      if (goal === undefined) throw fieldInvalid('goal_id must be a non-empty string.');
      return reply
        .code(201)
        .send(await adoptions.plan(req.params.id, goal, text(req.body?.destination_name, 'destination_name')));
    },
  );
  app.get<{ Params: { id: string } }>('/api/recoveries/:id', async (req) => adoptions.show(req.params.id));
  app.delete<{ Params: { id: string }; Body: { confirm?: unknown } | undefined }>(
    '/api/audits/:id',
    { config: WRITE },
    async (req, reply) => {
      const confirm = text(req.body?.confirm, 'confirm');
      if (confirm === undefined) throw fieldInvalid('confirm must be the audit’s recovery id.');
      backups.deleteAudit(req.params.id, confirm, await adoptions.usesAudit(req.params.id));
      return reply.code(204).send();
    },
  );
  app.post<{ Params: { id: string }; Body: { confirm?: unknown } | undefined }>(
    '/api/recoveries/:id/apply',
    { config: WRITE },
    async (req, reply) => {
      const confirm = text(req.body?.confirm, 'confirm');
      if (confirm === undefined) throw fieldInvalid('confirm must be the plan digest.');
      return reply.code(202).send(await adoptions.apply(req.params.id, confirm));
    },
  );
  app.post<{
    Params: { id: string; hold: string };
    Body: { outcome?: unknown; receiver_gone?: unknown; confirm?: unknown; reason?: unknown } | undefined;
  }>('/api/recoveries/:id/holds/:hold/resolve', { config: WRITE }, async (req) => {
    const outcome = text(req.body?.outcome, 'outcome');
    const confirm = text(req.body?.confirm, 'confirm');
    const reason = text(req.body?.reason, 'reason');
    const gone = req.body?.receiver_gone;
    if (gone !== undefined && gone !== true) throw fieldInvalid('receiver_gone is true, or absent.');
    if (gone === true) {
      if (outcome !== undefined) throw fieldInvalid('receiver_gone and outcome settle different holds; give one.');
      if (confirm === undefined || reason === undefined)
        throw fieldInvalid("receiver_gone needs confirm (the hold's digest) and reason.");
      return adoptions.resolve(req.params.id, req.params.hold, { kind: 'receiver_gone', confirm, reason });
    }
    if (confirm !== undefined || reason !== undefined) throw fieldInvalid('confirm and reason go with receiver_gone.');
    if (outcome !== undefined && outcome !== 'committed' && outcome !== 'absent')
      throw fieldInvalid('outcome is committed or absent.');
    return adoptions.resolve(
      req.params.id,
      req.params.hold,
      outcome === undefined ? { kind: 'ask' } : { kind: 'outcome', outcome },
    );
  });
  app.post<{ Params: { id: string } }>('/api/recoveries/:id/abort', { config: WRITE }, async (req) =>
    adoptions.abort(req.params.id),
  );
}
