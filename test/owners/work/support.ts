/** Shared harnesses for the work owner tests: both providers behind one factory, a manual clock, errors and rejections by code. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { isLoopxError, type LoopxError } from '../../../src/core/errors.js';
import {
  createMemoryWorkState,
  memoryWorkProvider,
  openSqliteWorkProvider,
  openWork,
  type WorkOwner,
  type WorkProvider,
} from '../../../src/owners/work/index.js';

export const GOAL = 'g1';

export const tempDir = (): string => mkdtempSync(join(tmpdir(), 'loopx-work-'));

/** A provider factory: `open()` opens the same backing store each time (a second call is a restart). */
export interface ProviderHarness {
  readonly name: string;
  open(options?: { expected_incarnation?: string; goal_id?: string }): WorkProvider;
}

export function memoryHarness(): ProviderHarness {
  const state = createMemoryWorkState(GOAL);
  return {
    name: 'memory',
    open: (o = {}) =>
      memoryWorkProvider({
        goal_id: o.goal_id ?? GOAL,
        state,
        ...(o.expected_incarnation ? { expected_incarnation: o.expected_incarnation } : {}),
      }),
  };
}

export function sqliteHarness(
  path = join(tempDir(), 'work.db'),
  synchronous?: 'FULL' | 'NORMAL' | 'OFF',
): ProviderHarness & { path: string } {
  return {
    name: 'sqlite',
    path,
    open: (o = {}) =>
      openSqliteWorkProvider(path, {
        goal_id: o.goal_id ?? GOAL,
        ...(o.expected_incarnation ? { expected_incarnation: o.expected_incarnation } : {}),
        ...(synchronous ? { synchronous } : {}),
      }),
  };
}

export const HARNESSES: ReadonlyArray<[string, () => ProviderHarness]> = [
  ['memory', memoryHarness],
  ['sqlite', () => sqliteHarness()],
];

/** A clock the test moves by hand. */
export function manualClock(start = '2030-01-01T00:00:00.000Z') {
  let t = Date.parse(start);
  return {
    now: (): Date => new Date(t),
    advance(ms: number) {
      t += ms;
    },
    set(iso: string) {
      t = Date.parse(iso);
    },
  };
}

export function owner(h: ProviderHarness, clock = manualClock()): Promise<WorkOwner> {
  return openWork({ provider: h.open(), clock: clock.now });
}

/** Runs `fn`, expects a LoopxError and returns it. */
export function errorOf(fn: () => unknown): LoopxError {
  try {
    fn();
  } catch (e) {
    if (isLoopxError(e)) return e;
    throw e;
  }
  expect.fail('expected a LoopxError');
}

/** Every item of an async iterable, in order. */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** Awaits `fn()`, expects it to reject with a LoopxError and returns it. */
export async function rejectionOf(fn: () => Promise<unknown>): Promise<LoopxError> {
  try {
    await fn();
  } catch (e) {
    if (isLoopxError(e)) return e;
    throw e;
  }
  expect.fail('expected a rejection with a LoopxError');
}

export const sha = (n: number): string => n.toString(16).padStart(64, '0');
