/**
 * What the browser may send about a backup repository, and what it may read back. In: a
 * repository URL (a directory's absolute path, `file:///…` or `s3://BUCKET/PREFIX?…`, whose
 * credentials are a reference), recipients (public keys or references) and a key — by reference
 * only (`env:NAME` or a key file's absolute path): anything else is refused without being echoed,
 * since it may be the key itself. Out: a repository refusal with the repository named as the
 * operator typed it (never the path the repository layer derives from the daemon's working
 * directory) and, where it names a command line, the route that does the same over HTTP.
 */
import { isLoopxError, LoopxError } from '../core/index.js';
import { REPO_CODES, repositoryLabel } from '../runtime/index.js';
import { fieldInvalid } from './errors.js';

const URL_MAX = 2048;
const REFERENCE_MAX = 4096;
const ENV_REFERENCE = /^env:[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const PUBLIC_KEY = /^loopx-x25519-pub:[A-Za-z0-9+/=_-]{1,256}$/;
/** Recipients one backup is sealed for, at most. */
export const MAX_RECIPIENTS = 16;

/** An absolute path (or `file:` and one), printable, one line: a reference to a file, never its bytes. */
const fileReference = (v: string): boolean => /^(file:)?\/[^\0\n\r]*$/.test(v) && v.length <= REFERENCE_MAX;

/**
 * The repository a request names. A directory by its absolute path (the daemon's working
 * directory means nothing to a browser) or `file:///…`; an S3 bucket by its `s3://` URL. The
 * repository layer checks the rest (its options, a credential only by reference).
 */
export function repositoryUrl(v: unknown): string {
  if (typeof v !== 'string' || v.length === 0 || v.length > URL_MAX || /[\0\n\r]/.test(v))
    throw fieldInvalid('repository must be a non-empty URL of at most 2048 characters.');
  if (v.startsWith('s3://') || v.startsWith('file:///') || v.startsWith('/')) return v;
  throw fieldInvalid(
    "repository is a directory's absolute path (or file:///…) or s3://BUCKET/PREFIX?endpoint=…&region=…&credentials=env:NAME.",
  );
}

/** An encrypted backup's key: absent, or a reference (`env:NAME`, or a key file's absolute path) — never the key. */
export function keyReference(v: unknown): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'string' && (ENV_REFERENCE.test(v) || fileReference(v))) return v;
  throw fieldInvalid("key is a reference: env:NAME, or the absolute path of a 0600 key file — never the key's value.");
}

/** Who a backup is sealed for: absent (not encrypted), or 1–16 public keys or passphrase references. */
export function recipientList(v: unknown): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  const ok = (r: unknown): r is string =>
    typeof r === 'string' && (PUBLIC_KEY.test(r) || ENV_REFERENCE.test(r) || fileReference(r));
  if (!Array.isArray(v) || v.length === 0 || v.length > MAX_RECIPIENTS || !v.every(ok))
    throw fieldInvalid(
      `recipients is a list of 1 to ${MAX_RECIPIENTS}: public keys (loopx-x25519-pub:…) or references to a passphrase or key (env:NAME, or an absolute path) — never a secret.`,
    );
  return [...new Set(v)];
}

/** Whether the URL names an S3 bucket (else a directory). */
export const isS3 = (url: string): boolean => url.startsWith('s3://');

/** How the repository layer names a directory repository from `cwd` (its public label), to put the typed URL in its place. */
function dirLabel(url: string, cwd: string): string | undefined {
  if (isS3(url)) return undefined;
  try {
    return repositoryLabel(url, cwd);
  } catch {
    return undefined;
  }
}

/** Shell-quoted as a command line needs it (an S3 URL holds `&` and `?`). */
const shellWord = (s: string): string => (/^[A-Za-z0-9_./:=@%+,-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`);

/** Next actions over HTTP for the refusals whose command-line next action has a route that does the same. */
function httpNextAction(e: LoopxError, url: string): string | undefined {
  const backupId = (e.details as { backup_id?: unknown } | undefined)?.backup_id;
  const id = typeof backupId === 'string' ? encodeURIComponent(backupId) : '<backup_id>';
  if (e.code === REPO_CODES.keyRequired)
    return `verify it with its key by reference (env:NAME, or a 0600 key file's absolute path): POST /api/repositories/backups/${id}/verify with "key"`;
  if (e.code === REPO_CODES.encryptionRequired)
    return 'encrypt it for a recipient: POST /api/repositories/backups with "recipients" (public keys or env:NAME)';
  if (e.code === REPO_CODES.backupNotFound)
    return 'list its backups: GET /api/repositories/backups?repository=<the repository URL>';
  // A command that acts on the repository names it, as `--repo` would carry it on the command line.
  if (e.nextAction !== undefined && /: loopx repo /.test(e.nextAction) && !e.nextAction.includes('--repo'))
    return `${e.nextAction} --repo ${shellWord(url)}`;
  return e.nextAction;
}

/**
 * A refusal of the repository at `url`, as the browser may read it: its public label (a path
 * relative to `cwd`, the working directory of the process that refused) replaced by the URL as
 * the operator typed it, and its next action given as a route where there is one.
 */
export function publicRefusal(e: unknown, url: string, cwd: string = process.cwd()): unknown {
  if (!isLoopxError(e)) return e;
  const label = dirLabel(url, cwd);
  const text = (s: string) => (label === undefined ? s : s.split(label).join(url));
  const nextAction = httpNextAction(e, url);
  return new LoopxError(e.kind, e.code, text(e.message), {
    ...(nextAction !== undefined ? { nextAction: text(nextAction) } : {}),
    ...(e.details ? { details: e.details } : {}),
  });
}
