/**
 * Runs a v1 set capture on its own thread (capture-worker.ts) and hands its events to the archive:
 * the planned components at once, each component as soon as its owner captured it, then the whole
 * set (with, crash-consistent, the observed bytes no component archived as its member). The owners' work — snapshots, reading copies back,
 * hashing exports — is CPU work that would otherwise stall the main thread, and Node's gzip needs
 * the main thread between its blocks; on a thread of its own the capture overlaps the archive.
 *
 * Errors cross the thread boundary as data (structured clone keeps only an Error's message): a
 * LoopxError comes back as the same typed refusal, a system error with its errno code (so a full
 * disk is still the capacity refusal). Test hooks (`afterComponent`) run on the calling thread
 * between components, exactly as they did when the capture ran there.
 */
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { LoopxError, isLoopxError, type ErrorKind } from '../core/index.js';
import { isOutOfSpace } from '../store/index.js';
import type { CapturedSet, ComponentReady, PlannedComponent, SetCaptureOptions, SetSource } from './set-capture.js';

export interface CaptureThreadInput extends SetSource {
  readonly staging: string;
  readonly options: SetCaptureOptions;
}

export type SerializedError =
  | {
      readonly loopx: {
        kind: ErrorKind;
        code: string;
        message: string;
        nextAction?: string;
        details?: Record<string, unknown>;
      };
    }
  | { readonly errno: string; readonly message: string }
  | { readonly message: string };

export type CaptureThreadMessage =
  | { readonly type: 'plan'; readonly components: readonly PlannedComponent[] }
  | { readonly type: 'component'; readonly ready: ComponentReady }
  | { readonly type: 'done'; readonly set: CapturedSet }
  | { readonly type: 'error'; readonly error: SerializedError };

export type CaptureThreadReply = { readonly type: 'continue' } | { readonly type: 'stop' };

export function serializeError(e: unknown): SerializedError {
  // A full disk anywhere in the causes is the capacity refusal, whatever wrapped it.
  if (isOutOfSpace(e)) return { errno: 'ENOSPC', message: 'no space left on device' };
  if (isLoopxError(e)) {
    return {
      loopx: {
        kind: e.kind,
        code: e.code,
        message: e.message,
        ...(e.nextAction === undefined ? {} : { nextAction: e.nextAction }),
        ...(e.details ? { details: e.details } : {}),
      },
    };
  }
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  const message = e instanceof Error ? e.message : String(e);
  return typeof code === 'string' ? { errno: code, message } : { message };
}

export function deserializeError(s: SerializedError): Error {
  if ('loopx' in s) {
    const { kind, code, message, nextAction, details } = s.loopx;
    return new LoopxError(kind, code, message, {
      ...(nextAction === undefined ? {} : { nextAction }),
      ...(details ? { details } : {}),
    });
  }
  if ('errno' in s) return Object.assign(new Error(s.message), { code: s.errno });
  return new Error(s.message);
}

/** The worker entry beside this file; from sources (tests, tsx) it is loaded through tsx's ESM API. */
function startWorker(input: CaptureThreadInput): Worker {
  const here = fileURLToPath(import.meta.url);
  if (!here.endsWith('.ts')) return new Worker(new URL('./capture-worker.js', import.meta.url), { workerData: input });
  const require = createRequire(import.meta.url);
  const pkgPath = require.resolve('tsx/package.json');
  const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { exports: Record<string, { import: { default: string } }> };
  const api = pathToFileURL(join(dirname(pkgPath), pkg.exports['./esm/api']!.import.default)).href;
  const entry = pathToFileURL(here.replace(/capture-thread\.ts$/, 'capture-worker.ts')).href;
  const code = `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(code, { eval: true, workerData: input });
}

/** A promise settled from outside. */
function deferred<T>(): { promise: Promise<T>; resolve(v: T): void; reject(e: Error): void } {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined); // observed by whoever awaits it; never an unhandled rejection
  return { promise, resolve, reject };
}

/** One running set capture, as the archive consumes it. */
export class SetCaptureThread {
  readonly plan = deferred<readonly PlannedComponent[]>();
  readonly done = deferred<CapturedSet>();
  private readonly ready = new Map<string, ReturnType<typeof deferred<ComponentReady>>>();
  private readonly worker: Worker;
  private failed: Error | undefined;
  private finished = false;
  private closing = false;
  private waiting = false;
  private readonly exited: Promise<void>;

  constructor(input: CaptureThreadInput, afterComponent?: (componentId: string) => void | Promise<void>) {
    this.worker = startWorker(input);
    this.worker.on('message', (m: CaptureThreadMessage) => void this.receive(m, afterComponent));
    this.worker.on('error', (e) => this.fail(e));
    this.exited = new Promise((resolve) =>
      this.worker.on('exit', () => {
        this.fail(new Error('the capture thread ended before the set was captured'));
        resolve();
      }),
    );
  }

  /** Resolves once the component is captured (rejects when the capture failed first). */
  component(id: string): Promise<ComponentReady> {
    return this.slot(id).promise;
  }

  /**
   * Ends the thread and waits until it has stopped: once the set is done (or the capture failed)
   * the thread ends by itself; after a refusal of the archive's it is stopped.
   */
  async close(): Promise<void> {
    // Never terminated mid-capture (a SQLite step on a terminating thread aborts the process):
    // it is told to stop at its next component and waited for.
    this.closing = true;
    if (this.waiting) this.reply({ type: 'stop' });
    await this.exited;
  }

  private reply(r: CaptureThreadReply): void {
    this.waiting = false;
    this.worker.postMessage(r);
  }

  private slot(id: string): ReturnType<typeof deferred<ComponentReady>> {
    let d = this.ready.get(id);
    if (d === undefined) {
      d = deferred<ComponentReady>();
      if (this.failed) d.reject(this.failed);
      this.ready.set(id, d);
    }
    return d;
  }

  private async receive(
    m: CaptureThreadMessage,
    afterComponent?: (componentId: string) => void | Promise<void>,
  ): Promise<void> {
    if (m.type === 'plan') this.plan.resolve(m.components);
    else if (m.type === 'component') {
      this.slot(m.ready.component_id).resolve(m.ready);
      this.waiting = true;
      try {
        await afterComponent?.(m.ready.component_id);
        if (this.waiting) this.reply({ type: this.closing ? 'stop' : 'continue' });
      } catch (e) {
        this.fail(e instanceof Error ? e : new Error(String(e)));
        if (this.waiting) this.reply({ type: 'stop' });
      }
    } else if (m.type === 'done') {
      this.finished = true;
      this.done.resolve(m.set);
    } else {
      this.finished = true;
      this.fail(deserializeError(m.error));
    }
  }

  private fail(e: Error): void {
    if (this.failed) return;
    this.failed = e;
    for (const d of [this.plan, this.done, ...this.ready.values()]) (d.reject as (e: Error) => void)(e);
  }
}
