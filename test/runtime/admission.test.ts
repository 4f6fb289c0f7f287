/**
 * The admission gate of quiescent backups (src/runtime/admission.ts), with real processes: a child
 * holds the gate closed (or holds a writer's ticket) and the CLI, the daemon's app and the gate's
 * own API are driven against it. Children are synchronised by latches on their stdout (`closed`,
 * `admitted`, `pong`, `released`) and told what to do on stdin; nothing waits on a clock.
 *
 * Every child of this file shares one run authority (test/support/cli.ts); each test closes only
 * roots of its own, or the shared root for the duration of the test.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens } from '../../src/daemon/index.js';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { admit, admissionState, closeAdmission, initRoot, withAdmission } from '../../src/runtime/index.js';
import { cliFromSources, REPO, STATE_HOME, loopxAsync, tempRoot, type CliResult } from '../support/cli.js';

cliFromSources();

const CHILD = join(REPO, 'test/runtime/support/admission-child.ts');
const RESEARCHER = 'examples/agents/researcher.json';
const GOAL_WORKER = 'examples/agents/goal-worker.json';
const TIMEOUT = 120_000; // every step is a real child process, and CI machines are shared
const NEXT_ACTION = 'wait for the backup in progress to finish, then run the command again';

// ── helpers ──────────────────────────────────────────────────────────────────────────────

interface Child {
  readonly proc: ChildProcessWithoutNullStreams;
  /** The next stdout line starting with `prefix` (lines already printed count). */
  line(prefix: string): Promise<string>;
  send(line: string): void;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** An admission-child.ts process: `close <root> [timeout]` or `write <root>`. */
function child(...args: string[]): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], {
    cwd: REPO,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const waiting: Array<{ prefix: string; resolve: (l: string) => void }> = [];
  let stderr = '';
  proc.stderr.on('data', (d) => (stderr += d));
  createInterface({ input: proc.stdout }).on('line', (l) => {
    const w = waiting.findIndex((x) => l.startsWith(x.prefix));
    if (w >= 0) waiting.splice(w, 1)[0]!.resolve(l);
    else lines.push(l);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    proc.on('close', (code, signal) => res({ code, signal })),
  );
  void exited.then(() => {
    for (const w of waiting.splice(0)) w.resolve(`exited before "${w.prefix}": ${stderr}`);
  });
  return {
    proc,
    line(prefix) {
      const i = lines.findIndex((l) => l.startsWith(prefix));
      if (i >= 0) return Promise.resolve(lines.splice(i, 1)[0]!);
      return new Promise((resolve) => waiting.push({ prefix, resolve }));
    },
    send: (l) => proc.stdin.write(`${l}\n`),
    exited,
  };
}

/** A child that holds `root` closed; resolves once it printed `closed <epoch> <drained>`. */
async function closer(root: string): Promise<Child & { epoch: string }> {
  const c = child('close', root);
  const l = await c.line('closed ');
  expect(l).toMatch(/^closed [0-9a-f]{32} true$/);
  return { ...c, epoch: l.split(' ')[1]! };
}

async function releaseChild(c: Child): Promise<void> {
  c.send('release');
  expect(await c.line('released')).toBe('released');
  expect((await c.exited).code).toBe(0);
}

/** Wait until `cond` holds (a latch on observable state, not a timing assumption). */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await sleep(5);
}

const describeCli = (args: readonly string[], r: CliResult) =>
  `loopx ${args.join(' ')} → status ${r.status} signal ${r.signal}\n${r.stderr}${r.stdout}`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function ok(args: readonly string[]): Promise<any> {
  const r = await loopxAsync([...args, '--json']);
  if (r.status !== 0) throw new Error(`expected success: ${describeCli(args, r)}`);
  return r.json();
}

