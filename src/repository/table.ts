/**
 * The repository providers, as a table (the same shape as the owners' storage providers): one row
 * per kind of storage, asked by a location's `provider`. Adding a kind of storage is its file plus
 * one row here. A row imports its implementation when a repository of its kind is opened, so the
 * S3 SDK loads only for an `s3://` repository.
 */
import { relative } from 'node:path';
import type { RepositoryLocation, RepositoryObjects, RepositoryProvider } from './contract.js';
import { parseRepositoryUrl } from './url.js';

const DIR: RepositoryProvider<Extract<RepositoryLocation, { provider: 'dir' }>> = {
  name: 'dir',
  open: async (location, _env, { create }) =>
    (await import('./dir.js')).openDir(location, create, DIR.describe(location)),
  // As the operator would type it from here: relative to the working directory, never absolute.
  describe: (location, cwd = process.cwd()) => `dir:${relative(cwd, location.path) || '.'}`,
};

const S3: RepositoryProvider<Extract<RepositoryLocation, { provider: 's3' }>> = {
  name: 's3',
  open: async (location, env) => (await import('./s3.js')).openS3(location, env, S3.describe(location)),
  describe: (l) => `s3://${l.bucket}${l.prefix === '' ? '' : `/${l.prefix}`}`,
};

const MEMORY: RepositoryProvider<Extract<RepositoryLocation, { provider: 'memory' }>> = {
  name: 'memory',
  open: async (location) => (await import('./memory.js')).openMemory(location),
  describe: (l) => `memory:${l.name}`,
};

export const REPOSITORY_PROVIDERS = { dir: DIR, s3: S3, memory: MEMORY } as const;

type Row = RepositoryProvider<RepositoryLocation>;
const rowOf = (location: RepositoryLocation): Row => REPOSITORY_PROVIDERS[location.provider] as Row;

/** How a repository is named in public output (a directory relative to `cwd`, default the process's working directory). */
export const describeRepository = (location: RepositoryLocation, cwd?: string): string =>
  rowOf(location).describe(location, cwd);

/** The objects of the repository at `url` (see url.ts), opened through its provider's row. */
export async function openRepositoryObjects(
  url: string | RepositoryLocation,
  options: { readonly create?: boolean; readonly env?: NodeJS.ProcessEnv } = {},
): Promise<{ readonly location: RepositoryLocation; readonly label: string; readonly objects: RepositoryObjects }> {
  const env = options.env ?? process.env;
  const location = typeof url === 'string' ? parseRepositoryUrl(url, env) : url;
  const objects = await rowOf(location).open(location, env, { create: options.create ?? false });
  return { location, label: describeRepository(location), objects };
}
