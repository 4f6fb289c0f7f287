/**
 * The daemon's backup-repository routes (the service in repositories.ts does the work): list a
 * repository's backups, back this root up into one, verify one of its backups, plan a recovery from
 * a verified one, and read a job. Every body names the repository by its URL; a key only by
 * reference (repository-input.ts refuses anything else without echoing it).
 */
import { BACKUP_ID, type CaptureProfile } from '../../runtime/index.js';
import { OFFERED_PROFILES } from '../backup-create.js';
import { fieldInvalid } from '../errors.js';
import { RepositoryService } from '../repositories.js';
import { keyReference, recipientList, repositoryUrl } from '../repository-input.js';
import { bodyText, WRITE, type Routes } from '../routing.js';

const backupId = (v: string): string => {
  if (!BACKUP_ID.test(v)) throw fieldInvalid('A backup id is 1–128 letters, digits, dots, underscores and hyphens.');
  return v;
};

const profileOf = (v: unknown): CaptureProfile => {
  const profile = v ?? 'online';
  if (!(OFFERED_PROFILES as readonly unknown[]).includes(profile))
    throw fieldInvalid(`profile is one of ${OFFERED_PROFILES.join(', ')}.`);
  return profile as CaptureProfile;
};

export function registerRepositoryRoutes({ app, o, root, backups, adoptions }: Routes): void {
  const repositories = new RepositoryService(root, o.authorityDir, backups, adoptions);
  app.addHook('onClose', async () => repositories.close());
  app.get<{ Querystring: { repository?: unknown } }>('/api/repositories/backups', async (req) =>
    repositories.list(repositoryUrl(req.query.repository)),
  );
  app.post<{ Body: { repository?: unknown; profile?: unknown; recipients?: unknown } | undefined }>(
    '/api/repositories/backups',
    { config: WRITE },
    async (req, reply) => {
      const url = repositoryUrl(req.body?.repository);
      const profile = profileOf(req.body?.profile);
      const recipients = recipientList(req.body?.recipients);
      return reply.code(202).send(await repositories.startBackup(url, profile, recipients));
    },
  );
  app.post<{ Params: { id: string }; Body: { repository?: unknown; key?: unknown } | undefined }>(
    '/api/repositories/backups/:id/verify',
    { config: WRITE },
    async (req, reply) => {
      const url = repositoryUrl(req.body?.repository);
      const key = keyReference(req.body?.key);
      return reply.code(202).send(await repositories.startVerify(url, backupId(req.params.id), key));
    },
  );
  app.post<{
    Params: { id: string };
    Body: { repository?: unknown; goal_id?: unknown; destination_name?: unknown } | undefined;
  }>('/api/repositories/backups/:id/recoveries', { config: WRITE }, async (req, reply) => {
    const url = repositoryUrl(req.body?.repository);
    const goal = bodyText(req.body?.goal_id, 'goal_id')!;
    const name = bodyText(req.body?.destination_name, 'destination_name', true);
    return reply.code(201).send(await repositories.planRecovery(url, backupId(req.params.id), goal, name));
  });
  app.get<{ Params: { id: string } }>('/api/repositories/jobs/:id', async (req) => repositories.job(req.params.id));
}
