/**
 * The `--json` contract (docs/cli-json.md): every document a `loopx` command prints with --json,
 * produced by the real CLI, validates against its JSON Schema in docs/schemas/.
 * The schemas are strict (`additionalProperties: false`, every field required where the command
 * always prints it), so renaming, adding or dropping a field without a schema change fails here.
 *
 * One journey covers the published shapes: a run started in root A, listed, shown, its events,
 * exported, inspected (with and without --verify), imported into root B, resumed there, suspended
 * while it waits, answered, cancelled; the refusals of a second import, of root A's stale copy and
 * of an event cursor before the snapshot; an uncertain mutating call settled by `run resolve`;
 * `demo`; `authority init|show|rotate|retire`; and usage errors. A second journey covers Goal work
 * and backups: `init`, `goal create|list|show`, `todo add|list|update`, `work run` against an
 * in-process webhook sink, `backup-state` (plan, then --execute, then the refusal of the same id)
 * and the published `loopx_state_backup_v0` manifest file itself, then `backup-state verify` of
 * that backup (plan, --execute, the refusal of the same destination) and `backup-state audit show`
 * (--private: the private `loopx_state_recovery_audit_v0` file's exact bytes; --json: the public
 * summary). A third covers the daemon: `loopx daemon --json` as a real process, then its verify
 * job and audit list over loopback HTTP.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { startWebhookSink } from '../../src/dev/index.js';
import { AGENT_FILE_SCHEMA, FAULT_AFTER_MUTATING_DISPATCH } from '../../src/engine/index.js';
import { spawn } from 'node:child_process';
import { CLI, REPO, STATE_HOME, loopx, loopxAsync, tempRoot, type CliResult } from '../support/cli.js';

const SCHEMA_DIR = join(REPO, 'docs/schemas');
const SCHEMA_FILES = readdirSync(SCHEMA_DIR)
  .filter((f) => f.endsWith('.schema.json'))
  .sort();
const schemas = new Map(
  SCHEMA_FILES.map((f) => [f, JSON.parse(readFileSync(join(SCHEMA_DIR, f), 'utf8')) as Record<string, unknown>]),
);

const ajv = new Ajv2020({ strict: true, allErrors: true });
for (const s of schemas.values()) ajv.addSchema(s);

const exercised = new Set<string>();
/** A document too costly to produce twice is validated by its own test file (the drill runs for a minute). */
const EXERCISED_ELSEWHERE: Readonly<Record<string, string>> = {
  'recover-drill.schema.json': 'test/recovery/drill.test.ts',
  'work-move-plan.schema.json': 'test/cli/goal-move-work.test.ts',
  'recover-activation.schema.json': 'test/recovery/activation.test.ts',
  'work-move.schema.json': 'test/cli/goal-move-work.test.ts',
  'daemon-recovery.schema.json': 'test/daemon/recoveries.test.ts',
  'daemon-run.schema.json': 'test/daemon/run-actions.test.ts',
  'daemon-goal.schema.json': 'test/daemon/goal-page.test.ts',
  'daemon-goal-activity.schema.json': 'test/daemon/goal-page.test.ts',
  'daemon-goal-history.schema.json': 'test/daemon/goal-page.test.ts',
  'daemon-goal-progress.schema.json': 'test/daemon/goal-page.test.ts',
  'daemon-drill-job.schema.json': 'test/daemon/drills.test.ts',
  'daemon-drill-list.schema.json': 'test/daemon/drills.test.ts',
  'daemon-backup-run.schema.json': 'test/daemon/backup-now.test.ts',
  'daemon-repository-backups.schema.json': 'test/daemon/repositories.test.ts',
  'daemon-repository-job.schema.json': 'test/daemon/repositories.test.ts',
  'daemon-audit-contents.schema.json': 'test/daemon/audit-contents.test.ts',
  'db-status.schema.json': 'test/cli/db-rotate.test.ts',
  'db-rotation-plan.schema.json': 'test/cli/db-rotate.test.ts',
  'db-rotation.schema.json': 'test/cli/db-rotate.test.ts',
  'cluster-init.schema.json': 'test/support/cluster.ts',
  'cluster-submit.schema.json': 'test/support/cluster.ts',
  'cluster-status.schema.json': 'test/support/cluster.ts',
  'cluster-rotation-plan.schema.json': 'test/cluster/cluster-failover.test.ts',
  'cluster-rotation.schema.json': 'test/cluster/cluster-failover.test.ts',
  'cluster-drain.schema.json': 'test/cluster/cluster.test.ts',
  'repository-sealed-envelope-v1.schema.json': 'test/repository/seal-vectors.test.ts',
  'repo-init.schema.json': 'test/cli/repo.test.ts',
  'repo-ls.schema.json': 'test/cli/repo.test.ts',
  'repo-check.schema.json': 'test/cli/repo.test.ts',
  'repo-forget.schema.json': 'test/cli/repo.test.ts',
  'repo-prune.schema.json': 'test/cli/repo.test.ts',
  'repo-key-change.schema.json': 'test/cli/repo.test.ts',
  'repo-key-new.schema.json': 'test/cli/repo.test.ts',
  'repository-entry-v1.schema.json': 'test/cli/repo.test.ts',
};

