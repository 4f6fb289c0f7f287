/**
 * The in-memory authority is one the engine can run on: two engines (two roots) sharing one memory
 * authority move a run between them exactly as two processes sharing an authority directory do —
 * export signs and binds, import verifies and consumes once, the old root is `run_moved` — and a
 * byte copy of a root owns nothing.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isLoopxError } from '../../src/core/errors.js';
import { builtinApplication, openEngine, parseAgentDefinition, type Engine } from '../../src/engine/index.js';
import { memoryRunAuthority, type MemoryRunAuthority } from '../../src/run-authority/index.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const researcher = () => parseAgentDefinition(JSON.parse(readFileSync('examples/agents/researcher.json', 'utf8')));

function base(): string {
  const d = mkdtempSync(join(tmpdir(), 'loopx-memory-engine-'));
  chmodSync(d, 0o700);
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

function engineOn(authority: MemoryRunAuthority, root: string): Engine {
  const engine = openEngine({ root, application: builtinApplication(root), authority });
  cleanups.push(() => engine.close());
  return engine;
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (isLoopxError(e)) return e.code;
    throw e;
  }
  throw new Error('expected a refusal');
}

describe('engines on one memory authority', () => {
  it('a run moves from root A to root B: import consumes the snapshot once, resume continues in B, A is run_moved', async () => {
    const authority = memoryRunAuthority();
    cleanups.push(() => authority.close());
    const dir = base();
    const a = engineOn(authority, join(dir, 'a'));
    const started = await a.start(researcher(), { input: 'go', suspendAfterTurns: 2 });
    const signed = await a.exportEnvelope(started.run_id);
    expect(await authority.readRecord(started.run_id)).toMatchObject({
      state: 'SUSPENDED',
      lastSequence: started.last_sequence,
    });

    const b = engineOn(authority, join(dir, 'b'));
    const imported = await b.importSnapshot(signed.bytes);
    expect(imported).toMatchObject({
      run_id: started.run_id,
      status: 'suspended',
      last_sequence: started.last_sequence,
    });
    expect(await codeOf(b.importSnapshot(signed.bytes))).toBe('snapshot_consumed');
    expect(await codeOf(a.resume(started.run_id))).toBe('run_moved');
    const resumed = await b.resume(started.run_id);
    expect(resumed.waiting_for).toMatchObject({ kind: 'interaction', interaction_id: 'confirm-1' });
    expect(authority.outstandingLeases).toBe(0);
  });

  it('a snapshot signed by another memory authority fails verification like a forged one', async () => {
    const first = memoryRunAuthority();
    const second = memoryRunAuthority();
    cleanups.push(
      () => first.close(),
      () => second.close(),
    );
    const dir = base();
    const a = engineOn(first, join(dir, 'a'));
    const started = await a.start(researcher(), { input: 'go', suspendAfterTurns: 1 });
    const b = engineOn(second, join(dir, 'b'));
    expect(await codeOf(b.importSnapshot((await a.exportEnvelope(started.run_id)).bytes))).toBe(
      'snapshot_claim_invalid',
    );
  });

  it('a byte copy of a root is root_is_copy: it can neither resume nor start runs', async () => {
    const authority = memoryRunAuthority();
    cleanups.push(() => authority.close());
    const dir = base();
    const a = engineOn(authority, join(dir, 'a'));
    const started = await a.start(researcher(), { input: 'go', suspendAfterTurns: 1 });
    a.close();
    execFileSync('cp', ['-a', join(dir, 'a'), join(dir, 'copy')]);
    const copy = engineOn(authority, join(dir, 'copy'));
    expect(await codeOf(copy.resume(started.run_id))).toBe('root_is_copy');
    expect(await codeOf(copy.start(researcher(), { input: 'go' }))).toBe('root_is_copy');
  });
});
