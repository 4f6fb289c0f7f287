/**
 * RFC 0007 transfer protocols through the typed API: two runtime roots share one per-user run
 * authority (two authority instances on one directory, as two processes would have). Export signs
 * and binds SUSPENDED; import verifies, checks static compatibility before leasing, consumes once
 * and activates; local resume kills the old claim. Every refusal asserts its code.
 */
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isLoopxError } from '../../src/core/errors.js';
import {
  builtinApplication,
  convenienceApplication,
  defineApplication,
  defineAgent,
  openEngine,
  parseAgentDefinition,
  type AgentDefinition,
  type Application,
  type Engine,
  type RunEvent,
} from '../../src/engine/index.js';
import { LocalRunAuthority, type RunAuthority, type RunRecord } from '../../src/run-authority/index.js';
import { spawnImporter } from '../run-authority/support.js';
import { decodeEnvelope } from '../../src/snapshot/index.js';
import { addTool, componentIdentity, PLAN } from './engine-support.js';
import { readFileSync } from 'node:fs';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function privateTmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'loopx-transfer-'));
  chmodSync(d, 0o700);
  return d;
}

const researcher = (): AgentDefinition =>
  parseAgentDefinition(JSON.parse(readFileSync('examples/agents/researcher.json', 'utf8')));

interface World {
  authorityDir: string;
  open(root: string, app?: (root: string) => Application, authorityDir?: string): Engine;
}

function world(): World {
  const base = privateTmp();
  const authorityDir = join(base, 'authority');
  return {
    authorityDir,
    open(root, app = builtinApplication, dir = authorityDir) {
      const authority = LocalRunAuthority.open({ dir, create: true });
      const engine = openEngine({ root: join(base, root), application: app(join(base, root)), authority });
      cleanups.push(async () => {
        engine.close();
        await authority.close();
      });
      return engine;
    },
  };
}

async function codeOf(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    if (isLoopxError(e)) return e.code;
    throw e;
  }
  throw new Error('expected a refusal');
}

async function collect(engine: Engine, runId: string, after: number): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for await (const e of engine.events(runId, { after })) out.push(e);
  return out;
}

