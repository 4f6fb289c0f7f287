/**
 * A recovery workspace is inert evidence: no command opens a path inside one as a live root, and
 * reading it back (`backup-state workspace ls|show`) changes none of its bytes. The attack the
 * review reproduced — `--root D/workspace/runtime-root` then `todo update`, `work run` (a real
 * webhook delivered) and `run resume` of the live root's run — is replayed command by command.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedSample } from '../../src/runtime/index.js';
import { startWebhookSink } from '../../src/dev/index.js';
import { defaultAuthorityDir } from '../../src/run-authority/index.js';
import { loopxAsync, REPO, STATE_HOME, tempRoot } from '../support/cli.js';
import { treeState } from '../support/tree.js';

const AGENT = join(REPO, 'examples/agents/researcher.json');
const GOAL_AGENT = join(REPO, 'examples/agents/goal-worker.json');

let live: string;
let destination: string;
let runId: string;
let sink: Awaited<ReturnType<typeof startWebhookSink>>;

beforeAll(async () => {
  live = tempRoot();
  expect((await loopxAsync(['authority', 'init'])).status).toBe(0);
  sink = await startWebhookSink({ port: 0 });
  await seedSample(live, {
    webhookUrl: sink.deliveriesUrl,
    authorityDir: defaultAuthorityDir({ XDG_STATE_HOME: STATE_HOME }),
  });
  const started = await loopxAsync([
    'run',
    'start',
    '--agent',
    AGENT,
    '--suspend-after-turns',
    '2',
    '--root',
    live,
    '--json',
  ]);
  expect(started.status).toBe(0);
  runId = started.json().run_id;
  const backup = await loopxAsync(['backup-state', '--execute', '--backup-id', 'b1', '--root', live, '--json']);
  expect(backup.status, backup.stderr).toBe(0);
  destination = join(live, '..', 'D');
  const verified = await loopxAsync([
    'backup-state',
    'verify',
    '--archive',
    join(live, 'backups', 'b1.tar.gz'),
    '--manifest',
    join(live, 'backups', 'b1.manifest.json'),
    '--destination',
    destination,
    '--execute',
    '--json',
  ]);
  expect(verified.status, verified.stderr).toBe(0);
}, 120_000);

afterAll(async () => {
  await sink?.close();
});

describe('a recovery workspace is never a runtime root', () => {
  const inside = () => [
    join(destination, 'workspace', 'runtime-root'),
    join(destination, 'workspace'),
    destination,
    join(destination, 'workspace', 'runtime-root', 'goals', 'sample'),
  ];

  it('every command refuses a root inside the workspace with root_is_recovery_workspace (exit 3) and changes nothing', async () => {
    const before = treeState(destination);
    const delivered = sink.deliveries().length; // the sample's own delivery, made while seeding
    const ws = inside()[0]!;
    const commands: string[][] = [
      ['run', 'list'],
      ['run', 'show', runId],
      ['run', 'events', runId],
      ['run', 'resume', runId],
      ['run', 'export', runId, '--out', join(live, '..', 'stolen.snapshot')],
      ['run', 'start', '--agent', AGENT],
      ['todo', 'list', '--goal', 'sample'],
      ['todo', 'update', 't1', '--goal', 'sample', '--status', 'open'],
      ['work', 'run', '--goal', 'sample', '--agent', GOAL_AGENT, '--sink', sink.deliveriesUrl],
      ['goal', 'list'],
      ['goal', 'show', 'sample'],
      ['init'],
      ['backup-state'],
    ];
    for (const argv of commands) {
      const r = await loopxAsync([...argv, '--root', ws, '--json']);
      expect({ argv, status: r.status }).toEqual({ argv, status: 3 });
      expect(r.json().error.code).toBe('root_is_recovery_workspace');
    }
    // Any spelling of a path inside it, and LOOPX_HOME as well as --root.
    for (const root of inside()) {
      const r = await loopxAsync(['goal', 'list', '--json'], { LOOPX_HOME: root });
      expect(r.status).toBe(3);
      expect(r.json().error.code).toBe('root_is_recovery_workspace');
    }
    expect(
      (await loopxAsync(['run', 'list', '--root', join(ws, '..', '..', 'workspace', 'runtime-root'), '--json'])).json()
        .error.code,
    ).toBe('root_is_recovery_workspace');
    expect(treeState(destination)).toEqual(before);
    expect(sink.deliveries()).toHaveLength(delivered);
  }, 180_000); // eighteen CLI commands: a generous bound, not a timing assertion

  it("the refusal's next action reads the workspace back when run as printed", async () => {
    const r = await loopxAsync([
      'todo',
      'list',
      '--goal',
      'sample',
      '--root',
      join(destination, 'workspace', 'runtime-root'),
      '--json',
    ]);
    const next: string = r.json().error.next_action;
    expect(next).toMatch(/^read it without changing it: loopx backup-state workspace ls \S+$/);
    expect(next.split(' ').pop()!.startsWith('/')).toBe(false); // relative to here, never absolute
    const argv = next.replace(/^.*?: loopx /, '').split(' ');
    const listed = await loopxAsync([...argv, '--json']);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.json().goals.map((g: { goal_id: string }) => g.goal_id)).toEqual(['sample']);
  });

  it('the live root it was backed up from keeps its run: it resumes there and completes', async () => {
    const r = await loopxAsync(['run', 'resume', runId, '--root', live, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.json().run_id).toBe(runId);
  });
});

describe('backup-state workspace ls|show', () => {
  it("lists the workspace's Goals, runs, sessions and effects, granting nothing and changing nothing", async () => {
    const before = treeState(destination);
    const r = await loopxAsync(['backup-state', 'workspace', 'ls', destination, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const doc = r.json();
    expect(doc.execution_authority_granted).toBe(false);
    expect(doc.goals).toEqual([
      expect.objectContaining({
        goal_id: 'sample',
        title: 'Ship the launch post',
        work_readable: true,
        todos_by_status: { done: 1, blocked: 1, open: 1 },
      }),
    ]);
    expect(doc.goals[0].committed_transactions).toBeGreaterThan(3);
    expect(doc.runs_readable).toBe(true);
    expect(doc.runs.map((x: { run_id: string }) => x.run_id)).toContain(runId);
    expect(doc.sessions).toBe(1);
    // The sample Goal's two Todo updates and one webhook delivery, and the researcher run's outbox.append (every mutating call is an effect).
    expect(doc.effects_by_outcome).toEqual({ committed: 4 });
    expect(JSON.stringify(doc)).not.toContain(live.split('/root')[0]!);
    expect(treeState(destination)).toEqual(before);
  });

  it('names the next step for each Goal it lists — its recovery into a new root — which plans it when run as printed', async () => {
    const r = await loopxAsync(['backup-state', 'workspace', 'ls', destination]);
    expect(r.status, r.stderr).toBe(0);
    const hint = r.stdout.split('\n').find((l) => l.includes('recover it into a new root: loopx recover plan'))!;
    expect(hint).toContain('--goal sample');
    const target = join(mkdtempSync(join(tmpdir(), 'loopx-ws-next-')), 'recovered');
    const argv = hint
      .replace(/^.*?: loopx /, '')
      .trim()
      .split(' ')
      .map((w) => (w === 'NEW_ROOT' ? target : w));
    const planned = await loopxAsync([...argv, '--json']);
    expect(planned.status, planned.stderr).toBe(0);
    expect(planned.json()).toMatchObject({ goal: { goal_id: 'sample' }, execution_authority_granted: false });
  });

  it("shows one Goal's Todos, history, session, bound run and effects", async () => {
    const before = treeState(destination);
    const r = await loopxAsync(['backup-state', 'workspace', 'show', destination, '--goal', 'sample', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const doc = r.json();
    expect(doc.goal).toMatchObject({ goal_id: 'sample', lifecycle: 'active' });
    expect(doc.todos.map((t: { todo_id: string; status: string }) => [t.todo_id, t.status])).toEqual([
      ['t1', 'done'],
      ['t2', 'blocked'],
      ['t3', 'open'],
    ]);
    expect(doc.work).toMatchObject({ readable: true });
    expect(doc.sessions).toHaveLength(1);
    expect(doc.runs.map((x: { run_id: string }) => x.run_id)).toEqual([doc.sessions[0].run_id]);
    expect(doc.effects.map((e: { kind: string; outcome: string }) => `${e.kind} ${e.outcome}`)).toEqual([
      'work.todo_update committed',
      'webhook.deliver committed',
      'work.todo_update committed',
    ]);
    expect(
      doc.effects.every((e: { operation_id: string }) => e.operation_id.startsWith(`${doc.sessions[0].run_id}:`)),
    ).toBe(true);
    const human = await loopxAsync(['backup-state', 'workspace', 'show', destination, '--goal', 'sample']);
    expect(human.stdout).toContain('inert: read only, no execution authority');
    expect(treeState(destination)).toEqual(before);
  });

  it('an unknown Goal is workspace_goal_not_found with a next action that lists the Goals', async () => {
    const r = await loopxAsync(['backup-state', 'workspace', 'show', destination, '--goal', 'nope', '--json']);
    expect(r.status).toBe(3);
    expect(r.json().error.code).toBe('workspace_goal_not_found');
    expect(r.json().error.next_action).toContain('loopx backup-state workspace ls ');
  });

  it('a directory that is no verified workspace is refused by its audit check', async () => {
    const r = await loopxAsync(['backup-state', 'workspace', 'ls', live, '--json']);
    expect(r.status).toBe(3);
    expect(r.json().error.code).toBe('audit_not_found');
  });
});
