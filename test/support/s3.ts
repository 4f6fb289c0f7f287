/**
 * A real S3-protocol server for tests: s3rver (koa, run in this process) on 127.0.0.1, a port the
 * system chooses, storing in a private temporary directory, with one bucket. `startS3WithProxy`
 * puts the fault proxy (s3-fault-proxy.ts) in front of it — use that one for repository tests:
 * bare s3rver ignores conditional writes, stores `aws-chunked` framing as object bytes, writes
 * objects in place (not atomically) and accepts any SigV4 signature (it checks only that the
 * access key id is S3RVER). Each call starts its own server, so test files run in parallel;
 * `stop()` may be called any number of times and removes everything it made.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { startS3FaultProxy, type S3FaultProxy } from './s3-fault-proxy.js';

// The SDK warns once per process on Node 20 unless told not to; it reads this when a client is made.
process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] = 'true';

/** The part of s3rver 3.7 (untyped CommonJS) used here. */
interface S3rverInstance {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
  readonly httpServer?: Server;
}
type S3rverConstructor = new (options: {
  port: number;
  address: string;
  silent: boolean;
  directory: string;
  configureBuckets: { name: string }[];
}) => S3rverInstance;
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverConstructor;

/** The only access key s3rver knows; it does not check the secret (nor any SigV4 signature). */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;
export const S3_REGION = 'us-east-1';

export interface S3Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** Client settings a test may change; the endpoint, region, credentials and path style are the fixture's. */
export type S3ClientOverrides = Omit<S3ClientConfig, 'endpoint' | 'region' | 'credentials' | 'forcePathStyle'>;

export interface S3Server {
  readonly endpoint: string;
  readonly bucket: string;
  readonly region: string;
  readonly credentials: S3Credentials;
  /** A new client of `endpoint` (destroyed by `stop()`). */
  client(overrides?: S3ClientOverrides): S3Client;
  stop(): Promise<void>;
}

export interface S3ServerWithProxy extends S3Server {
  /** `endpoint` is the proxy's; this is s3rver's own, for looking behind the proxy. */
  readonly upstreamEndpoint: string;
  readonly proxy: S3FaultProxy;
}

export interface StartS3Options {
  /** 3–63 characters; default 'loopx-repo'. */
  readonly bucket?: string;
  /** startS3WithProxy: the proxy listens here (a test-made private link other hosts reach) instead of 127.0.0.1. */
  readonly listenAddress?: string;
}

interface RunningS3rver {
  readonly endpoint: string;
  close(): Promise<void>;
}

/** s3rver over `directory` (which it may already hold buckets in), creating `buckets`. */
async function runS3rver(directory: string, buckets: readonly string[]): Promise<RunningS3rver> {
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory,
    configureBuckets: buckets.map((name) => ({ name })),
  });
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: async () => {
      // A keep-alive socket a test left open must not keep close() waiting.
      server.httpServer?.closeAllConnections();
      await server.close();
    },
  };
}

function clientFactory(endpoint: string, clients: Set<S3Client>): (overrides?: S3ClientOverrides) => S3Client {
  return (overrides = {}) => {
    const client = new S3Client({
      ...overrides,
      endpoint,
      region: S3_REGION,
      credentials: S3RVER_CREDENTIALS,
      forcePathStyle: true,
    });
    clients.add(client);
    return client;
  };
}

/** Undo steps run in reverse order, once, however often stop() is called. */
function stopper(steps: (() => Promise<void>)[]): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return () =>
    (stopping ??= (async () => {
      for (const step of steps.reverse()) await step();
    })());
}

async function privateDir(label: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `loopx-${label}-`));
}

async function startBare(options: StartS3Options): Promise<{ readonly s3: S3Server; readonly directory: string }> {
  const bucket = options.bucket ?? 'loopx-repo';
  const directory = await privateDir('s3');
  const clients = new Set<S3Client>();
  const steps = [() => rm(directory, { recursive: true, force: true })];
  try {
    const server = await runS3rver(directory, [bucket]);
    steps.push(() => server.close());
    steps.push(async () => clients.forEach((c) => c.destroy()));
    const s3 = {
      endpoint: server.endpoint,
      bucket,
      region: S3_REGION,
      credentials: S3RVER_CREDENTIALS,
      client: clientFactory(server.endpoint, clients),
      stop: stopper(steps),
    };
    return { s3, directory };
  } catch (error) {
    await stopper(steps)();
    throw error;
  }
}

/** s3rver with one bucket, bare. */
export async function startS3(options: StartS3Options = {}): Promise<S3Server> {
  return (await startBare(options)).s3;
}

/** s3rver with one bucket behind the fault proxy; `endpoint` and `client()` go through the proxy. */
export async function startS3WithProxy(options: StartS3Options = {}): Promise<S3ServerWithProxy> {
  const { s3, directory } = await startBare(options);
  const snapshotListings = async () => {
    // A copy of the store under a second s3rver: it answers any listing as the bucket was now.
    const copy = await privateDir('s3-frozen');
    try {
      await cp(directory, copy, { recursive: true });
      const frozen = await runS3rver(copy, []);
      return { endpoint: frozen.endpoint, close: () => frozen.close().finally(() => rm(copy, { recursive: true })) };
    } catch (error) {
      await rm(copy, { recursive: true, force: true });
      throw error;
    }
  };
  try {
    const proxy = await startS3FaultProxy({
      upstream: s3.endpoint,
      snapshotListings,
      ...(options.listenAddress ? { listenAddress: options.listenAddress } : {}),
    });
    const clients = new Set<S3Client>();
    const stop = stopper([() => s3.stop(), () => proxy.close(), async () => clients.forEach((c) => c.destroy())]);
    return {
      ...s3,
      endpoint: proxy.endpoint,
      upstreamEndpoint: s3.endpoint,
      proxy,
      client: clientFactory(proxy.endpoint, clients),
      stop,
    };
  } catch (error) {
    await s3.stop();
    throw error;
  }
}