describe('export, import and resume across two roots sharing one run authority', () => {
  it('a run moves: import into B, resume continues at last_sequence+1 with no second RunStarted', async () => {
    const w = world();
    const a = w.open('a');
    const started = await a.start(researcher(), { input: 'go', suspendAfterTurns: 2 });
    const signed = await a.exportEnvelope(started.run_id);
    expect(signed.state.lastSequence).toBe(started.last_sequence);

    const b = w.open('b');
    const imported = await b.importSnapshot(signed.bytes);
    expect(imported).toMatchObject({
      run_id: started.run_id,
      status: 'suspended',
      last_sequence: started.last_sequence,
    });
    expect(await b.messages(started.run_id)).toEqual(await a.messages(started.run_id));

    const resumed = await b.resume(started.run_id);
    expect(resumed.waiting_for).toMatchObject({ kind: 'interaction', interaction_id: 'confirm-1' });
    const tail = await collect(b, started.run_id, started.last_sequence);
    expect(tail[0]).toMatchObject({ sequence: started.last_sequence + 1, type: 'Resumed' });
    expect(tail[1]).toMatchObject({ sequence: started.last_sequence + 2, type: 'TurnStarted', data: { turn: 3 } });
    expect(tail.map((e) => e.type)).not.toContain('RunStarted');
    // The old root can never drive it again.
    expect(await codeOf(a.resume(started.run_id))).toBe('run_moved');
    expect(await codeOf(a.cancel(started.run_id))).toBe('run_moved');
    const done = await b.answer(started.run_id, 'confirm-1', 'yes');
    expect(done.status).toBe('completed');
  });

  it('an event cursor older than the snapshot fails explicitly with the snapshot sequence as the recovery cursor', async () => {
    const w = world();
    const a = w.open('a');
    const s = await a.start(researcher(), { suspendAfterTurns: 1 });
    const b = w.open('b');
    await b.importSnapshot((await a.exportEnvelope(s.run_id)).bytes);
    let err: unknown;
    try {
      await collect(b, s.run_id, 0);
    } catch (e) {
      err = e;
    }
    expect(isLoopxError(err) && err.code).toBe('cursor_before_snapshot');
    expect(isLoopxError(err) && err.details).toMatchObject({ recovery_cursor: s.last_sequence });
    expect(await collect(b, s.run_id, s.last_sequence)).toEqual([]);
  });

  it('an identical repeat export returns the same bytes, also after a key rotation', async () => {
    const w = world();
    const a = w.open('a');
    const s = await a.start(researcher(), { suspendAfterTurns: 1 });
    const first = (await a.exportEnvelope(s.run_id)).bytes;
    const rotator = LocalRunAuthority.open({ dir: w.authorityDir });
    rotator.rotate();
    await rotator.close();
    expect(Buffer.from((await a.exportEnvelope(s.run_id)).bytes).equals(Buffer.from(first))).toBe(true);
    expect(decodeEnvelope(first).claim.keyGeneration).toBe(1);
  });

  it('a second import of a consumed snapshot is refused as snapshot_consumed, into any root', async () => {
    const w = world();
    const a = w.open('a');
    const s = await a.start(researcher(), { suspendAfterTurns: 1 });
    const bytes = (await a.exportEnvelope(s.run_id)).bytes;
    await w.open('b').importSnapshot(bytes);
    expect(await codeOf(w.open('c').importSnapshot(bytes))).toBe('snapshot_consumed');
    expect(await codeOf(w.open('b').importSnapshot(bytes))).toBe('snapshot_consumed');
  });

  it('local resume kills the old claim: the earlier snapshot can never be imported afterwards', async () => {
    const w = world();
    const a = w.open('a');
    const s = await a.start(researcher(), { suspendAfterTurns: 1 });
    const old = (await a.exportEnvelope(s.run_id)).bytes;
    await a.resume(s.run_id, { turns: 1 });
    expect(await codeOf(w.open('b').importSnapshot(old))).toBe('snapshot_claim_invalid');
    // The next suspension at a new generation gives a new, different claim that does import.
    const fresh = await a.exportEnvelope(s.run_id);
    expect(Buffer.from(fresh.envelope.claim.hmac).equals(Buffer.from(decodeEnvelope(old).claim.hmac))).toBe(false);
    expect((await w.open('c').importSnapshot(fresh.bytes)).status).toBe('suspended');
  });

  it('each suspend generation carries its own claim (same key generation, different HMAC)', async () => {
    const w = world();
    const a = w.open('a');
    const s = await a.start(researcher(), { suspendAfterTurns: 1 });
    const first = await a.exportEnvelope(s.run_id);
    await a.resume(s.run_id, { turns: 1 }); // ACTIVE at transition generation 2, one more turn, suspended
    const second = await a.exportEnvelope(s.run_id);
    expect(second.envelope.claim.keyGeneration).toBe(first.envelope.claim.keyGeneration);
    expect(Buffer.from(second.envelope.claim.hmac).equals(Buffer.from(first.envelope.claim.hmac))).toBe(false);
  });

  it('the same run id cannot be imported into a root that has seen it (run_known), and a live owner blocks import (run_owner_alive)', async () => {
    const w = world();
    const a = w.open('a');
    const s = await a.start(researcher(), { suspendAfterTurns: 1 });
    const bytes = (await a.exportEnvelope(s.run_id)).bytes;
    expect(await codeOf(w.open('a').importSnapshot(bytes))).toBe('run_known');
    const holder = LocalRunAuthority.open({ dir: w.authorityDir });
    const lease = (await holder.acquireRun(s.run_id))!;
    expect(await codeOf(w.open('b').importSnapshot(bytes))).toBe('run_owner_alive');
    await lease.release();
    await holder.close();
    expect((await w.open('b').importSnapshot(bytes)).status).toBe('suspended');
  });

  it('terminal snapshots are inspectable but never importable; a tombstoned run conflicts', async () => {
    const w = world();
    const a = w.open('a');
    const s = await a.start(researcher(), { suspendAfterTurns: 1 });
    const suspendedBytes = (await a.exportEnvelope(s.run_id)).bytes;
    await a.cancel(s.run_id);
    const terminal = await a.exportEnvelope(s.run_id);
    expect(terminal.state.lifecycle).toBe('cancelled');
    expect(decodeEnvelope(terminal.bytes).state.lifecycle).toBe('cancelled');
    expect(await a.verifySnapshot(terminal.bytes)).toMatchObject({ valid: true, record_state: 'TERMINAL' });
    expect(await codeOf(w.open('b').importSnapshot(terminal.bytes))).toBe('snapshot_terminal');
    expect(await codeOf(w.open('c').importSnapshot(suspendedBytes))).toBe('snapshot_claim_invalid');
  });

  it('a snapshot signed by another authority fails exactly like a tampered one (one secret-safe failure)', async () => {
    const w = world();
    const other = world();
    const foreign = other.open('x');
    const s1 = await foreign.start(researcher(), { suspendAfterTurns: 1 });
    const foreignBytes = (await foreign.exportEnvelope(s1.run_id)).bytes;

    const a = w.open('a');
    const s2 = await a.start(researcher(), { suspendAfterTurns: 1 });
    const tampered = new Uint8Array((await a.exportEnvelope(s2.run_id)).bytes);
    tampered[tampered.length - 1]! ^= 0x01; // inside the claim HMAC

    const errors: unknown[] = [];
    for (const bytes of [foreignBytes, tampered]) {
      try {
        await w.open(`b${errors.length}`).importSnapshot(bytes);
      } catch (e) {
        errors.push(e);
      }
    }
    expect(errors).toHaveLength(2);
    const [x, y] = errors.map((e) =>
      isLoopxError(e) ? { code: e.code, message: e.message, next: e.nextAction, details: e.details } : e,
    );
    expect(x).toEqual(y);
    expect(x).toMatchObject({ code: 'snapshot_claim_invalid' });
  });

  it('an import that fails before the consume point changes nothing: the snapshot stays importable', async () => {
    const w = world();
    const a = w.open('a');
    const s = await a.start(researcher(), { suspendAfterTurns: 1 });
    const bytes = (await a.exportEnvelope(s.run_id)).bytes;
    const noPlan = (root: string) =>
      defineApplication({ compatibilityIdentity: builtinApplication(root).compatibilityIdentity, toolPlans: [] });
    expect(await codeOf(w.open('b', noPlan).importSnapshot(bytes, { agent: researcher() }))).toBe('tool_plan_missing');
    const auth = LocalRunAuthority.open({ dir: w.authorityDir });
    expect(await auth.readRecord(s.run_id)).toMatchObject({ state: 'SUSPENDED' });
    await auth.close();
    expect((await w.open('c').importSnapshot(bytes)).status).toBe('suspended');
  });
});