/** Validate one document against docs/schemas/<name>.schema.json, with a readable failure. */
function expectValid(name: string, doc: unknown): void {
  const file = `${name}.schema.json`;
  const id = schemas.get(file)?.$id;
  expect(id, `docs/schemas/${file} exists and has an $id`).toBeTypeOf('string');
  const validate = ajv.getSchema(id as string)!;
  const ok = validate(doc);
  expect(ok ? [] : validate.errors, `${file} rejects:\n${JSON.stringify(doc, null, 2)}`).toEqual([]);
  exercised.add(file);
}

/** A command that must succeed and print one JSON document of `schema`. */
async function ok(schema: string, args: string[], env?: Record<string, string>) {
  return succeeded(schema, args, await loopxAsync([...args, '--json'], env));
}

/** `ok` for a command that needs this process's event loop meanwhile (an in-process server). */
async function okAsync(schema: string, args: string[]) {
  return succeeded(schema, args, await loopxAsync([...args, '--json']));
}

function succeeded(schema: string, args: string[], r: CliResult) {
  expect(r.status, `loopx ${args.join(' ')}\n${r.stderr}`).toBe(0);
  expect(r.stdout.endsWith('}\n'), 'one indented document ending with a newline').toBe(true);
  const doc = r.json();
  expectValid(schema, doc);
  return doc;
}

/** A command that must fail with `exit` and print one error document with `code`. */
async function refused(exit: number, code: string, args: string[]) {
  const r: CliResult = await loopxAsync([...args, '--json']);
  expect(r.status, `loopx ${args.join(' ')}\n${r.stderr}`).toBe(exit);
  const doc = r.json();
  expectValid('error', doc);
  expect(doc.error.code).toBe(code);
  // People get the same error on stderr: loopx's own line, or the parser's for usage_error.
  if (code === 'usage_error') expect(r.stderr).toMatch(/^error: .*\n\(add --help for usage\)\n$/);
  else expect(r.stderr).toContain(`[${code}]`);
  return doc.error;
}

/** `run events --json`: JSON Lines, each an event; returns them. */
async function events(args: string[]) {
  const r = await loopxAsync([...args, '--json']);
  expect(r.status, r.stderr).toBe(0);
  const lines = r.stdout.split('\n');
  expect(lines.pop()).toBe('');
  const docs = lines.map((l) => JSON.parse(l));
  for (const d of docs) expectValid('run-event', d);
  return docs;
}

const RESEARCHER = 'examples/agents/researcher.json';
const MUTATOR = 'test/fixtures/agents/mutator.json';
const GOAL_WORKER = 'examples/agents/goal-worker.json';

