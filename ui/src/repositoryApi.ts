/**
 * The daemon's backup-repository routes as the Repositories page calls them (docs/api.md): a
 * repository is named by its URL in every call; a key or a recipient only by reference. The
 * shapes are generated from docs/schemas/ (`npm run schemas:types`).
 */
import { ApiError, enc, getJson, postJson } from './api';
import type { DaemonRepositoryBackups } from './generated/repository-backups';
import type { DaemonRepositoryJob } from './generated/repository-job';

export type RepositoryListing = DaemonRepositoryBackups;
export type RepositoryBackup = DaemonRepositoryBackups['backups'][number];
export type RepositoryJob = DaemonRepositoryJob;

/** Where this tab keeps the last repository URL it listed (a URL holds references at most, never a secret). */
const URL_KEY = 'loopx.repository.url';

export function lastRepositoryUrl(): string {
  try {
    return sessionStorage.getItem(URL_KEY) ?? '';
  } catch {
    return '';
  }
}

export function rememberRepositoryUrl(url: string): void {
  try {
    sessionStorage.setItem(URL_KEY, url);
  } catch {
    // sessionStorage unavailable: the page forgets it on reload.
  }
}

export const listRepository = (url: string, signal?: AbortSignal) =>
  getJson<RepositoryListing>(`/api/repositories/backups?repository=${enc(url)}`, signal);

export const startRepositoryBackup = (
  body: { repository: string; profile: 'online' | 'quiescent'; recipients?: string[] },
  signal?: AbortSignal,
) => postJson<RepositoryJob>('/api/repositories/backups', body, signal);

export const startRepositoryVerify = (
  body: { repository: string; backupId: string; key?: string },
  signal?: AbortSignal,
) =>
  postJson<RepositoryJob>(
    `/api/repositories/backups/${enc(body.backupId)}/verify`,
    { repository: body.repository, ...(body.key !== undefined ? { key: body.key } : {}) },
    signal,
  );

const sleep = (ms: number) => new Promise<void>((r) => window.setTimeout(r, ms));

/** The job read again until it has ended (`onRunning` sees each state while it runs). */
export async function jobEnded(
  job: RepositoryJob,
  signal: AbortSignal,
  onRunning: (j: RepositoryJob) => void = () => undefined,
): Promise<RepositoryJob> {
  let j = job;
  while (j.state === 'running') {
    onRunning(j);
    await sleep(400);
    j = await getJson<RepositoryJob>(`/api/repositories/jobs/${enc(j.job_id)}`, signal);
  }
  return j;
}

/** A refused job's typed refusal, as the page shows every refusal. */
export function jobRefusal(job: RepositoryJob): ApiError {
  const e = job.error;
  return new ApiError(422, {
    code: e?.code ?? 'ui_unexpected_response',
    message: e?.message ?? 'The job ended without a result or a typed reason.',
    ...(e?.next_action ? { next_action: e.next_action } : {}),
  });
}

/** How long ago `iso` was, as an operator reads it ("3 min ago"). */
export function ageText(iso: string, now: number = Date.now()): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 120) return `${s} s ago`;
  if (s < 7200) return `${Math.round(s / 60)} min ago`;
  if (s < 172800) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}