describe('competing importers, differing claims and an uncertain activation', () => {
  /** The run's record as another process of the user would read it. */
  async function recordOf(w: World, runId: string): Promise<RunRecord> {
    const auth = LocalRunAuthority.open({ dir: w.authorityDir });
    try {
      return (await auth.readRecord(runId))!;
    } finally {
      await auth.close();
    }
  }

  it('an importer that meets a competing import in another process waits for it and is told snapshot_consumed, never run_owner_alive', async () => {
    const w = world();
    const a = w.open('a');
    const s = await a.start(researcher(), { suspendAfterTurns: 1 });
    const bytes = (await a.exportEnvelope(s.run_id)).bytes;
    const rec = await recordOf(w, s.run_id);
    // The competitor holds the import lock and the run lock, stopped before its consume point.
    const competitor = spawnImporter(w.authorityDir, {
      ...rec,
      state: 'IMPORTING',
      transitionGeneration: rec.transitionGeneration + 1,
      ownerRoot: 'root_competitor',
    });
    try {
      await competitor.held;
      const loser = codeOf(w.open('b').importSnapshot(bytes));
      competitor.finish(); // it consumes the snapshot for its own root and exits
      expect(await loser).toBe('snapshot_consumed');
      expect(await competitor.exited).toBe(0);
      expect(await recordOf(w, s.run_id)).toMatchObject({ state: 'IMPORTING', ownerRoot: 'root_competitor' });
    } finally {
      competitor.child.kill('SIGKILL');
    }
  });

  it('an importer that waited for a competitor which failed before consuming imports the snapshot itself', async () => {
    const w = world();
    const a = w.open('a');
    const s = await a.start(researcher(), { suspendAfterTurns: 1 });
    const bytes = (await a.exportEnvelope(s.run_id)).bytes;
    const rec = await recordOf(w, s.run_id);
    const competitor = spawnImporter(w.authorityDir, rec); // "fails": writes the record back unchanged
    try {
      await competitor.held;
      const waiting = w.open('b').importSnapshot(bytes);
      competitor.finish();
      expect(await waiting).toMatchObject({ run_id: s.run_id, status: 'suspended', last_sequence: s.last_sequence });
    } finally {
      competitor.child.kill('SIGKILL');
    }
  });

  it('a differing claim for a SUSPENDED record is refused with claim_conflict (a conflict) and changes nothing', async () => {
    const w = world();
    const a = w.open('a');
    const s = await a.start(researcher(), { suspendAfterTurns: 1 });
    await a.exportEnvelope(s.run_id);
    // Another snapshot of the run is bound at this transition generation (its digest and claim differ).
    const other = LocalRunAuthority.open({ dir: w.authorityDir });
    const lease = (await other.acquireRun(s.run_id))!;
    const bound = (await other.readRecord(s.run_id))!;
    const differing: RunRecord = { ...bound, payloadSha256: 'ab'.repeat(32), claimHmac: 'cd'.repeat(32) };
    await other.writeRecord(lease, differing);
    await lease.release();
    await other.close();

    let err: unknown;
    try {
      await a.exportEnvelope(s.run_id);
    } catch (e) {
      err = e;
    }
    expect(isLoopxError(err) && { code: err.code, kind: err.kind }).toEqual({
      code: 'claim_conflict',
      kind: 'conflict',
    });
    expect(await recordOf(w, s.run_id)).toEqual(differing);
  });

  it('an uncertain Activate is import_uncertain; the import releases its locks with the kernel run stopped, and nothing runs until a resume holds the lock and ACTIVE', async () => {
    const w = world();
    const a = w.open('a');
    const s = await a.start(researcher(), { suspendAfterTurns: 1 });
    const bytes = (await a.exportEnvelope(s.run_id)).bytes;
    // The ACTIVE write lands, then its durability barrier fails (as an fsync EIO would).
    const real = LocalRunAuthority.open({ dir: w.authorityDir });
    cleanups.push(() => real.close());
    const failing = new Proxy(real, {
      get(target, prop) {
        if (prop === 'writeRecord') {
          return async (
            lease: Parameters<RunAuthority['writeRecord']>[0],
            record: RunRecord,
            options?: { fault?: string },
          ) => {
            await target.writeRecord(lease, record, options);
            if (record.state === 'ACTIVE') throw new Error('EIO: fsync failed');
          };
        }
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...args: unknown[]) => unknown).bind(target) : v;
      },
    }) as RunAuthority;
    const b = openEngine({
      root: join(w.authorityDir, '..', 'b'),
      application: builtinApplication(join(w.authorityDir, '..', 'b')),
      authority: failing,
    });
    cleanups.push(() => b.close());

    let err: unknown;
    try {
      await b.importSnapshot(bytes);
    } catch (e) {
      err = e;
    }
    expect(isLoopxError(err) && { code: err.code, kind: err.kind, details: err.details }).toEqual({
      code: 'import_uncertain',
      kind: 'internal',
      details: { run_id: s.run_id },
    });
    // Released: no run or import lease is left, and the run lock is free for the next driver.
    expect(real.outstandingLeases).toBe(0);
    // Stopped: the kernel run is suspended at the snapshot's sequence and no event was appended.
    expect(await b.show(s.run_id)).toMatchObject({ status: 'suspended', last_sequence: s.last_sequence });
    expect(await collect(b, s.run_id, s.last_sequence)).toEqual([]);
    // The next driver takes the lock and continues under the ACTIVE record.
    const resumed = await w.open('b').resume(s.run_id);
    expect(resumed).toMatchObject({ status: 'active', waiting_for: { kind: 'interaction' } });
    expect((await recordOf(w, s.run_id)).state).toBe('ACTIVE');
  });
});

