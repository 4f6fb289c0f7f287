/**
 * The S3 wire facts the fault proxy (s3-fault-proxy.ts) needs and s3rver does not provide: which
 * operation a path-style request is, S3's XML error answers, the `aws-chunked` body framing the AWS
 * SDK v3 sends for streamed bodies (S3 decodes it; s3rver stores the framing as the object's
 * bytes), ETag comparison, and a per-key readers/writer lock (S3 swaps an object atomically;
 * s3rver writes it in place, so two writers interleave and a reader sees a half-written file).
 * It never talks to the network; it holds no state but the locks.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/** The S3 API operations the proxy tells apart (path-style addressing only, as the tests use). */
export type S3Operation =
  | 'PutObject'
  | 'CopyObject'
  | 'GetObject'
  | 'HeadObject'
  | 'DeleteObject'
  | 'DeleteObjects'
  | 'CreateMultipartUpload'
  | 'UploadPart'
  | 'UploadPartCopy'
  | 'CompleteMultipartUpload'
  | 'AbortMultipartUpload'
  | 'ListParts'
  | 'ListMultipartUploads'
  | 'ListObjectsV2'
  | 'ListObjects'
  | 'HeadBucket'
  | 'CreateBucket'
  | 'DeleteBucket'
  | 'ListBuckets'
  | 'Other';

export interface S3Target {
  readonly operation: S3Operation;
  readonly bucket: string | undefined;
  readonly key: string | undefined;
  readonly uploadId: string | undefined;
  /** The request path without its query, as the client encoded it (the object's address upstream). */
  readonly path: string;
}

function bucketOperation(method: string, query: URLSearchParams): S3Operation {
  if (method === 'GET') {
    if (query.get('list-type') === '2') return 'ListObjectsV2';
    if (query.has('uploads')) return 'ListMultipartUploads';
    return [...query.keys()].every((k) => LIST_V1_PARAMS.has(k)) ? 'ListObjects' : 'Other';
  }
  if (method === 'HEAD') return 'HeadBucket';
  if (method === 'POST' && query.has('delete')) return 'DeleteObjects';
  if (method === 'PUT' && query.size === 0) return 'CreateBucket';
  if (method === 'DELETE' && query.size === 0) return 'DeleteBucket';
  return 'Other';
}

const LIST_V1_PARAMS = new Set(['prefix', 'delimiter', 'marker', 'max-keys', 'encoding-type', 'x-id']);

function objectOperation(method: string, query: URLSearchParams, headers: IncomingHttpHeaders): S3Operation {
  const copy = headers['x-amz-copy-source'] !== undefined;
  const upload = query.has('uploadId');
  switch (method) {
    case 'PUT':
      if (upload && query.has('partNumber')) return copy ? 'UploadPartCopy' : 'UploadPart';
      if (query.has('tagging') || query.has('acl') || upload) return 'Other';
      return copy ? 'CopyObject' : 'PutObject';
    case 'POST':
      if (query.has('uploads')) return 'CreateMultipartUpload';
      return upload ? 'CompleteMultipartUpload' : 'Other';
    case 'GET':
      if (upload) return 'ListParts';
      return query.has('tagging') || query.has('acl') ? 'Other' : 'GetObject';
    case 'HEAD':
      return 'HeadObject';
    case 'DELETE':
      if (upload) return 'AbortMultipartUpload';
      return query.has('tagging') ? 'Other' : 'DeleteObject';
    default:
      return 'Other';
  }
}

/** Classifies a path-style request (`/<bucket>/<key>?<query>`). */
export function classify(method: string, url: string, headers: IncomingHttpHeaders): S3Target {
  const parsed = new URL(url, 'http://proxy.invalid');
  const [, rawBucket = '', ...rawKey] = parsed.pathname.split('/');
  const bucket = rawBucket === '' ? undefined : decodeURIComponent(rawBucket);
  const key = rawKey.length === 0 || rawKey.join('/') === '' ? undefined : decodeURIComponent(rawKey.join('/'));
  const query = parsed.searchParams;
  const operation =
    bucket === undefined
      ? method === 'GET'
        ? 'ListBuckets'
        : 'Other'
      : key === undefined
        ? bucketOperation(method, query)
        : objectOperation(method, query, headers);
  return { operation, bucket, key, uploadId: query.get('uploadId') ?? undefined, path: parsed.pathname };
}

/** An answer the proxy gives itself, or one it read whole from upstream. */
export interface Answer {
  readonly status: number;
  readonly headers: OutgoingHttpHeaders;
  readonly body: Buffer;
  /** The S3 error code, on answers the proxy makes itself. */
  readonly code?: string;
}

const escapeXml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c] ?? c);

