/**
 * The storage port of a backup repository: named, immutable objects in one flat key space, the
 * few operations a repository needs, and what each guarantees. A provider (a directory, an
 * S3-compatible bucket, memory for tests) implements exactly this; the repository format above it
 * (repository.ts) never learns which one it talks to. Like restic's backend interface, the failure
 * modes are part of the contract:
 *
 *   - `create` is atomic and never overwrites: a reader sees no object or the whole object, and a
 *     key that exists (whoever wrote it, whatever it holds) is refused with `repo_object_exists`.
 *     A failed or interrupted create leaves no object under the key (a provider may leave an
 *     unlisted fragment — an S3 multipart upload, a directory's temporary file — that `repo prune`
 *     removes). This is the publication primitive: a backup's objects are each created once.
 *   - `replace` is a compare-and-swap on the object's current tag (`etag`): it writes only when the
 *     object still carries that tag, else `repo_object_changed` (also when it is gone). Only the
 *     repository's small mutable objects (the maintenance lock, key sets) are ever replaced.
 *   - `remove` deletes when the tag matches (or unconditionally without one) and is idempotent: an
 *     absent object is not an error.
 *   - `read` streams the object's bytes (`repo_object_missing` when absent); `head` and `list`
 *     report size and tag. A listing may be stale (S3 lists eventually on some servers): nothing
 *     decides that an object is absent from a listing alone.
 *   - Transport failures that outlast the provider's retries are `repo_unreachable`. Nothing here
 *     is authority: every byte read back is verified by the caller.
 *
 * Keys are relative, `/`-separated, each segment `[A-Za-z0-9._-]+` not starting with a dot (checked
 * by `checkKey`): a key can never name something outside the repository, nor a provider's own
 * bookkeeping (a directory repository's `.tmp/` and `.lock`).
 */
import type { Readable } from 'node:stream';
import { objectKeyInvalid } from './codes.js';

/** What `head` and `list` report of an object. */
export interface ObjectInfo {
  readonly key: string;
  readonly size: number;
  /** The provider's tag of this exact object version (S3 ETag; a directory's file identity). */
  readonly etag: string;
  /** When this version was written (ISO 8601), as the storage reports it: prune's grace period reads it. */
  readonly modified: string;
}

/** The bytes of a new object: in memory, or a local file streamed from disk (archives). */
export type ObjectBody = Uint8Array | { readonly path: string; readonly size: number };

export interface RepositoryObjects {
  /** The provider row that opened it ('dir', 's3', 'memory'). */
  readonly provider: string;
  create(key: string, body: ObjectBody): Promise<ObjectInfo>;
  replace(key: string, etag: string, body: Uint8Array): Promise<ObjectInfo>;
  remove(key: string, etag?: string): Promise<void>;
  read(key: string): Promise<Readable>;
  head(key: string): Promise<ObjectInfo | undefined>;
  list(prefix: string): AsyncIterable<ObjectInfo>;
  /** The local file holding `key`, for a provider whose objects are local files (a directory): read in place, not copied. */
  localPath?(key: string): Promise<string | undefined>;
  /** Release connections and handles; the object is unusable afterwards. */
  close(): Promise<void>;
}

/** A provider row: which locations it serves and how it opens one. */
export interface RepositoryProvider<L extends RepositoryLocation = RepositoryLocation> {
  readonly name: L['provider'];
  /** Open the location's objects (a directory is created only by `init`). */
  open(location: L, env: NodeJS.ProcessEnv, options: { readonly create: boolean }): Promise<RepositoryObjects>;
  /** How the location is named in public output: never a credential, never an absolute path. */
  describe(location: L, cwd?: string): string;
}

/** A directory repository: another disk or a mounted share. */
export interface DirLocation {
  readonly provider: 'dir';
  readonly path: string;
}

/** An S3-compatible bucket and prefix. Credentials are a reference, resolved when opened. */
export interface S3Location {
  readonly provider: 's3';
  readonly bucket: string;
  readonly prefix: string;
  readonly endpoint: string | undefined;
  readonly region: string;
  readonly pathStyle: boolean;
  /** `env:NAME` (NAME holds `ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]`), or undefined for the standard AWS variables. */
  readonly credentials: string | undefined;
}

/** An in-process repository (tests and the conformance suite). */
export interface MemoryLocation {
  readonly provider: 'memory';
  readonly name: string;
}

export type RepositoryLocation = DirLocation | S3Location | MemoryLocation;

const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/;

/** Refuse a key that is not relative, `/`-separated segments of the safe alphabet. */
export function checkKey(key: string): string {
  const parts = key.split('/');
  if (key.length > 1024 || parts.some((p) => !SEGMENT.test(p))) throw objectKeyInvalid();
  return key;
}

/** The byte length of a body. */
export const bodySize = (body: ObjectBody): number => (body instanceof Uint8Array ? body.byteLength : body.size);
