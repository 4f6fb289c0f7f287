/**
 * An S3-compatible repository: the storage port (contract.ts) over a bucket and prefix, through
 * the AWS SDK for JavaScript v3 (`@aws-sdk/client-s3`) and its multipart upload helper
 * (`@aws-sdk/lib-storage`). Loaded only when an `s3://` repository is opened (table.ts), so no
 * other command pays for the SDK.
 *
 *   - create: `Upload` with `If-None-Match: *` — a single PutObject for a small body, else a
 *     multipart upload whose CompleteMultipartUpload carries the condition (the helper passes the
 *     parameters through), so the object appears whole or not at all and never replaces another.
 *     A failed multipart upload is aborted; a crash can leave an incomplete upload, which is not an
 *     object and is never listed.
 *   - replace / remove with a tag: PutObject / DeleteObject with `If-Match: <ETag>`.
 *   - a create whose answer was lost is retried by the SDK and then meets its own object (412): after
 *     a retry, an object holding exactly our bytes is taken as our create; anything else, and any
 *     refusal at the first attempt, is "exists";
 *   - 412 (and 409, S3's answer to a conditional write racing another) is the contract's
 *     "exists"/"changed"; 404 is "missing"; anything else after the SDK's retries is
 *     `repo_unreachable`, said without the endpoint's credentials.
 *
 * `repo init` does not trust a server to honour the conditions: it probes (repository.ts).
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type ListObjectsV2CommandOutput,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { checkKey, type ObjectBody, type ObjectInfo, type RepositoryObjects, type S3Location } from './contract.js';
import { hasCode } from '../core/index.js';
import { REPO_CODES, credentialsMissing, objectChanged, objectExists, objectMissing, unreachable } from './codes.js';

/** Parts of a multipart upload: 16 MiB, two in flight (bounded memory: about 32 MiB per upload). */
const PART_BYTES = 16 * 1024 * 1024;
const PARTS_IN_FLIGHT = 2;

interface SdkError {
  readonly name?: string;
  readonly $metadata?: { readonly httpStatusCode?: number; readonly attempts?: number };
  readonly code?: string;
}
const statusOf = (e: unknown): number | undefined => (e as SdkError)?.$metadata?.httpStatusCode;

/** The credentials a reference names, or undefined for the SDK's standard chain (AWS_* variables, profiles). */
function credentialsOf(reference: string | undefined, env: NodeJS.ProcessEnv) {
  if (reference === undefined) return undefined;
  const value = env[reference.slice('env:'.length)];
  const parts = value?.split(':') ?? [];
  if (parts.length < 2 || parts.length > 3 || parts.some((p) => p.length === 0)) throw credentialsMissing(reference);
  return { accessKeyId: parts[0]!, secretAccessKey: parts[1]!, ...(parts[2] ? { sessionToken: parts[2] } : {}) };
}

export async function openS3(location: S3Location, env: NodeJS.ProcessEnv, label: string): Promise<RepositoryObjects> {
  // The SDK warns on every process about Node 20's support ending; loopx supports Node 20 and an
  // operator's output is not the place for it.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const credentials = credentialsOf(location.credentials, env);
  const client = new S3Client({
    region: location.region,
    forcePathStyle: location.pathStyle,
    maxAttempts: 4,
    ...(location.endpoint ? { endpoint: location.endpoint } : {}),
    ...(credentials ? { credentials } : {}),
  });
  return new S3Objects(client, location.bucket, location.prefix, label);
}

