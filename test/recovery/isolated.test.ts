/**
 * `executeVerifyIsolated` — verify in a disposable child process, as the daemon runs it: the
 * same audit as the in-process verifier, typed refusals passed through with their kind and next
 * action, progress relayed, an abort ending as `verify_interrupted`, a child killed mid-run ending
 * as `verify_process_failed` with its destination removed, no process left behind, and no
 * credential of the caller's environment handed to the child.
 */
import { existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { create, plan } from '../../src/backup/index.js';
import { isLoopxError, type LoopxError } from '../../src/core/errors.js';
import { executeVerify, executeVerifyIsolated, showAudit, type VerifyProgress } from '../../src/recovery/index.js';
import { makeRoot, tempBase } from '../backup/support/fixtures.js';

let dir: string;
let archive: string;
let manifest: string;
let n = 0;

beforeAll(async () => {
  dir = tempBase('loopx-verify-isolated-');
  await makeRoot(join(dir, 'root'));
  await create(plan(join(dir, 'root'), { outputDir: join(dir, 'out'), backupId: 'iso' }), { format: 'v0' });
  archive = join(dir, 'out', 'iso.tar.gz');
  manifest = join(dir, 'out', 'iso.manifest.json');
}, 60_000);

const dest = () => join(dir, `d${++n}`);

/** Live children of this process whose command line names `entry`. */
function children(entry: string): number[] {
  const out: number[] = [];
  for (const tid of readdirSync(`/proc/${process.pid}/task`)) {
    for (const pid of readFileSync(`/proc/${process.pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean)) {
      try {
        if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(entry)) out.push(Number(pid));
      } catch {
        // gone meanwhile
      }
    }
  }
  return out;
}

/** Processes anywhere working in `dir` (an orphaned worker is reparented away from us; its cwd is its scratch directory). */
function workingIn(dir: string): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readlinkSync(`/proc/${p}/cwd`).startsWith(dir);
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function refusal(p: Promise<unknown>): Promise<LoopxError> {
  try {
    await p;
  } catch (e) {
    if (isLoopxError(e)) return e;
    throw e;
  }
  throw new Error('expected a refusal');
}

describe('executeVerifyIsolated', () => {
  it('publishes the same audit as the in-process verifier, relaying its progress', async () => {
    const inProcess = await executeVerify({ archive, manifest, destination: dest() });
    const steps: string[] = [];
    const d = dest();
    const isolated = await executeVerifyIsolated(
      { archive, manifest, destination: d },
      { onProgress: (p: VerifyProgress) => steps.push(p.step) },
    );
    expect(isolated.audit.phase).toBe('held');
    expect(isolated.audit.execution_authority_granted).toBe(false);
    expect(isolated.audit_bytes.equals(showAudit(d).bytes)).toBe(true);
    // Same backup, same classification: the audits differ only in what each run measured.
    expect(isolated.audit.counts).toEqual(inProcess.audit.counts);
    const classes = (a: typeof isolated.audit) => a.components.map((c) => `${c.owner_kind} ${c.classification}`).sort(); // scopes are keyed per audit
    expect(classes(isolated.audit)).toEqual(classes(inProcess.audit));
    expect(steps).toEqual(expect.arrayContaining(['inputs', 'destination', 'members', 'extract', 'owners', 'audit']));
  }, 60_000);

  it('passes a typed refusal through with its kind and next action; nothing is published', async () => {
    const tampered = join(dir, 'tampered.tar.gz');
    const bytes = readFileSync(archive);
    bytes[bytes.length >> 1] = bytes[bytes.length >> 1]! ^ 0xff;
    writeFileSync(tampered, bytes);
    const d = dest();
    const e = await refusal(executeVerifyIsolated({ archive: tampered, manifest, destination: d }));
    expect(e).toMatchObject({ kind: 'rejected', code: 'verify_archive_digest_mismatch' });
    expect(e.nextAction).toEqual(expect.any(String));
    expect(existsSync(d)).toBe(false);
    const taken = dest();
    expect(await executeVerifyIsolated({ archive, manifest, destination: taken })).toBeTruthy();
    expect(await refusal(executeVerifyIsolated({ archive, manifest, destination: taken }))).toMatchObject({
      kind: 'conflict',
      code: 'verify_destination_exists',
    });
    expect(existsSync(join(taken, 'recovery-audit.json')), 'an existing destination is never touched').toBe(true);
  }, 60_000);

  it('an abort ends as verify_interrupted: the destination is removed and no process is left', async () => {
    const ac = new AbortController();
    const d = dest();
    const e = await refusal(
      executeVerifyIsolated(
        { archive, manifest, destination: d },
        { signal: ac.signal, onProgress: (p) => p.step === 'extract' && ac.abort() },
      ),
    );
    expect(e.code).toBe('verify_interrupted');
    expect(existsSync(d)).toBe(false);
    expect(children('verify-child')).toEqual([]);
    // Aborted before it starts, and the moment after (before the child's own handlers exist).
    const before = dest();
    expect(
      (
        await refusal(
          executeVerifyIsolated({ archive, manifest, destination: before }, { signal: AbortSignal.abort() }),
        )
      ).code,
    ).toBe('verify_interrupted');
    const early = new AbortController();
    const earlyDest = dest();
    const started = executeVerifyIsolated({ archive, manifest, destination: earlyDest }, { signal: early.signal });
    early.abort();
    expect((await refusal(started)).code).toBe('verify_interrupted');
    expect(existsSync(before)).toBe(false);
    expect(existsSync(earlyDest)).toBe(false);
    expect(children('verify-child')).toEqual([]);
  }, 60_000);

  it('a child killed mid-run ends as verify_process_failed: its destination is removed, its worker does not linger', async () => {
    const d = dest();
    let killed = 0;
    let workers: number[] = [];
    const e = await refusal(
      executeVerifyIsolated(
        { archive, manifest, destination: d },
        {
          onProgress: (p) => {
            if (p.step !== 'extract' || killed > 0) return;
            for (const pid of children('verify-child')) {
              workers = workingIn(d);
              process.kill(pid, 'SIGKILL');
              killed++;
            }
          },
        },
      ),
    );
    expect(killed).toBe(1);
    expect(e).toMatchObject({ kind: 'rejected', code: 'verify_process_failed' });
    expect(e.nextAction).toEqual(expect.any(String));
    expect(existsSync(d)).toBe(false);
    // The owner worker it had started (running in the destination's scratch) sees its input close and exits.
    expect(workers).toHaveLength(1);
    const deadline = Date.now() + 10_000;
    while (workingIn(d).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(workingIn(d)).toEqual([]);
  }, 60_000);

  it("hands the child none of the caller's environment (no credentials)", async () => {
    process.env.LOOPX_ISOLATION_PROBE = 'secret-credential-value';
    let environ = '';
    try {
      await executeVerifyIsolated(
        { archive, manifest, destination: dest() },
        {
          onProgress: (p) => {
            if (p.step !== 'extract' || environ !== '') return;
            const [pid] = children('verify-child');
            environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
          },
        },
      );
    } finally {
      delete process.env.LOOPX_ISOLATION_PROBE;
    }
    expect(environ).toContain('PATH=');
    expect(environ).not.toContain('secret-credential-value');
  }, 60_000);
});
