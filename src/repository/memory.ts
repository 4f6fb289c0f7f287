/**
 * The in-memory repository: the reference implementation of the storage port (contract.ts), for
 * tests and the conformance suite. Spaces are named (`memory:NAME`) and live as long as the
 * process, so two opens of one name see the same objects, as two processes would see one bucket.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { checkKey, type MemoryLocation, type ObjectBody, type ObjectInfo, type RepositoryObjects } from './contract.js';
import { objectChanged, objectExists, objectMissing } from './codes.js';

interface Stored {
  readonly bytes: Buffer;
  readonly etag: string;
  readonly modified: string;
}

const SPACES = new Map<string, Map<string, Stored>>();
let versions = 0;

const store = (bytes: Buffer): Stored => ({
  bytes,
  modified: new Date().toISOString(),
  etag: `${createHash('sha256').update(bytes).digest('hex').slice(0, 32)}-${++versions}`,
});
const info = (key: string, s: Stored): ObjectInfo => ({
  key,
  size: s.bytes.byteLength,
  etag: s.etag,
  modified: s.modified,
});
const bytesOf = (body: ObjectBody): Buffer =>
  body instanceof Uint8Array ? Buffer.from(body) : readFileSync(body.path).subarray(0, body.size);

export function openMemory(location: MemoryLocation): RepositoryObjects {
  let space = SPACES.get(location.name);
  if (!space) SPACES.set(location.name, (space = new Map()));
  const objects = space;
  return {
    provider: 'memory',
    async create(key, body) {
      if (objects.has(checkKey(key))) throw objectExists(key);
      const s = store(bytesOf(body));
      objects.set(key, s);
      return info(key, s);
    },
    async replace(key, etag, body) {
      const now = objects.get(checkKey(key));
      if (now === undefined || now.etag !== etag) throw objectChanged(key);
      const s = store(Buffer.from(body));
      objects.set(key, s);
      return info(key, s);
    },
    async remove(key, etag) {
      const now = objects.get(checkKey(key));
      if (now === undefined) return;
      if (etag !== undefined && now.etag !== etag) throw objectChanged(key);
      objects.delete(key);
    },
    async read(key) {
      const now = objects.get(checkKey(key));
      if (now === undefined) throw objectMissing(key);
      return Readable.from([now.bytes]);
    },
    async head(key) {
      const now = objects.get(checkKey(key));
      return now === undefined ? undefined : info(key, now);
    },
    async *list(prefix) {
      for (const key of [...objects.keys()].sort()) if (key.startsWith(prefix)) yield info(key, objects.get(key)!);
    },
    async close() {},
  };
}

/** Forget a memory space (tests). */
export const dropMemorySpace = (name: string): void => void SPACES.delete(name);