/** A command refused by the closed gate: exit 4 (conflict), `admission_closed` in its --json error and on stderr. */
async function refusedClosed(args: readonly string[]): Promise<void> {
  const r = await loopxAsync([...args, '--json']);
  expect(r.signal, describeCli(args, r)).toBeNull();
  expect({ status: r.status, error: r.json().error }, describeCli(args, r)).toMatchObject({
    status: 4,
    error: { code: 'admission_closed', next_action: NEXT_ACTION },
  });
  expect(r.stderr).toContain('[admission_closed]');
}

const refusedInProcess = (root: string) =>
  expect(() => admit(root, 'test')).toThrow(expect.objectContaining({ code: 'admission_closed', kind: 'conflict' }));

// ── the shared root ──────────────────────────────────────────────────────────────────────

let root: string;
let suspendedRun: string;
let snapshot: string;
let sink: WebhookSink;

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  root = tempRoot('loopx-admission-');
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  await ok(['goal', 'create', 'g', '--title', 'Ship the launch post', '--root', root]);
  await ok(['todo', 'add', '--goal', 'g', '--title', 'Draft the outline', '--root', root]);
  suspendedRun = (await ok(['run', 'start', '--agent', RESEARCHER, '--suspend-after-turns', '1', '--root', root]))
    .run_id;
  const exported = (await ok(['run', 'start', '--agent', RESEARCHER, '--suspend-after-turns', '1', '--root', root]))
    .run_id;
  snapshot = join(root, '..', 'run.snapshot');
  await ok(['run', 'export', exported, '--out', snapshot, '--root', root]);
}, TIMEOUT);

afterAll(async () => {
  await sink?.close();
});

// ── the CLI against a closed gate ────────────────────────────────────────────────────────

describe('a closed gate, seen from the CLI', () => {
  it(
    'while another process holds the gate closed, run start, run resume, work run, goal create and todo add are refused (exit 4, admission_closed) and change nothing',
    async () => {
      const c = await closer(root);
      try {
        expect(admissionState(root)).toEqual({ open: false, epoch: c.epoch });
        const runsBefore = (await ok(['run', 'list', '--root', root])).runs;
        const goalBefore = await ok(['goal', 'show', 'g', '--root', root]);
        await Promise.all([
          refusedClosed(['run', 'start', '--agent', RESEARCHER, '--root', root]),
          refusedClosed(['run', 'resume', suspendedRun, '--root', root]),
          refusedClosed([
            'work',
            'run',
            '--goal',
            'g',
            '--agent',
            GOAL_WORKER,
            '--sink',
            sink.deliveriesUrl,
            '--root',
            root,
          ]),
          refusedClosed(['goal', 'create', 'h', '--title', 'Another', '--root', root]),
          refusedClosed(['todo', 'add', '--goal', 'g', '--title', 'Another', '--root', root]),
        ]);
        expect((await ok(['run', 'list', '--root', root])).runs).toEqual(runsBefore);
        expect(await ok(['goal', 'show', 'g', '--root', root])).toEqual(goalBefore);
        expect((await ok(['goal', 'list', '--root', root])).goals.map((g: { goal_id: string }) => g.goal_id)).toEqual([
          'g',
        ]);
      } finally {
        c.proc.kill('SIGKILL');
      }
    },
    TIMEOUT,
  );

  it(
    'a SIGKILLed closer reopens admission at once: the refused run start and work run then succeed',
    async () => {
      const c = await closer(root);
      await refusedClosed(['run', 'start', '--agent', RESEARCHER, '--root', root]);
      c.proc.kill('SIGKILL');
      expect((await c.exited).signal).toBe('SIGKILL');
      expect(admissionState(root).open).toBe(true);
      const runsBefore = (await ok(['run', 'list', '--root', root])).runs.length;
      const started = await ok(['run', 'start', '--agent', RESEARCHER, '--root', root]);
      const worked = await ok([
        'work',
        'run',
        '--goal',
        'g',
        '--agent',
        GOAL_WORKER,
        '--sink',
        sink.deliveriesUrl,
        '--root',
        root,
      ]);
      const runs = (await ok(['run', 'list', '--root', root])).runs.map((r: { run_id: string }) => r.run_id);
      expect(runs).toHaveLength(runsBefore + 2);
      expect(runs).toEqual(expect.arrayContaining([started.run_id, worked.run_id]));
    },
    TIMEOUT,
  );

  it(
    'read-only commands still work while admission is closed: run list/show/events/inspect, goal list/show, todo list, backup-state plan',
    async () => {
      const c = await closer(root);
      try {
        const reads = [
          ['run', 'list'],
          ['run', 'show', suspendedRun],
          ['run', 'events', suspendedRun],
          ['run', 'inspect', snapshot],
          ['goal', 'list'],
          ['goal', 'show', 'g'],
          ['todo', 'list', '--goal', 'g'],
          ['backup-state'],
        ];
        const results = await Promise.all(reads.map((args) => loopxAsync([...args, '--root', root, '--json'])));
        for (const [i, r] of results.entries()) expect(r.status, describeCli(reads[i]!, r)).toBe(0);
        expect(admissionState(root)).toEqual({ open: false, epoch: c.epoch });
      } finally {
        await releaseChild(c);
      }
      expect(admissionState(root)).toEqual({ open: true });
    },
    TIMEOUT,
  );

  it(
    'a closed root refuses the sample seeding (loopx daemon --seed-sample) and a snapshot import, creating no Goal and no run',
    async () => {
      const other = tempRoot('loopx-admission-other-');
      initRoot(other);
      const c = await closer(other);
      try {
        await refusedClosed(['daemon', '--seed-sample', '--root', other]);
        await refusedClosed(['run', 'import', snapshot, '--agent', RESEARCHER, '--root', other]);
        expect((await ok(['goal', 'list', '--root', other])).goals).toEqual([]);
        expect((await ok(['run', 'list', '--root', other])).runs).toEqual([]);
      } finally {
        await releaseChild(c);
      }
    },
    TIMEOUT,
  );
});

