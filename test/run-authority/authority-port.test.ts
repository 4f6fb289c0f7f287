/**
 * Every RunAuthority provider passes the one conformance suite: the local authority on a fresh
 * private directory, and the in-memory reference implementation. A new provider joins here by
 * one line.
 */
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { memoryRunAuthority, openRunAuthority } from '../../src/run-authority/index.js';
import { describeRunAuthority } from './conformance/run-authority.conformance.js';
import { cleanup, tempBase } from './support.js';

afterAll(cleanup);

describeRunAuthority('local', ({ importWaitMs }) =>
  openRunAuthority({ dir: join(tempBase(), 'authority'), create: true, ...(importWaitMs !== undefined ? { importWaitMs } : {}) }),
);
describeRunAuthority('memory', ({ importWaitMs }) => memoryRunAuthority(importWaitMs !== undefined ? { importWaitMs } : {}));