describe('the --json contract: every published document validates against docs/schemas/', () => {
  it('the schemas compile under Ajv 2020 strict mode, and every object that lists properties closes them', () => {
    expect(SCHEMA_FILES).toEqual(
      expect.arrayContaining([
        'agent-definition.schema.json',
        'authority.schema.json',
        'demo.schema.json',
        'error.schema.json',
        'run-event.schema.json',
        'run-export.schema.json',
        'run-import.schema.json',
        'run-inspect.schema.json',
        'run-list.schema.json',
        'run-show.schema.json',
        'run-summary.schema.json',
        'init.schema.json',
        'goal.schema.json',
        'goal-list.schema.json',
        'goal-show.schema.json',
        'todo-receipt.schema.json',
        'todo-list.schema.json',
        'work-run.schema.json',
        'backup-state-plan.schema.json',
        'backup-state-result.schema.json',
        'state-backup-manifest-v0.schema.json',
        'state-backup-manifest-v1.schema.json',
        'backup-verify-plan.schema.json',
        'state-recovery-audit-v0.schema.json',
        'state-recovery-audit-public-v0.schema.json',
        'recover-plan.schema.json',
        'recover-status.schema.json',
        'recover-drill.schema.json',
        'daemon-recovery.schema.json',
        'daemon-start.schema.json',
        'daemon-job.schema.json',
        'daemon-audit-list.schema.json',
        'daemon-upload-list.schema.json',
        'daemon-login-url.schema.json',
        'daemon-owners.schema.json',
      ]),
    );
    for (const [file, s] of schemas) {
      expect(s.$schema, file).toBe('https://json-schema.org/draft/2020-12/schema');
      expect(ajv.getSchema(s.$id as string), file).toBeTypeOf('function');
    }
    // `if`/`then` overlays only narrow; every other schema with `properties` must forbid others.
    const open: string[] = [];
    const walk = (node: unknown, path: string, overlay: boolean): void => {
      if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${path}/${i}`, false));
      if (node === null || typeof node !== 'object') return;
      const o = node as Record<string, unknown>;
      if (!overlay && 'properties' in o && o.additionalProperties !== false) open.push(path);
      for (const [k, v] of Object.entries(o)) {
        if (k === 'properties' || k === '$defs') {
          for (const [name, sub] of Object.entries(v as Record<string, unknown>))
            walk(sub, `${path}/${k}/${name}`, false);
        } else if (k !== 'const' && k !== 'enum' && k !== 'required')
          walk(v, `${path}/${k}`, k === 'if' || k === 'then');
      }
    };
    for (const [file, s] of schemas) walk(s, file, false);
    expect(open).toEqual([]);
  });

  it('agent-definition.schema.json is AGENT_FILE_SCHEMA (plus $schema), and the shipped agents satisfy it', () => {
    expect(schemas.get('agent-definition.schema.json')).toEqual({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      ...AGENT_FILE_SCHEMA,
    });
    for (const f of [...readdirSync(join(REPO, 'examples/agents')).map((f) => `examples/agents/${f}`), MUTATOR]) {
      expectValid('agent-definition', JSON.parse(readFileSync(join(REPO, f), 'utf8')));
    }
  });

  it('a run moved between two roots: start, list, show, events, export, inspect, import, resume, suspend, answer, cancel, and the refusals', async () => {
    const A = tempRoot('loopx-json-a-');
    const B = tempRoot('loopx-json-b-');
    const C = tempRoot('loopx-json-c-');
    const snap = join(A, '..', 'run.snapshot');

    const auth = await ok('authority', ['authority', 'init']);
    expect(auth).not.toHaveProperty('run');

    const started = await ok('run-summary', [
      'run',
      'start',
      '--agent',
      RESEARCHER,
      '--suspend-after-turns',
      '2',
      '--root',
      A,
    ]);
    expect(started).toMatchObject({
      status: 'suspended',
      completed_turns: 2,
      last_sequence: 12,
      waiting_for: null,
      failure: null,
    });
    const id: string = started.run_id;

    const list = await ok('run-list', ['run', 'list', '--root', A]);
    expect(list.runs).toEqual([{ ...started, definition: { id: 'demo.researcher', version: '1.0.0' }, turn_limit: 6 }]);
    const shown = await ok('run-show', ['run', 'show', id, '--root', A]);
    expect(shown).toEqual(list.runs[0]);

    const evA = await events(['run', 'events', id, '--root', A]);
    expect(evA.map((e) => e.sequence)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(new Set(evA.map((e) => e.type))).toEqual(
      new Set([
        'RunStarted',
        'TurnStarted',
        'ModelResponded',
        'ToolCalled',
        'ToolResulted',
        'TurnCompleted',
        'Suspended',
      ]),
    );

    const exported = await ok('run-export', ['run', 'export', id, '--out', snap, '--root', A]);
    expect(exported).toMatchObject({
      run_id: id,
      lifecycle: 'suspended',
      last_sequence: 12,
      scope_id: auth.scope_id,
      key_generation: auth.current_key_generation,
    });

    const inspected = await ok('run-inspect', ['run', 'inspect', snap]);
    expect(inspected).not.toHaveProperty('verification');
    expect(inspected.payload_sha256).toBe(exported.payload_sha256);
    const verified = await ok('run-inspect', ['run', 'inspect', snap, '--verify']);
    expect(verified.verification).toEqual({ valid: true, record_state: 'SUSPENDED' });

    const record = await ok('authority', ['authority', 'show', '--run', id]);
    expect(record.run).toMatchObject({
      run_id: id,
      state: 'SUSPENDED',
      payload_sha256: exported.payload_sha256,
      last_sequence: 12,
    });

    const imported = await ok('run-import', ['run', 'import', snap, '--root', B]);
    expect(imported).toEqual({ run_id: id, status: 'suspended', last_sequence: 12 });

    // Exit 4 and exit 3 error documents.
    await refused(4, 'snapshot_consumed', ['run', 'import', snap, '--root', C]);
    await refused(4, 'run_moved', ['run', 'resume', id, '--root', A]);
    const cursor = await refused(3, 'cursor_before_snapshot', ['run', 'events', id, '--root', B]);
    expect(cursor.details).toEqual({ run_id: id, recovery_cursor: 12 });

    const resumed = await ok('run-summary', ['run', 'resume', id, '--root', B]);
    expect(resumed).toMatchObject({
      status: 'active',
      last_sequence: 17,
      waiting_for: { kind: 'interaction', interaction_id: 'confirm-1' },
    });
    const evB = await events(['run', 'events', id, '--after', '12', '--root', B]);
    expect(evB.map((e) => [e.sequence, e.type])).toEqual([
      [13, 'Resumed'],
      [14, 'TurnStarted'],
      [15, 'ModelResponded'],
      [16, 'ToolCalled'],
      [17, 'InteractionRequested'],
    ]);

    const suspending = await ok('run-summary', ['run', 'suspend', id, '--root', B]);
    expect(suspending).toMatchObject({ status: 'active', suspend_requested: true });
    const answered = await ok('run-summary', ['run', 'answer', id, 'confirm-1', 'yes', '--root', B]);
    expect(answered).toMatchObject({ status: 'suspended', completed_turns: 3, suspend_requested: false });
    const cancelled = await ok('run-summary', ['run', 'cancel', id, '--root', B]);
    expect(cancelled).toMatchObject({ status: 'cancelled', waiting_for: null });
  }, 120_000);

  it('an uncertain mutating call: waiting_for resolution, run resolve, and every event with resolution', async () => {
    const M = tempRoot('loopx-json-m-');
    const crashed = loopx(['run', 'start', '--agent', MUTATOR, '--root', M, '--json'], {
      LOOPX_TEST_FAULT: FAULT_AFTER_MUTATING_DISPATCH,
    });
    expect(crashed.signal).toBe('SIGKILL');

    const [run] = (await ok('run-list', ['run', 'list', '--root', M])).runs;
    const id: string = run.run_id;
    const call = `${id}/t1/k0`;
    const shown = await ok('run-show', ['run', 'show', id, '--root', M]);
    expect(shown).toMatchObject({
      status: 'active',
      definition: { id: 'test.mutator', version: '1.0.0' },
      waiting_for: { kind: 'resolution', call_ids: [call] },
    });

    // Exit 2 from the command itself (not the parser): no details.
    const usage = await refused(2, 'resolution_required', ['run', 'resolve', id, call, '--root', M]);
    expect(usage).not.toHaveProperty('details');

    const resolved = await ok('run-summary', [
      'run',
      'resolve',
      id,
      call,
      '--committed',
      '{"delivered":true}',
      '--root',
      M,
    ]);
    expect(resolved).toMatchObject({ status: 'completed', failure: null });
    const ev = await events(['run', 'events', id, '--root', M]);
    expect(ev.filter((e) => e.data.call_id === call && e.type === 'ToolResulted').map((e) => e.data)).toEqual([
      { call_id: call, tool_name: 'outbox.append', status: 'mutation_uncertain' },
      { call_id: call, tool_name: 'outbox.append', status: 'ok', resolution: 'committed' },
    ]);
    expect(ev.at(-1)).toMatchObject({ type: 'Completed', data: { completed_turns: 3 } });
  }, 60_000);

  it('Goal work and a backup: init, goal create|list|show, todo add|list|update, work run, backup-state plan and --execute, and the published manifest', async () => {
    const R = tempRoot('loopx-json-goal-');
    const out = join(R, '..', 'backups');
    const root = ['--root', R];

    expect(await ok('init', ['init', ...root])).toEqual({ initialized: true, store: { provider: 'sqlite' } });
    expect(await ok('db-migrate', ['db', 'migrate', ...root])).toEqual({
      provider: 'sqlite',
      schema: null,
      components: [],
      goal_work_schemas: [],
    });
    const goal = await ok('goal', [
      'goal',
      'create',
      'launch',
      '--title',
      'Ship the launch post',
      '--doc',
      'brief.md=Launch on Monday',
      ...root,
    ]);
    expect(goal).toMatchObject({
      goal_id: 'launch',
      title: 'Ship the launch post',
      lifecycle: 'active',
      docs: [{ name: 'brief.md', bytes: 16 }],
    });
    const ref = { goal_id: 'launch', goal_instance_id: goal.goal_instance_id };

    const t1 = await ok('todo-receipt', [
      'todo',
      'add',
      '--goal',
      'launch',
      '--title',
      'Draft the outline',
      '--id',
      't1',
      ...root,
    ]);
    expect(t1).toEqual({
      result: 'applied',
      cursor: 1,
      todo: {
        todo_id: 't1',
        title: 'Draft the outline',
        status: 'open',
        note: null,
        todo_revision: 1,
        lease_owner: null,
      },
    });
    const t2 = await ok('todo-receipt', ['todo', 'add', '--goal', 'launch', '--title', 'Review the draft', ...root]);
    expect(t2).toMatchObject({ result: 'applied', cursor: 2, todo: { todo_id: 't2', status: 'open' } });
    const noted = await ok('todo-receipt', [
      'todo',
      'update',
      't2',
      '--goal',
      'launch',
      '--note',
      'needs design input',
      ...root,
    ]);
    expect(noted).toEqual({
      result: 'applied',
      cursor: 3,
      todo: { ...t2.todo, note: 'needs design input', todo_revision: 2 },
    });
    const both = await ok('todo-receipt', [
      'todo',
      'update',
      't2',
      't1',
      '--goal',
      'launch',
      '--note',
      'before the run',
      ...root,
    ]);
    expect(both).toEqual({
      result: 'applied',
      cursor: 4,
      todos: [
        { ...noted.todo, note: 'before the run', todo_revision: 3 },
        { ...t1.todo, note: 'before the run', todo_revision: 2 },
      ],
    });

    // The scripted worker lists the Todos, completes t1, delivers one webhook, blocks t2.
    const sink = await startWebhookSink({ port: 0 });
    const run = await okAsync('work-run', [
      'work',
      'run',
      '--goal',
      'launch',
      '--agent',
      GOAL_WORKER,
      '--sink',
      sink.deliveriesUrl,
      ...root,
    ]).finally(() => sink.close());
    expect(sink.deliveries()).toHaveLength(1);
    expect(run).toMatchObject({
      status: 'completed',
      completed_turns: 5,
      waiting_for: null,
      suspend_requested: false,
      failure: null,
      goal: ref,
    });

    const shown = await ok('goal-show', ['goal', 'show', 'launch', ...root]);
    expect(shown).toMatchObject({
      ...goal,
      todos: { open: 0, done: 1, blocked: 1, deferred: 0 },
      handoff_mode: 'hard_lease',
    });
    expect(shown.committed_transactions).toBeGreaterThan(noted.cursor);
    expect(await ok('goal-list', ['goal', 'list', ...root])).toEqual({ goals: [goal] });
    // The run's session still holds the lease it took on t2 (blocked, not terminal): the CLI is refused.
    const listed = await ok('todo-list', ['todo', 'list', '--goal', 'launch', ...root]);
    expect(listed).toEqual({
      goal_id: 'launch',
      todos: [
        expect.objectContaining({ todo_id: 't1', status: 'done', note: 'outline drafted', lease_owner: null }),
        expect.objectContaining({
          todo_id: 't2',
          status: 'blocked',
          note: 'waiting for design feedback',
          lease_owner: `session:${run.session.session_id}`,
        }),
      ],
    });
    await refused(4, 'lease_held', ['todo', 'update', 't2', '--goal', 'launch', '--status', 'open', ...root]);

    const backup = ['backup-state', '--output-dir', out, '--backup-id', 'json-contract', ...root];
    const planned = await ok('backup-state-plan', backup);
    expect(planned).toMatchObject({
      dry_run: true,
      backup_id: 'json-contract',
      archive_name: 'json-contract.tar.gz',
      manifest_name: 'json-contract.manifest.json',
      capacity: { ok: true, refusals: [] },
    });
    expect(planned.goals).toEqual([
      { ...ref, route: 'goals/launch', archive_route: 'runtime-root/goals/launch', route_status: 'included' },
    ]);
    expect(existsSync(out), 'the plan writes nothing').toBe(false);

    const created = await ok('backup-state-result', [...backup, '--execute']);
    expect(created).toMatchObject({
      backup_id: 'json-contract',
      archive: { name: 'json-contract.tar.gz' },
      manifest: { name: 'json-contract.manifest.json' },
      goals: planned.goals,
    });
    const bytes = readFileSync(join(out, created.manifest.name));
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(created.manifest.sha256);
    const manifest = JSON.parse(bytes.toString('utf8'));
    expectValid('state-backup-manifest-v1', manifest);
    // The legacy manifest, still written on request.
    const legacy = await ok('backup-state-result', [
      ...backup.map((a) => (a === 'json-contract' ? 'json-contract-v0' : a)),
      '--execute',
      '--format',
      'v0',
    ]);
    expectValid('state-backup-manifest-v0', JSON.parse(readFileSync(join(out, legacy.manifest.name), 'utf8')));
    expect(manifest).toMatchObject({
      backup_id: 'json-contract',
      capture: created.capture,
      goals: planned.goals,
      configuration_checkpoint: { sha256: created.configuration_checkpoint_sha256 },
    });
    expect(manifest.execution).toMatchObject({
      archive_path: created.archive.name,
      manifest_path: created.manifest.name,
      archive_sha256: created.archive.sha256,
      archive_size_bytes: created.archive.size_bytes,
      member_count: created.counts.members,
    });
    expect(
      manifest.execution.sqlite_snapshots.find((s: { goal_id: string | null }) => s.goal_id === 'launch'),
    ).toMatchObject({ source: 'goals/launch/work.db', integrity: 'ok' });

    // The same id again: never overwritten (exit 4).
    const occupied = await refused(4, 'backup_destination_occupied', [...backup, '--execute']);
    expect(occupied.details).toEqual({ occupied: [created.archive.name, created.manifest.name] });

    // backup-state verify: the plan creates nothing; --execute prints the public summary and writes
    // the private audit, which audit show --json prints byte-identically; --public reprints the summary.
    const dest = join(R, '..', 'verified');
    const verify = [
      'backup-state',
      'verify',
      '--archive',
      join(out, created.archive.name),
      '--manifest',
      join(out, created.manifest.name),
      '--destination',
      dest,
    ];
    const verifyPlan = await ok('backup-verify-plan', verify);
    expect(verifyPlan).toMatchObject({
      dry_run: true,
      backup_id: 'json-contract',
      archive_sha256: created.archive.sha256,
      members: created.counts.members,
      execution_authority_granted: false,
    });
    expect(existsSync(dest), 'the verify plan creates nothing').toBe(false);
    const summary = await ok('state-recovery-audit-public-v0', [...verify, '--execute']);
    expect(summary).toMatchObject({
      backup: { backup_id: 'json-contract', archive_sha256: created.archive.sha256 },
      execution_authority_granted: false,
    });
    const stored = readFileSync(join(dest, 'recovery-audit.json'));
    const audit = JSON.parse(stored.toString('utf8'));
    expectValid('state-recovery-audit-v0', audit);
    expect(audit.recovery_id).toBe(summary.recovery_id);
    const shownAudit = await loopxAsync(['backup-state', 'audit', 'show', dest, '--private']);
    expect(shownAudit.status, shownAudit.stderr).toBe(0);
    expect(shownAudit.stdout).toBe(stored.toString('utf8'));
    expect(await ok('state-recovery-audit-public-v0', ['backup-state', 'audit', 'show', dest])).toEqual(summary);
    // The workspace read back without changing it: its Goals, then one Goal in full.
    const workspace = await ok('backup-workspace-ls', ['backup-state', 'workspace', 'ls', dest]);
    expect(workspace).toMatchObject({ recovery_id: summary.recovery_id, execution_authority_granted: false });
    const goalId = workspace.goals[0].goal_id;
    expect(
      await ok('backup-workspace-show', ['backup-state', 'workspace', 'show', dest, '--goal', goalId]),
    ).toMatchObject({
      goal: { goal_id: goalId },
      execution_authority_granted: false,
    });
    await refused(4, 'verify_destination_exists', [...verify, '--execute']);

    // recover: the Goal planned into a new root, the plan's status, then applied — the receiver is gone, so it holds.
    const into = join(R, '..', 'recovered');
    const recoverPlan = await ok('recover-plan', [
      'recover',
      'plan',
      '--from',
      dest,
      '--goal',
      goalId,
      '--destination',
      into,
    ]);
    expect(recoverPlan).toMatchObject({ goal: { goal_id: goalId }, execution_authority_granted: false });
    expect(await ok('recover-status', ['recover', 'status', '--destination', into])).toMatchObject({
      state: 'adoption_prepared',
      plan_digest: recoverPlan.plan_digest,
    });
    const applied = await okAsync('recover-status', [
      'recover',
      'apply',
      '--destination',
      into,
      '--confirm',
      recoverPlan.plan_digest,
    ]);
    expect(applied).toMatchObject({
      state: 'reconciliation_held',
      execution_authority_granted: false,
      fences: { source_established: true, destination_established: false },
    });
    expect(applied.holds.map((h: { code: string }) => h.code)).toEqual(['receiver_unreachable']);
  }, 180_000);

  it('demo, and authority init|show|rotate|retire on another --authority-dir', async () => {
    const demo = await ok('demo', ['demo', '--root', tempRoot('loopx-json-demo-')]);
    expect(demo.snapshot).toMatchObject({
      lifecycle: 'suspended',
      claim_verified: true,
      messages: demo.inspected.messages.length,
    });
    expect(demo.inspected.run_id).toBe(demo.run.run_id);

    const dir = join(mkdtempSync(join(tmpdir(), 'loopx-json-auth-')), 'authority');
    const a = ['--authority-dir', dir];
    const init = await ok('authority', ['authority', 'init', ...a]);
    expect(init.key_generations).toEqual([{ generation: 1, retired: false }]);
    const shown = await ok('authority', ['authority', 'show', ...a]);
    expect(shown).toEqual(init);
    const rotated = await ok('authority', ['authority', 'rotate', ...a]);
    expect(rotated).toMatchObject({ scope_id: init.scope_id, current_key_generation: 2 });
    const retired = await ok('authority', ['authority', 'retire', '1', ...a]);
    expect(retired.key_generations).toEqual([
      { generation: 1, retired: true },
      { generation: 2, retired: false },
    ]);
    const bindable = tempRoot('loopx-json-bind-');
    expect(await ok('init', ['init', '--root', bindable, ...a])).toEqual({
      initialized: true,
      store: { provider: 'sqlite' },
    });
    expect(await ok('authority-bind-root', ['authority', 'bind-root', '--root', bindable, ...a])).toMatchObject({
      binding: 'unchanged',
    });
    expect(
      await ok('authority-bind-root-adopt', ['authority', 'bind-root', '--adopt', '--root', bindable, ...a]),
    ).toMatchObject({ state: 'unchanged' });
    const none = await ok('authority', ['authority', 'show', '--run', 'run_unknown', ...a]);
    expect(none.run).toBeNull();
  }, 60_000);

  it('a command line the parser rejects prints a usage_error document with --json (exit 2)', async () => {
    const usage = await refused(2, 'usage_error', ['run', 'start']);
    expect(usage.details).toEqual({ parser_code: 'commander.missingMandatoryOptionValue' });
  });

  it('loopx daemon --json, and its verify job and audit list over loopback HTTP', async () => {
    const root = tempRoot('loopx-json-daemon-');
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    const out = join(root, '..', 'out');
    expect(
      (await loopxAsync(['backup-state', '--execute', '--output-dir', out, '--backup-id', 'b1', '--root', root]))
        .status,
    ).toBe(0);
    const child = spawn(process.execPath, [...CLI, 'daemon', '--root', root, '--json'], {
      cwd: REPO,
      env: { ...process.env, XDG_STATE_HOME: STATE_HOME },
    });
    try {
      const started = await new Promise<Record<string, unknown>>((resolve, reject) => {
        let text = '';
        child.stdout.on('data', (b: Buffer) => {
          text += b.toString('utf8');
          try {
            resolve(JSON.parse(text) as Record<string, unknown>);
          } catch {
            // not complete yet
          }
        });
        child.on('exit', (code) => reject(new Error(`daemon exited ${code}`)));
      });
      expectValid('daemon-start', started);
      const loginUrl = await loopxAsync(['daemon', 'login-url', '--root', root, '--json']);
      expect(loginUrl.status, loginUrl.stderr).toBe(0);
      expectValid('daemon-login-url', loginUrl.json());
      const token = readFileSync(join(root, 'daemon', 'token'), 'utf8').trim();
      const api = (path: string, init: RequestInit = {}) =>
        fetch(`${started.url as string}api/${path}`, {
          ...init,
          headers: { authorization: `Bearer ${token}`, ...(init.headers ?? {}) },
        });
      const { upload_id } = (await (await api('backups/uploads', { method: 'POST' })).json()) as { upload_id: string };
      for (const [part, file] of [
        ['archive', 'b1.tar.gz'],
        ['manifest', 'b1.manifest.json'],
      ] as const) {
        const r = await api(`backups/uploads/${upload_id}/${part}`, {
          method: 'PUT',
          headers: { 'content-type': 'application/octet-stream' },
          body: readFileSync(join(out, file)),
        });
        expect(r.status).toBe(200);
      }
      const uploads = await (await api('backups/uploads')).json();
      expectValid('daemon-upload-list', uploads);
      expect((uploads as { uploads: unknown[] }).uploads).toHaveLength(1);
      const { job_id } = (await (await api(`backups/uploads/${upload_id}/verify`, { method: 'POST' })).json()) as {
        job_id: string;
      };
      await (await api(`backups/jobs/${job_id}/events`)).text(); // ends with the result
      const job = await (await api(`backups/jobs/${job_id}`)).json();
      expectValid('daemon-job', job);
      expect(job).toMatchObject({ state: 'audited' });
      const owners = await (await api('owners')).json();
      expectValid('daemon-owners', owners);
      expect((owners as { owners: { name: string }[] }).owners.map((o) => o.name)).toEqual(
        expect.arrayContaining([
          'registry',
          'config',
          'goal',
          'work',
          'session',
          'effect',
          'quota',
          'scheduler',
          'engine',
        ]),
      );
      const audits = await (await api('audits')).json();
      expectValid('daemon-audit-list', audits);
      expectValid(
        'state-recovery-audit-public-v0',
        await (await api(`audits/${(job as { recovery_id: string }).recovery_id}`)).json(),
      );
    } finally {
      child.kill('SIGTERM');
    }
  }, 120_000);

  it('every schema in docs/schemas/ was exercised above, or by the one test file named for it', () => {
    for (const [file, test] of Object.entries(EXERCISED_ELSEWHERE)) {
      expect(readFileSync(join(REPO, test), 'utf8'), `${test} validates ${file}`).toContain(file);
      exercised.add(file);
    }
    expect([...exercised].sort()).toEqual(SCHEMA_FILES);
  });
});
