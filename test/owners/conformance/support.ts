/**
 * What every port conformance suite shares: the harness shape a provider joins with, and
 * errors by code. A suite file exports `describe<Port>(name, factory)`; each port's
 * `port.test.ts` calls it for every row of the provider table (providers.ts: `eachProvider`), so a
 * new provider joins by being a row.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';
import { isLoopxError, type LoopxError } from '../../../src/core/errors.js';
import { isStoreIdentity, registeredStoreProviders } from '../../../src/store/index.js';

/**
 * One provider behind a port. `open()` opens the SAME backing store every time: a second call is
 * a restart (a new connection or process view on the state the first one wrote).
 */
export interface PortHarness<P> {
  open(): P;
}

export type PortFactory<P> = () => PortHarness<P>;

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

/** A port names a registered provider, never an enumeration of its own. */
export function expectRegisteredProvider(provider: string): void {
  expect(registeredStoreProviders()).toContain(provider);
  expect(isStoreIdentity(`${provider}:${'0'.repeat(32)}`)).toBe(true);
}

export const sha = (n: number): string => n.toString(16).padStart(64, '0');

/** A private temporary directory, removed after the file's tests. */
export function tempDirs(prefix: string): () => string {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  return () => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(d);
    return d;
  };
}