// ── the gate's own API: closers, drain, abort ────────────────────────────────────────────

describe('closing and draining', () => {
  it(
    'a second closer is refused while the first holds the gate (admission_already_closed, in this process and another), and closes once it is released',
    async () => {
      const first = await closer(root);
      await expect(closeAdmission(root, { timeoutMs: 1000 })).rejects.toMatchObject({
        code: 'admission_already_closed',
        kind: 'conflict',
        details: { epoch: first.epoch },
      });
      const second = child('close', root, '1000');
      expect(await second.line('refused ')).toBe('refused admission_already_closed');
      expect((await second.exited).code).toBe(4);
      await releaseChild(first);
      const closed = await closeAdmission(root, { timeoutMs: 60_000 });
      try {
        expect(closed.drained).toBe(true);
        expect(admissionState(root)).toEqual({ open: false, epoch: closed.epoch });
      } finally {
        closed.release();
      }
      expect(admissionState(root).open).toBe(true);
    },
    TIMEOUT,
  );

  it(
    'closeAdmission waits for an admitted writer and resolves drained:true once it releases; new writers are refused meanwhile and until release()',
    async () => {
      const writer = child('write', root);
      expect(await writer.line('admitted')).toBe('admitted');
      let settled = false;
      const closing = closeAdmission(root, { timeoutMs: 10 * TIMEOUT });
      void closing.then(() => (settled = true));
      await until(() => !admissionState(root).open);
      refusedInProcess(root);
      // A round trip with the writer: it still holds its ticket, so the drain cannot be over.
      writer.send('ping');
      expect(await writer.line('pong')).toBe('pong');
      expect(settled).toBe(false);
      await releaseChild(writer);
      const closed = await closing;
      try {
        expect(closed).toMatchObject({ drained: true, epoch: expect.stringMatching(/^[0-9a-f]{32}$/) });
        expect(closed.waitedMs).toBeGreaterThanOrEqual(0);
        refusedInProcess(root);
      } finally {
        closed.release();
        closed.release(); // idempotent
      }
      admit(root, 'after').release();
    },
    TIMEOUT,
  );

  it(
    'a writer that never releases: closeAdmission resolves drained:false after its timeout, still holding the gate (new writers refused in every process) until release()',
    async () => {
      const writer = child('write', root);
      expect(await writer.line('admitted')).toBe('admitted');
      const closed = await closeAdmission(root, { timeoutMs: 100 });
      try {
        expect(closed.drained).toBe(false);
        expect(admissionState(root)).toEqual({ open: false, epoch: closed.epoch });
        refusedInProcess(root);
        await refusedClosed(['run', 'start', '--agent', RESEARCHER, '--root', root]);
      } finally {
        closed.release();
      }
      expect(admissionState(root)).toEqual({ open: true });
      admit(root, 'after').release();
      await releaseChild(writer);
    },
    TIMEOUT,
  );

  it(
    'aborting closeAdmission while it drains releases the gate and rejects with the abort reason',
    async () => {
      const writer = child('write', root);
      expect(await writer.line('admitted')).toBe('admitted');
      const abort = new AbortController();
      const closing = closeAdmission(root, { timeoutMs: 10 * TIMEOUT, signal: abort.signal });
      await until(() => !admissionState(root).open);
      abort.abort(new Error('backup cancelled'));
      await expect(closing).rejects.toThrow('backup cancelled');
      expect(admissionState(root)).toEqual({ open: true });
      admit(root, 'after').release();
      await releaseChild(writer);
    },
    TIMEOUT,
  );

  it(
    'a writer already admitted is not refused by its own nested writes while a closer drains it; the closer drains once it is done',
    async () => {
      let c: Child | undefined;
      await withAdmission(root, 'outer', async () => {
        c = child('close', root);
        await until(() => !admissionState(root).open);
        refusedInProcess(root); // a new writer is refused…
        expect(await withAdmission(root, 'nested', () => 'in')).toBe('in'); // …the one already in is not
      });
      expect(await c!.line('closed ')).toMatch(/ true$/);
      await releaseChild(c!);
    },
    TIMEOUT,
  );
});

