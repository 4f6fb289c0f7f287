/**
 * The daemon's repository process (repositories.ts starts it): one backup into a repository, or
 * one verification of a repository's backup, through the same runtime calls as `backup-state
 * --execute --repo R` and `backup-state verify --repo R --backup-id B --execute`. It runs apart
 * from the daemon because a capture and, above all, the decoding of a fetched archive must never
 * happen in the daemon's process; it runs with the daemon's environment because the references a
 * repository URL, a recipient or a key names (`env:NAME`) name variables of that environment.
 *
 * It reads one JSON request from stdin and answers on stdout, one JSON document per line:
 * `{"progress": {step, done, total}}` while a verification runs, then exactly one of
 * `{"result": …}`, `{"error": {kind, code, message, next_action, details}}` (a typed refusal) or
 * `{"failed": true}` (anything else, whose message is not shown: it may name paths). SIGTERM stops
 * a verification, which removes what it created. It never writes a key or credential value: it
 * only ever holds references, and the runtime resolves them.
 */
import { isLoopxError } from '../core/index.js';
import {
  backupToRepository,
  createBackupWithProfile,
  verifyFromRepository,
  type CaptureProfile,
} from '../runtime/index.js';

export type RepositoryRequest =
  | {
      readonly op: 'backup';
      readonly root: string;
      readonly authorityDir?: string;
      readonly url: string;
      readonly profile: CaptureProfile;
      /** Present: seal the backup for these recipients (public keys or references). */
      readonly recipients?: readonly string[];
    }
  | {
      readonly op: 'verify';
      readonly root: string;
      readonly authorityDir: string;
      readonly url: string;
      readonly backupId: string;
      readonly destination: string;
      /** An encrypted backup's key, by reference. */
      readonly key?: string;
    };

const write = (doc: unknown): Promise<void> =>
  new Promise((done) => process.stdout.write(`${JSON.stringify(doc)}\n`, () => done()));

async function backUp(r: Extract<RepositoryRequest, { op: 'backup' }>) {
  const access = { root: r.root, ...(r.authorityDir !== undefined ? { authorityDir: r.authorityDir } : {}) };
  const done = await backupToRepository(
    access,
    r.url,
    { includeAutomations: false, includeSkills: false },
    (plan) => createBackupWithProfile(plan, { profile: r.profile }),
    r.recipients === undefined ? {} : { encryptFor: r.recipients },
  );
  const m = done.result.manifest_doc;
  return {
    backup_id: done.result.backup_id,
    archive_bytes: done.result.archive.size_bytes,
    achieved_profile: 'achieved_profile' in m.capture ? m.capture.achieved_profile : m.capture.profile,
    goals: m.goals.length,
    encrypted: done.entry.encrypted,
    placement: done.placement,
    repository_id: done.repository.id,
  };
}

async function verify(r: Extract<RepositoryRequest, { op: 'verify' }>, signal: AbortSignal) {
  const done = await verifyFromRepository(
    r.url,
    r.backupId,
    { destination: r.destination, protect: { liveRoot: r.root, authorityDir: r.authorityDir } },
    {
      execute: true,
      signal,
      onProgress: (p) => void write({ progress: p }),
      ...(r.key !== undefined ? { key: r.key } : {}),
    },
  );
  if (!done.executed) throw new Error('the verification did not run');
  const s = done.outcome.summary;
  return { recovery_id: s.recovery_id, phase: s.phase, operator_state: s.operator_state };
}

async function main(): Promise<void> {
  let input = '';
  for await (const chunk of process.stdin) input += String(chunk);
  const request = JSON.parse(input) as RepositoryRequest;
  const stop = new AbortController();
  // A verification stops cleanly (what it created is removed); a capture runs to its end.
  if (request.op === 'verify') process.once('SIGTERM', () => stop.abort());
  try {
    const result = request.op === 'backup' ? await backUp(request) : await verify(request, stop.signal);
    await write({ result });
  } catch (e) {
    await write(
      isLoopxError(e)
        ? {
            error: {
              kind: e.kind,
              code: e.code,
              message: e.message,
              next_action: e.nextAction ?? null,
              details: e.details ?? null,
            },
          }
        : { failed: true },
    );
  }
}

await main();
process.exit(0);