class S3Objects implements RepositoryObjects {
  readonly provider = 's3';
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly prefix: string,
    private readonly label: string,
  ) {}

  private full(key: string): string {
    checkKey(key);
    return this.prefix === '' ? key : `${this.prefix}/${key}`;
  }

  /** An SDK failure as the contract's refusal; `conditional` says what a 412/409 means here. */
  private failure(e: unknown, key: string, conditional: 'exists' | 'changed' | 'none'): Error {
    const status = statusOf(e);
    if ((status === 412 || status === 409) && conditional === 'exists') return objectExists(key);
    if ((status === 412 || status === 409 || status === 404) && conditional === 'changed') return objectChanged(key);
    if (status === 404 || (e as SdkError)?.name === 'NoSuchKey') return objectMissing(key);
    const why =
      status !== undefined ? `HTTP ${status}` : ((e as SdkError)?.code ?? (e as SdkError)?.name ?? 'no answer');
    return unreachable(this.label, why.slice(0, 60));
  }

  async create(key: string, body: ObjectBody): Promise<ObjectInfo> {
    const size = body instanceof Uint8Array ? body.byteLength : body.size;
    const upload = new Upload({
      client: this.client,
      queueSize: PARTS_IN_FLIGHT,
      partSize: PART_BYTES,
      leavePartsOnError: false,
      params: {
        Bucket: this.bucket,
        Key: this.full(key),
        Body:
          body instanceof Uint8Array
            ? Buffer.from(body)
            : body.size === 0
              ? Buffer.alloc(0)
              : createReadStream(body.path, { end: body.size - 1 }),
        ContentLength: size,
        IfNoneMatch: '*',
      },
    });
    try {
      const done = await upload.done();
      return { key, size, etag: done.ETag ?? '', modified: new Date().toISOString() };
    } catch (e) {
      const refusal = this.failure(e, key, 'exists');
      // The SDK retries a write whose answer was lost; the retry then meets our own object (412).
      // Only then do the bytes decide — an object identical to ours is our create, anything else is
      // someone else's. A refusal at the first attempt is always "exists", as for every provider.
      if (hasCode(refusal, REPO_CODES.objectExists) && ((e as SdkError)?.$metadata?.attempts ?? 1) > 1) {
        const mine = await this.sameBytes(key, body);
        if (mine) return mine;
      }
      throw refusal;
    }
  }

  /** The object at `key` when it holds exactly `body`'s bytes (size, then SHA-256), else undefined. */
  private async sameBytes(key: string, body: ObjectBody): Promise<ObjectInfo | undefined> {
    const head = await this.head(key);
    const size = body instanceof Uint8Array ? body.byteLength : body.size;
    if (head === undefined || head.size !== size) return undefined;
    const digest = async (stream: Iterable<unknown> | AsyncIterable<unknown>) => {
      const h = createHash('sha256');
      for await (const c of stream) h.update(c as Buffer);
      return h.digest('hex');
    };
    const ours =
      body instanceof Uint8Array
        ? createHash('sha256').update(body).digest('hex')
        : await digest(body.size > 0 ? createReadStream(body.path, { end: size - 1 }) : []);
    return (await digest(await this.read(key))) === ours ? head : undefined;
  }

  async replace(key: string, etag: string, body: Uint8Array): Promise<ObjectInfo> {
    try {
      const out = await this.client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: this.full(key), Body: Buffer.from(body), IfMatch: etag }),
      );
      return { key, size: body.byteLength, etag: out.ETag ?? '', modified: new Date().toISOString() };
    } catch (e) {
      throw this.failure(e, key, 'changed');
    }
  }

  async remove(key: string, etag?: string): Promise<void> {
    try {
      await this.client.send(
        new DeleteObjectCommand({ Bucket: this.bucket, Key: this.full(key), ...(etag ? { IfMatch: etag } : {}) }),
      );
    } catch (e) {
      if (statusOf(e) === 404) return; // already gone
      throw this.failure(e, key, 'changed');
    }
  }

  async read(key: string): Promise<Readable> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.full(key) }));
      return out.Body as Readable;
    } catch (e) {
      throw this.failure(e, key, 'none');
    }
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.full(key) }));
      return {
        key,
        size: out.ContentLength ?? 0,
        etag: out.ETag ?? '',
        modified: (out.LastModified ?? new Date()).toISOString(),
      };
    } catch (e) {
      if (statusOf(e) === 404 || (e as SdkError)?.name === 'NotFound') return undefined;
      throw this.failure(e, key, 'none');
    }
  }

  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    const strip = this.prefix === '' ? 0 : this.prefix.length + 1;
    let token: string | undefined;
    do {
      let page: ListObjectsV2CommandOutput;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: this.prefix === '' ? prefix : `${this.prefix}/${prefix}`,
            ...(token ? { ContinuationToken: token } : {}),
          }),
        );
      } catch (e) {
        throw this.failure(e, prefix, 'none');
      }
      for (const o of page.Contents ?? []) {
        const key = (o.Key ?? '').slice(strip);
        // A key outside the safe alphabet is not one loopx wrote: it is not part of the repository.
        if (/^[A-Za-z0-9_-][A-Za-z0-9._/-]*$/.test(key) && !key.includes('//'))
          yield { key, size: o.Size ?? 0, etag: o.ETag ?? '', modified: (o.LastModified ?? new Date()).toISOString() };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}