describe('static compatibility is checked before any tool plan is leased', () => {
  const agent = defineAgent({
    id: 'test.agent',
    version: '1.0.0',
    model: { provider: 'scripted', modelId: 'm' },
    turnLimit: 5,
    toolPlan: PLAN,
    script: [{ toolCalls: [{ name: 'add', arguments: { a: 1, b: 2 } }] }, { text: 'done' }],
  });
  const full =
    (compat: string, version = '1.0.0') =>
    () =>
      defineApplication({
        compatibilityIdentity: compat,
        toolPlans: [
          { id: PLAN, tools: [{ ...addTool(), identity: componentIdentity('static_tool', 'add', version) }] },
        ],
        scriptedProviderIdentity: componentIdentity('provider', 'scripted'),
      });

  async function exported(app: () => Application) {
    const w = world();
    const a = w.open('a', app);
    const s = await a.start(agent, { suspendAfterTurns: 1 });
    return { w, bytes: (await a.exportEnvelope(s.run_id)).bytes };
  }

  function countingLeases(app: () => Application) {
    let leases = 0;
    return {
      leases: () => leases,
      app: () => {
        const inner = app();
        const lease = inner.toolPlans.lease.bind(inner.toolPlans);
        inner.toolPlans.lease = (id: string) => {
          leases++;
          return lease(id);
        };
        return inner;
      },
    };
  }

  it('an empty compatibility identity (convenience engine) is refused: snapshot_compatibility_empty', async () => {
    const conv = () => convenienceApplication({ toolPlans: [{ id: PLAN, tools: [addTool()] }] });
    const { w, bytes } = await exported(conv);
    const probe = countingLeases(conv);
    expect(await codeOf(w.open('b', probe.app).importSnapshot(bytes, { agent }))).toBe('snapshot_compatibility_empty');
    expect(probe.leases()).toBe(0);
  });

  it('a different compatibility identity is refused before leasing: snapshot_compatibility_mismatch', async () => {
    const { w, bytes } = await exported(full('app/1'));
    const probe = countingLeases(full('app/2'));
    expect(await codeOf(w.open('b', probe.app).importSnapshot(bytes, { agent }))).toBe(
      'snapshot_compatibility_mismatch',
    );
    expect(probe.leases()).toBe(0);
  });

  it('a changed component identity is refused before leasing: snapshot_component_mismatch', async () => {
    const { w, bytes } = await exported(full('app/1', '1.0.0'));
    const probe = countingLeases(full('app/1', '1.0.1'));
    expect(await codeOf(w.open('b', probe.app).importSnapshot(bytes, { agent }))).toBe('snapshot_component_mismatch');
    expect(probe.leases()).toBe(0);
  });

  it('a changed tool contract under the same identities is refused after the lease, which is released: plan_identity_mismatch', async () => {
    const { w, bytes } = await exported(full('app/1'));
    let host: Application['toolPlans'] | undefined;
    const changed = () => {
      const app = defineApplication({
        compatibilityIdentity: 'app/1',
        toolPlans: [
          {
            id: PLAN,
            tools: [
              {
                ...addTool(),
                definition: { ...addTool().definition, description: 'changed' },
                identity: componentIdentity('static_tool', 'add'),
              },
            ],
          },
        ],
        scriptedProviderIdentity: componentIdentity('provider', 'scripted'),
      });
      host = app.toolPlans;
      return app;
    };
    expect(await codeOf(w.open('b', changed).importSnapshot(bytes, { agent }))).toBe('plan_identity_mismatch');
    expect(host!.liveLeases).toBe(0);
  });

  it('a scripted agent unknown to the destination needs its definition: import_definition_unknown; a different one is import_definition_mismatch', async () => {
    const { w, bytes } = await exported(full('app/1'));
    expect(await codeOf(w.open('b', full('app/1')).importSnapshot(bytes))).toBe('import_definition_unknown');
    expect(await codeOf(w.open('c', full('app/1')).importSnapshot(bytes, { agent: { ...agent, turnLimit: 6 } }))).toBe(
      'import_definition_mismatch',
    );
    expect((await w.open('d', full('app/1')).importSnapshot(bytes, { agent })).status).toBe('suspended');
  });
});
