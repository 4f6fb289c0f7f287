/**
 * Repository URLs, as an operator types them after `--repo` (or in LOOPX_REPOSITORY):
 *
 *   /mnt/offsite/loopx  ·  ./backups  ·  file:///mnt/offsite/loopx     a directory
 *   s3://BUCKET/PREFIX?endpoint=URL&region=R&path_style=true&credentials=env:NAME
 *                                                                     an S3-compatible bucket
 *   memory:NAME                                                       in-process (tests)
 *
 * S3 options: `endpoint` (absent: AWS itself), `region` (default us-east-1, or AWS_REGION),
 * `path_style` (true for most self-hosted servers), `credentials` (a reference: `env:NAME`, whose
 * value is `ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]`; absent: the standard AWS variables
 * and profiles). A secret is never part of the URL: a `user:password@` or an unknown option is
 * refused rather than ignored.
 */
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RepositoryLocation, S3Location } from './contract.js';
import { repoUrlInvalid } from './codes.js';

const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const PREFIX_SEGMENT = /^[A-Za-z0-9._-]{1,200}$/;
const S3_OPTIONS = new Set(['endpoint', 'region', 'path_style', 'credentials']);

export function parseRepositoryUrl(text: string, env: NodeJS.ProcessEnv = process.env): RepositoryLocation {
  if (text.length === 0 || text.length > 2048) throw repoUrlInvalid('it is empty or too long');
  if (text.startsWith('s3://')) return parseS3(text, env);
  if (text.startsWith('memory:')) {
    const name = text.slice('memory:'.length);
    if (!PREFIX_SEGMENT.test(name)) throw repoUrlInvalid('a memory repository needs a simple name');
    return { provider: 'memory', name };
  }
  if (text.startsWith('file://')) {
    let path: string;
    try {
      path = fileURLToPath(text);
    } catch {
      throw repoUrlInvalid('the file: URL names no local path');
    }
    return { provider: 'dir', path };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) throw repoUrlInvalid('its scheme is neither s3:// nor file://');
  return { provider: 'dir', path: isAbsolute(text) ? text : resolve(text) };
}

function parseS3(text: string, env: NodeJS.ProcessEnv): S3Location {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw repoUrlInvalid('it does not parse as a URL');
  }
  if (url.username !== '' || url.password !== '')
    throw repoUrlInvalid('credentials go in a reference (credentials=env:NAME), never in the URL');
  const bucket = url.hostname;
  if (!BUCKET.test(bucket)) throw repoUrlInvalid('the bucket name is not a valid S3 bucket name');
  const segments = url.pathname.split('/').filter((s) => s !== '');
  if (segments.some((s) => !PREFIX_SEGMENT.test(s) || s === '.' || s === '..'))
    throw repoUrlInvalid('the prefix may hold only letters, digits, ".", "_" and "-" between slashes');
  for (const key of url.searchParams.keys())
    if (!S3_OPTIONS.has(key)) throw repoUrlInvalid(`the option ${JSON.stringify(key.slice(0, 40))} is not known`);
  const endpoint = url.searchParams.get('endpoint') ?? undefined;
  if (endpoint !== undefined && !/^https?:\/\/[^/?#@]+\/?$/.test(endpoint))
    throw repoUrlInvalid('the endpoint must be http(s)://HOST[:PORT]');
  const credentials = url.searchParams.get('credentials') ?? undefined;
  if (credentials !== undefined && !/^env:[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(credentials))
    throw repoUrlInvalid('credentials must be a reference, env:NAME');
  const pathStyle = url.searchParams.get('path_style');
  if (pathStyle !== null && pathStyle !== 'true' && pathStyle !== 'false')
    throw repoUrlInvalid('path_style is true or false');
  return {
    provider: 's3',
    bucket,
    prefix: segments.join('/'),
    endpoint: endpoint?.replace(/\/$/, ''),
    region: url.searchParams.get('region') ?? env.AWS_REGION ?? 'us-east-1',
    pathStyle: pathStyle === 'true',
    credentials,
  };
}
