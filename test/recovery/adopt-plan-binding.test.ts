/**
 * The plan binds what loopx computes, not what its file says. `recover apply` derives the plan
 * again from the audit, the workspace and the destination and refuses a plan file that differs —
 * a step dropped, reordered, added or re-keyed, a component or the Goal changed, a field no plan
 * has — whatever digest the file carries and whichever is confirmed (`recover_plan_tampered`),
 * before any step runs. The digest a refusal points to is the one `recover plan` printed, never
 * one read back from the file: status and refusals name the digest the run authority sealed when
 * `recover plan` printed it. And a recovery is never `complete` while a writer fence is not
 * established, whatever its plan file lists as steps.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/index.js';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { recoveryStatus, type AdoptionHost } from '../../src/recovery/index.js';
import { loopxAsync } from '../support/cli.js';
import { okAsync, planAsync, sourceWithBackup, type Doc, type Source } from './support/adopt.js';

let sink: WebhookSink;
let s: Source;
/** The recovery of test 2 that completed: the one live lifetime. */
let live: { destination: string; digest: string } | undefined;

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  s = await sourceWithBackup(sink, { afterCapture: false });
}, 240_000);
afterAll(async () => {
  await sink.close();
});

const planPath = (destination: string) => join(destination, 'recovery', 'plan.json');
const journalPath = (destination: string) => join(destination, 'recovery', 'journal.jsonl');

/** The plan file rewritten by `edit`, its digest recomputed the way the file computes it (SHA-256 of its canonical JSON without the digest); the new digest. */
function tamper(destination: string, edit: (plan: Doc) => void): string {
  const plan = JSON.parse(readFileSync(planPath(destination), 'utf8'));
  delete plan.plan_digest;
  edit(plan);
  const digest = createHash('sha256').update(canonicalJson(plan)).digest('hex');
  writeFileSync(planPath(destination), `${JSON.stringify({ ...plan, plan_digest: digest }, null, 2)}\n`);
  return digest;
}

const apply = async (destination: string, confirm: string) => {
  const r = await loopxAsync([
    'recover',
    'apply',
    '--destination',
    destination,
    '--confirm',
    confirm,
    '--authority-dir',
    s.authority,
    '--json',
  ]);
  const error = r.status === 0 ? undefined : r.json().error;
  return { status: r.status, code: error?.code as string | undefined, next: error?.next_action as string | undefined };
};

const withoutSupersede = (p: Doc) => {
  p.steps = p.steps.filter((x: { action: string }) => x.action !== 'host:supersede');
};