// ── the daemon ───────────────────────────────────────────────────────────────────────────

describe('the daemon against a closed gate', () => {
  it(
    'POST /api/runs/:id/resume answers 409 admission_closed while closed (reads still answer), and the same Idempotency-Key resumes the run once reopened',
    async () => {
      const TOKEN = 'test-token-0123456789';
      const headers = { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}`, 'idempotency-key': 'resume-1' };
      const d = await buildApp({
        root,
        token: TOKEN,
        loginTokens: new LoginTokens(),
        port: () => 80,
        authorityDir: join(STATE_HOME, 'loopx', 'run-authority'),
        logger: false,
      });
      try {
        const closed = await closeAdmission(root, { timeoutMs: 60_000 });
        try {
          const refused = await d.app.inject({ method: 'POST', url: `/api/runs/${suspendedRun}/resume`, headers });
          expect(refused.statusCode).toBe(409);
          expect(refused.json().error).toMatchObject({ code: 'admission_closed', next_action: NEXT_ACTION });
          const list = await d.app.inject({ method: 'GET', url: '/api/runs', headers });
          expect(list.statusCode).toBe(200);
          expect(list.json().runs.find((r: { run_id: string }) => r.run_id === suspendedRun).status).toBe('suspended');
        } finally {
          closed.release();
        }
        const resumed = await d.app.inject({ method: 'POST', url: `/api/runs/${suspendedRun}/resume`, headers });
        expect(resumed.statusCode, resumed.body).toBe(200);
        expect(resumed.headers['idempotent-replayed']).toBeUndefined();
        expect(resumed.json().run_id).toBe(suspendedRun);
      } finally {
        await d.backups.close();
        await d.app.close();
      }
    },
    TIMEOUT,
  );
});