/** An S3 error answer: the XML body S3 sends (`<Error><Code>…`), with its request-id headers. */
export function s3Error(status: number, code: string, message: string, detail: Record<string, string> = {}): Answer {
  const requestId = randomBytes(8).toString('hex').toUpperCase();
  const hostId = randomBytes(32).toString('base64');
  const extra = Object.entries(detail)
    .map(([name, value]) => `<${name}>${escapeXml(value)}</${name}>`)
    .join('');
  const xml =
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message>${extra}` +
    `<RequestId>${requestId}</RequestId><HostId>${hostId}</HostId></Error>`;
  return {
    status,
    headers: { 'content-type': 'application/xml', 'x-amz-request-id': requestId, 'x-amz-id-2': hostId },
    body: Buffer.from(xml),
    code,
  };
}

/** The errors the proxy answers with, worded as S3 words them. */
export const S3_ERRORS = {
  internalError: () => s3Error(500, 'InternalError', 'We encountered an internal error. Please try again.'),
  slowDown: () => s3Error(503, 'SlowDown', 'Please reduce your request rate.'),
  preconditionFailed: (condition: 'If-Match' | 'If-None-Match') =>
    s3Error(412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold', {
      Condition: condition,
    }),
  noSuchKey: (key: string) => s3Error(404, 'NoSuchKey', 'The specified key does not exist.', { Key: key }),
  noSuchUpload: (uploadId: string) =>
    s3Error(
      404,
      'NoSuchUpload',
      'The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.',
      { UploadId: uploadId },
    ),
  notImplemented: (header: string) =>
    s3Error(501, 'NotImplemented', 'A header you provided implies functionality that is not implemented', {
      Header: header,
    }),
  incompleteBody: () =>
    s3Error(400, 'IncompleteBody', 'You did not provide the number of bytes specified by the Content-Length header'),
};

/** Whether a request body is framed as `aws-chunked` (the SDK's streamed upload with a trailing checksum). */
export function isAwsChunked(headers: IncomingHttpHeaders): boolean {
  return (headers['content-encoding'] ?? '').split(',').some((e) => e.trim() === 'aws-chunked');
}

/**
 * The payload of an `aws-chunked` body: `<hex size>[;chunk-signature=…]\r\n<bytes>\r\n` … `0\r\n`
 * then trailers (the checksum, not verified here). Undefined when the framing is broken.
 */
export function decodeAwsChunked(body: Buffer): Buffer | undefined {
  const chunks: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = body.indexOf('\r\n', at);
    if (eol < 0) return undefined;
    const size = Number.parseInt(body.toString('latin1', at, eol).split(';')[0] ?? '', 16);
    if (!Number.isInteger(size) || size < 0 || eol + 2 + size > body.length) return undefined;
    if (size === 0) return Buffer.concat(chunks);
    chunks.push(body.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

/** The headers of a decoded `aws-chunked` request, as S3 sees the object after decoding it. */
export function decodedHeaders(headers: IncomingHttpHeaders, length: number): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = { ...headers, 'content-length': String(length) };
  const encodings = (headers['content-encoding'] ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '' && e !== 'aws-chunked');
  if (encodings.length > 0) out['content-encoding'] = encodings.join(', ');
  else delete out['content-encoding'];
  for (const name of ['x-amz-decoded-content-length', 'x-amz-trailer', 'transfer-encoding']) delete out[name];
  return out;
}

/** ETags compare without their quotes (S3 accepts `"abc"` and `abc` alike) and without a weak `W/`. */
export function sameEtag(a: string, b: string): boolean {
  const bare = (s: string) => s.trim().replace(/^W\//, '').replace(/^"|"$/g, '');
  return bare(a) === bare(b);
}

type LockMode = 'read' | 'write';
interface KeyState {
  readers: number;
  writer: boolean;
  readonly queue: { readonly mode: LockMode; readonly grant: () => void }[];
}

/**
 * A first-come, first-served readers/writer lock per object key: many readers, or one writer.
 * A request holds at most one key, so it cannot deadlock.
 */
export class KeyLocks {
  private readonly keys = new Map<string, KeyState>();

  acquire(key: string, mode: LockMode): Promise<() => void> {
    let state = this.keys.get(key);
    if (state === undefined) {
      state = { readers: 0, writer: false, queue: [] };
      this.keys.set(key, state);
    }
    const held = state;
    return new Promise((resolve) => {
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        if (mode === 'write') held.writer = false;
        else held.readers -= 1;
        this.pump(key, held);
      };
      held.queue.push({ mode, grant: () => resolve(release) });
      this.pump(key, held);
    });
  }

  private pump(key: string, state: KeyState): void {
    for (let next = state.queue[0]; next !== undefined; next = state.queue[0]) {
      const free = next.mode === 'write' ? !state.writer && state.readers === 0 : !state.writer;
      if (!free) return;
      state.queue.shift();
      if (next.mode === 'write') state.writer = true;
      else state.readers += 1;
      next.grant();
    }
    if (!state.writer && state.readers === 0 && this.keys.get(key) === state) this.keys.delete(key);
  }
}