describe('apply derives the plan again and refuses a plan file that says otherwise', () => {
  it('a plan file edited to drop host:supersede, its digest recomputed, is refused before any step, whichever digest is confirmed: nothing changes', async () => {
    const p = await planAsync(s, 'dropped-supersede');
    const printed = p.doc.plan_digest as string;
    const edited = tamper(p.destination, withoutSupersede);
    expect(edited).not.toBe(printed);
    for (const confirm of [edited, printed]) {
      expect(
        await apply(p.destination, confirm),
        confirm === edited ? "the file's digest" : 'the printed digest',
      ).toMatchObject({ status: 3, code: 'recover_plan_tampered' });
    }
    // Nothing ran: no root made, no journal, nothing superseded.
    expect(readdirSync(p.destination)).toEqual(['recovery']);
    expect(existsSync(journalPath(p.destination))).toBe(false);
    expect(await okAsync(s, ['recover', 'status', '--destination', p.destination])).toMatchObject({
      state: 'adoption_prepared',
      fences: { source_established: false, destination_established: false },
    });
  }, 180_000);

  it('one lifetime goes on: a recovery of the same backup completes after the tampered one was refused, and the tampered one never does', async () => {
    const tampered = join(s.dir, 'dropped-supersede');
    const other = await planAsync(s, 'the-one');
    const done = await okAsync(s, [
      'recover',
      'apply',
      '--destination',
      other.destination,
      '--confirm',
      other.doc.plan_digest,
    ]);
    expect(done).toMatchObject({
      state: 'complete',
      fences: { source_established: true, destination_established: true },
    });
    live = { destination: other.destination, digest: other.doc.plan_digest };
    // The tampered plan is still refused — before the lifetime recovered elsewhere is even asked — and never completes.
    const again = JSON.parse(readFileSync(planPath(tampered), 'utf8')).plan_digest as string;
    expect(await apply(tampered, again)).toMatchObject({ status: 3, code: 'recover_plan_tampered' });
    expect((await okAsync(s, ['recover', 'status', '--destination', tampered])).state).toBe('adoption_prepared');
    expect(readdirSync(tampered)).toEqual(['recovery']);
  }, 180_000);

  it('a plan whose steps are reordered, added to or re-keyed, or whose components, Goal or fields changed, is refused with its own digest', async () => {
    const p = await planAsync(s, 'edited');
    const original = readFileSync(planPath(p.destination));
    const edits: Record<string, (plan: Doc) => void> = {
      'two steps swapped': (x) => {
        const i = x.steps.findIndex((st: { action: string }) => st.action === 'work:import_inert');
        [x.steps[i], x.steps[i + 1]] = [x.steps[i + 1], x.steps[i]];
      },
      'a step added': (x) => {
        x.steps.push({ ...x.steps.at(-1), action: 'scheduler:discard', disposition: 'discard' });
      },
      'a step moved before the lifetime it records': (x) => {
        const i = x.steps.findIndex((st: { action: string }) => st.action === 'host:supersede');
        const [st] = x.steps.splice(i, 1);
        x.steps.splice(1, 0, st);
      },
      'an idempotency key changed': (x) => {
        x.steps[2].idempotency_key = `rcv-${'0'.repeat(40)}`;
      },
      "a component's digest changed": (x) => {
        x.components[0].content_digest = 'f'.repeat(64);
      },
      "the Goal's lifetime changed": (x) => {
        x.goal.goal_instance_id = 'ginst_0000000000000000';
      },
      'a field no plan has': (x) => {
        x.skip_steps = ['host:supersede'];
      },
    };
    for (const [what, edit] of Object.entries(edits)) {
      writeFileSync(planPath(p.destination), original);
      const digest = tamper(p.destination, edit);
      expect(await apply(p.destination, digest), what).toMatchObject({ status: 3, code: 'recover_plan_tampered' });
      expect(readdirSync(p.destination), what).toEqual(['recovery']);
    }
    // The untouched plan is still the one loopx computes: it passes the derivation and the printed digest confirms it
    // (what the apply does next — this lifetime was recovered by test 2 — is not this test's business).
    writeFileSync(planPath(p.destination), original);
    expect(['recover_plan_tampered', 'recover_confirm_mismatch']).not.toContain(
      (await apply(p.destination, p.doc.plan_digest)).code,
    );
  }, 180_000);

  it('a refusal of the confirmed digest never points to a digest read back from the plan file', async () => {
    const p = await planAsync(s, 'preview-edited');
    const printed = p.doc.plan_digest as string;
    // What the plan cannot derive (the preview shown) is bound by the printed digest alone.
    const edited = tamper(p.destination, (x) => {
      x.preview.lost_or_unknown = [];
    });
    const r = await apply(p.destination, printed);
    expect(r).toMatchObject({ status: 3, code: 'recover_confirm_mismatch' });
    expect(r.next).toContain('loopx recover plan printed');
    expect(r.next).not.toContain('recover status');
    expect(r.next).not.toContain(edited);
    expect(r.next).not.toContain(printed);
    expect(readdirSync(p.destination)).toEqual(['recovery']);
  }, 180_000);
});

describe('the digest a next action names is the one recover plan printed', () => {
  it('status and a refusal name the printed digest, sealed by the run authority, never an edited file’s; a broken seal names none', async () => {
    const p = await planAsync(s, 'printed-digest');
    const printed = p.doc.plan_digest as string;
    const status = async () =>
      (await okAsync(s, ['recover', 'status', '--destination', p.destination])).next_action as string;
    expect(await status()).toContain(`--confirm ${printed}`);
    const edited = tamper(p.destination, (x) => {
      x.preview.human_actions = [];
    });
    expect(await status()).toContain(`--confirm ${printed}`);
    expect(await status()).not.toContain(edited);
    const resolve = await loopxAsync([
      'recover',
      'resolve',
      '--destination',
      p.destination,
      '--hold',
      'receiver:x',
      '--authority-dir',
      s.authority,
      '--json',
    ]);
    expect(resolve.json().error).toMatchObject({
      code: 'recover_not_applied',
      next_action: expect.stringContaining(`--confirm ${printed}`),
    });
    // A seal that does not verify (another authority's, or edited) vouches for nothing: the next action names the digest, not one.
    const sealPath = join(p.destination, 'recovery', 'plan.seal.json');
    const seal = JSON.parse(readFileSync(sealPath, 'utf8'));
    writeFileSync(sealPath, JSON.stringify({ ...seal, plan_digest: edited }));
    expect(await status()).toContain('--confirm PLAN_DIGEST');
    expect(await status()).not.toContain(edited);
    expect(await status()).not.toContain(printed);
  }, 120_000);
});

describe('complete is never reported while a writer fence is not established', () => {
  const host = (supersession: Awaited<ReturnType<AdoptionHost['supersession']>>) =>
    ({ supersession: async () => supersession }) as unknown as AdoptionHost;

  it('every step done, but the run authority does not record the supersession: held, with the apply as its next action', async () => {
    expect(live, 'test 2 completed a recovery').toBeDefined();
    const { destination } = live!;
    expect((await okAsync(s, ['recover', 'status', '--destination', destination])).state).toBe('complete');
    const unrecorded = await recoveryStatus(destination, host(undefined));
    expect(unrecorded).toMatchObject({
      state: 'reconciliation_held',
      holds: [],
      fences: { source_established: false, destination_established: true },
    });
    expect(unrecorded.phase.completed_steps).toBe(unrecorded.phase.total_steps);
    expect(unrecorded.next_action).toContain('loopx recover apply');
    expect(unrecorded.next_action).not.toContain(live!.digest);
    const elsewhere = await recoveryStatus(
      destination,
      host({ successor_instance_id: 'ginst_other', recovery_id: 'f'.repeat(64) } as never),
    );
    expect(elsewhere).toMatchObject({
      state: 'reconciliation_held',
      fences: { source_established: false },
      next_action: 'continue the Goal in the root that recovery made',
    });
  }, 60_000);

  it('a plan file without host:supersede whose every listed step is done (as one applied before plans were derived): held, never complete', async () => {
    const { destination } = live!;
    const plan = readFileSync(planPath(destination));
    const journal = readFileSync(journalPath(destination), 'utf8');
    try {
      tamper(destination, withoutSupersede);
      let seq = 0;
      const kept = journal
        .split('\n')
        .filter((line) => line !== '' && (JSON.parse(line) as { action?: string }).action !== 'host:supersede')
        .map((line) => JSON.stringify({ ...JSON.parse(line), seq: ++seq }));
      writeFileSync(journalPath(destination), `${kept.join('\n')}\n`);
      // Without the run authority (as a root's writer guard reads it) and with it (which does hold a record: the real apply made one).
      for (const st of [
        await recoveryStatus(destination),
        await okAsync(s, ['recover', 'status', '--destination', destination]),
      ]) {
        expect(st).toMatchObject({
          state: 'reconciliation_held',
          fences: { source_established: false, destination_established: true },
        });
        expect(st.phase.completed_steps).toBe(st.phase.total_steps);
      }
    } finally {
      writeFileSync(planPath(destination), plan);
      writeFileSync(journalPath(destination), journal);
    }
    expect((await okAsync(s, ['recover', 'status', '--destination', destination])).state).toBe('complete');
  }, 60_000);
});
