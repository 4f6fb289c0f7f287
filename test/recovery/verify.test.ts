/**
 * `loopx backup-state verify` end to end through the real CLI, on backups made by the real
 * producer from roots whose Goal work was done by real runs: plan creates nothing; execute
 * creates only the new inert workspace and its content-addressed audit; the public summary is
 * redacted; `audit show` reads it back byte-identically; the source root and the run authority
 * are untouched, no socket is opened and no process is left behind (observed with strace); after
 * the source root is deleted, Todos and history read back from the workspace.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { OWNERS } from '../../src/owners/index.js';
import { AUDIT_FILE, WORKSPACE_DIR, type RecoveryAudit } from '../../src/recovery/index.js';
import { CLI, REPO, STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';
import { treeFingerprint, jsonStrings } from '../backup/support/fixtures.js';

const AGENT = 'examples/agents/goal-worker.json';
let sink: WebhookSink;
let root: string;
let base: string;
let archive: string;
let manifest: string;

/** A root with real Goal work: a Goal, three Todos, a scripted run that worked them and delivered once. */
async function rootWithGoalWork(): Promise<string> {
  const r = tempRoot();
  expect((await loopxAsync(['init', '--root', r])).status).toBe(0);
  expect((await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', '--root', r])).status).toBe(
    0,
  );
  for (const title of ['Draft the outline', 'Review with design', 'Publish the post']) {
    expect((await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', title, '--root', r])).status).toBe(0);
  }
  const run = await loopxAsync([
    'work',
    'run',
    '--goal',
    'launch',
    '--agent',
    AGENT,
    '--sink',
    sink.deliveriesUrl,
    '--root',
    r,
    '--json',
  ]);
  expect(run.status, run.stderr).toBe(0);
  return r;
}

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  root = await rootWithGoalWork();
  base = dirname(root);
  const made = await loopxAsync([
    'backup-state',
    '--execute',
    '--output-dir',
    join(base, 'out'),
    '--backup-id',
    'b1',
    '--root',
    root,
    '--format',
    'v0',
    '--json',
  ]);
  expect(made.status, made.stderr).toBe(0);
  archive = join(base, 'out', 'b1.tar.gz');
  manifest = join(base, 'out', 'b1.manifest.json');
}, 120_000);

afterAll(async () => {
  await sink.close();
});

const verifyArgs = (dest: string, ...more: string[]) => [
  'backup-state',
  'verify',
  '--archive',
  archive,
  '--manifest',
  manifest,
  '--destination',
  dest,
  ...more,
];

describe('backup-state verify (plan)', () => {
  it('validates the inputs and prints the plan, creating nothing', async () => {
    const dest = join(base, 'plan-dest');
    const before = treeFingerprint(base);
    const r = await loopxAsync([...verifyArgs(dest), '--json']);
    expect(r.status, r.stderr).toBe(0);
    const plan = r.json();
    expect(plan).toMatchObject({
      ok: true,
      dry_run: true,
      backup_id: 'b1',
      execution_authority_granted: false,
      would_create: [WORKSPACE_DIR, AUDIT_FILE],
    });
    expect(plan.goals).toBe(1);
    expect(existsSync(dest)).toBe(false);
    expect(treeFingerprint(base)).toEqual(before);
    expect(r.stdout).not.toContain(base);
  });

  it('prints a readable plan and --help', async () => {
    const r = await loopxAsync(verifyArgs(join(base, 'plan-human')));
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('dry run: nothing was created');
    expect(r.stdout).toContain('verification grants no execution authority');
    const help = await loopxAsync(['backup-state', 'verify', '--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('--destination');
    const show = await loopxAsync(['backup-state', 'audit', 'show', '--help']);
    expect(show.status).toBe(0);
  });

  it('refuses create-only flags given to verify (usage, exit 2)', async () => {
    const r = await loopxAsync([...verifyArgs(join(base, 'x')), '--backup-id', 'zz', '--json']);
    expect(r.status).toBe(2);
    expect(r.json().error.code).toBe('usage_invalid_option');
  });
});

describe('backup-state verify --execute', () => {
  let dest: string;
  let summary: any; // eslint-disable-line @typescript-eslint/no-explicit-any

  beforeAll(async () => {
    dest = join(base, 'dest-1');
    const r = await loopxAsync([...verifyArgs(dest), '--execute', '--json']);
    expect(r.status, r.stderr).toBe(0);
    summary = r.json();
  }, 60_000);

  it('creates only D (0700) with the inert workspace and the audit (0600)', () => {
    expect(statSync(dest).mode & 0o777).toBe(0o700);
    expect(readdirSync(dest).sort()).toEqual([AUDIT_FILE, WORKSPACE_DIR]);
    expect(statSync(join(dest, AUDIT_FILE)).mode & 0o777).toBe(0o600);
    expect(statSync(join(dest, WORKSPACE_DIR)).mode & 0o777).toBe(0o700);
    expect(readdirSync(join(dest, WORKSPACE_DIR)).sort()).toEqual([
      'configuration-backup.json',
      'manifest.json',
      'runtime-root',
    ]);
  });

  it('is held for a v0 archive, with legacy findings, no activation and no execution authority', () => {
    const audit = JSON.parse(readFileSync(join(dest, AUDIT_FILE), 'utf8')) as RecoveryAudit;
    expect(audit.schema_version).toBe('loopx_state_recovery_audit_v0');
    expect(audit.phase).toBe('held');
    expect(audit.operator_state).toBe('audit_held');
    expect(audit.activation_eligible).toBe(false);
    expect(audit.execution_authority_granted).toBe(false);
    expect(audit.workspace).toEqual({ isolation: 'inert', registered: false, directory: WORKSPACE_DIR });
    const codes = audit.findings.map((f) => f.code);
    expect(codes).toContain('legacy_manifest_incomplete');
    expect(codes).toContain('legacy_best_effort');
    for (const f of audit.findings) {
      expect(typeof f.owner).toBe('string');
      expect(f.next_action.length).toBeGreaterThan(0);
    }
    // The §5 top-level fields are all there.
    for (const k of [
      'schema_version',
      'recovery_id',
      'backup',
      'workspace',
      'components',
      'findings',
      'activation_eligible',
      'execution_authority_granted',
    ])
      expect(audit).toHaveProperty(k);
    expect(audit.backup.archive_sha256).toBe(summary.backup.archive_sha256);
    expect(audit.capture.requested_profile).toBeNull();
  });

  it('classifies each asset: the Goal and its work readable, runs/sessions/effects historical, nothing unknown relabelled', () => {
    const audit = JSON.parse(readFileSync(join(dest, AUDIT_FILE), 'utf8')) as RecoveryAudit;
    const byOwner = (o: string) => audit.components.filter((c) => c.owner_kind === o);
    expect(byOwner('config')[0]!.classification).toBe('recovered_readable');
    expect(byOwner('goal')).toHaveLength(1);
    expect(byOwner('goal')[0]).toMatchObject({
      classification: 'recovered_readable',
      dependency_ids: ['configuration'],
      verification: 'verified',
    });
    expect(byOwner('work')[0]!.classification).toBe('recovered_readable');
    for (const o of ['engine', 'session', 'effect']) expect(byOwner(o)[0]?.classification, o).toBe('historical_only');
    for (const c of audit.components) {
      if (c.owner_kind === 'unknown') expect(c.classification).toBe('unknown_unrecoverable');
      expect(c.next_action.length).toBeGreaterThan(0);
    }
    const sum =
      audit.counts.assets.recovered_readable +
      audit.counts.assets.historical_only +
      audit.counts.assets.unknown_unrecoverable;
    expect(sum).toBe(audit.components.length);
    expect(audit.measurements.archive_bytes).toBe(statSync(archive).size);
    expect(audit.measurements.regular_file_bytes).toBeGreaterThan(0);
    expect(audit.measurements.durations_ms.total).toBeGreaterThanOrEqual(audit.measurements.durations_ms.owner_read);
  });

  it('prints a public summary without paths, member names, Goal ids, subjects or payloads', () => {
    const text = JSON.stringify(summary);
    expect(text).not.toContain(base);
    expect(text).not.toContain('/tmp');
    expect(text).not.toContain('runtime-root/');
    expect(text).not.toContain('launch'); // the Goal id
    expect(text).not.toContain('Draft the outline');
    for (const s of jsonStrings(summary)) expect(s.startsWith('/')).toBe(false);
    for (const c of summary.components) {
      expect(c).not.toHaveProperty('archive_members');
      expect(c).not.toHaveProperty('readback');
    }
    for (const f of summary.findings) expect(f).not.toHaveProperty('subject');
    // The private audit does keep the names.
    const priv = readFileSync(join(dest, AUDIT_FILE), 'utf8');
    expect(priv).toContain('runtime-root/goals/launch/work.db');
    expect(priv).not.toContain(base);
  });

  it('audit show --private reads the audit back byte-identically; --json prints the public summary', async () => {
    const shown = spawnSync(process.execPath, [...CLI, 'backup-state', 'audit', 'show', dest, '--private'], {
      cwd: REPO,
      env: { ...process.env, XDG_STATE_HOME: STATE_HOME },
    });
    expect(shown.status).toBe(0);
    expect(Buffer.compare(shown.stdout, readFileSync(join(dest, AUDIT_FILE)))).toBe(0);
    const pub = await loopxAsync(['backup-state', 'audit', 'show', dest, '--json']);
    expect(pub.status).toBe(0);
    expect(pub.json()).toEqual(summary);
    expect(pub.stdout).not.toContain('runtime-root/');
    const human = await loopxAsync(['backup-state', 'audit', 'show', dest]);
    expect(human.stdout).toContain('execution authority granted: no');
    expect(human.stdout).toContain('recovered and readable');
  });

  it('audit show refuses a changed audit (audit_digest_mismatch) and a missing one (audit_not_found)', async () => {
    const copy = join(base, 'tampered');
    mkdirSync(copy, { mode: 0o700 });
    const text = readFileSync(join(dest, AUDIT_FILE), 'utf8');
    writeFileSync(join(copy, AUDIT_FILE), text.replace('"historical_only"', '"recovered_readable"'), { mode: 0o600 });
    const r = await loopxAsync(['backup-state', 'audit', 'show', copy, '--json']);
    expect(r.status).toBe(3);
    expect(r.json().error.code).toBe('audit_digest_mismatch');
    const none = await loopxAsync(['backup-state', 'audit', 'show', join(base, 'nowhere'), '--json']);
    expect(none.status).toBe(3);
    expect(none.json().error.code).toBe('audit_not_found');
  });

  it('never replaces an earlier audit: the same destination again is a conflict (exit 4) and leaves it unchanged', async () => {
    const before = treeFingerprint(dest);
    const bytes = readFileSync(join(dest, AUDIT_FILE));
    const r = await loopxAsync([...verifyArgs(dest), '--execute', '--json']);
    expect(r.status).toBe(4);
    expect(r.json().error.code).toBe('verify_destination_exists');
    expect(treeFingerprint(dest)).toEqual(before);
    expect(Buffer.compare(readFileSync(join(dest, AUDIT_FILE)), bytes)).toBe(0);
  });

  it('a failed verify elsewhere leaves the earlier audit unchanged and publishes nothing', async () => {
    const bytes = readFileSync(join(dest, AUDIT_FILE));
    const bad = join(base, 'bad-manifest.json');
    writeFileSync(
      bad,
      readFileSync(manifest, 'utf8').replace(
        /"archive_sha256": "[0-9a-f]{64}"/,
        `"archive_sha256": "${'0'.repeat(64)}"`,
      ),
      { mode: 0o600 },
    );
    const d2 = join(base, 'dest-bad');
    const r = await loopxAsync([
      'backup-state',
      'verify',
      '--archive',
      archive,
      '--manifest',
      bad,
      '--destination',
      d2,
      '--execute',
      '--json',
    ]);
    expect(r.status).toBe(3);
    expect(r.json().error.code).toBe('verify_archive_digest_mismatch');
    expect(existsSync(d2)).toBe(false);
    expect(Buffer.compare(readFileSync(join(dest, AUDIT_FILE)), bytes)).toBe(0);
  });
});

describe('terminal output', () => {
  it('draws a progress bar on stderr when it is a terminal (script(1) gives it a pty), and is quiet otherwise', async () => {
    const quote = (a: string) => `'${a.replace(/'/g, `'\\''`)}'`;
    const cmd = [process.execPath, ...CLI, ...verifyArgs(join(base, 'dest-tty')), '--execute'].map(quote).join(' ');
    const r = spawnSync('script', ['-qec', cmd, '/dev/null'], {
      cwd: REPO,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, XDG_STATE_HOME: STATE_HOME },
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/\r\x1b\[2K\[[#.]{28}\] \d+%/);
    expect(r.stdout).toContain('recovery audit ');
    const quiet = await loopxAsync([...verifyArgs(join(base, 'dest-quiet')), '--execute']);
    expect(quiet.status).toBe(0);
    expect(quiet.stderr).toBe('');
  }, 60_000);
});

describe('no live mutation', () => {
  it('leaves the source root and the run authority byte-identical, opens no socket, leaves no process (strace)', () => {
    const authority = join(STATE_HOME, 'loopx');
    const fingerprint = () => [...treeFingerprint(root), ...treeFingerprint(authority)];
    const contents = (dir: string): string[] => {
      const out: string[] = [];
      const walk = (d: string) => {
        for (const n of readdirSync(d).sort()) {
          const p = join(d, n);
          const st = statSync(p);
          if (st.isDirectory()) walk(p);
          else if (st.isFile()) out.push(`${p} ${readFileSync(p).toString('base64')}`);
        }
      };
      walk(dir);
      return out;
    };
    const before = fingerprint();
    const beforeBytes = [...contents(root), ...contents(authority)];
    const dest = join(base, 'dest-strace');
    const trace = join(base, 'strace.log');
    const r = spawnSync(
      'strace',
      [
        '-f',
        '-qq',
        '-s',
        '4096',
        '-o',
        trace,
        '-e',
        'trace=socket,connect,bind,listen,execve,clone,clone3,fork,vfork',
        process.execPath,
        ...CLI,
        ...verifyArgs(dest),
        '--execute',
        '--json',
      ],
      {
        cwd: REPO,
        env: { ...process.env, XDG_STATE_HOME: STATE_HOME },
        encoding: 'utf8',
        timeout: 120_000,
      },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).execution_authority_granted).toBe(false);
    expect(fingerprint()).toEqual(before);
    expect([...contents(root), ...contents(authority)]).toEqual(beforeBytes);

    const lines = readFileSync(trace, 'utf8').split('\n').filter(Boolean);
    // No network socket of any family but local stream pairs; no connect, bind or listen at all.
    const sockets = lines.filter((l) => /\bsocket\(/.test(l));
    for (const l of sockets) expect(l, l).not.toMatch(/AF_INET|AF_INET6|AF_NETLINK|AF_PACKET/);
    expect(lines.filter((l) => /\b(connect|bind|listen)\(/.test(l) && !/= -1/.test(l))).toEqual([]);
    // Every program executed is node itself (the CLI and its one disposable worker) or the TypeScript loader's esbuild.
    const execs = lines
      .filter((l) => /\bexecve\(/.test(l) && !/= -1 /.test(l))
      .map((l) => /execve\("([^"]+)"/.exec(l)![1]!);
    for (const e of execs) expect(e === process.execPath || e.endsWith('/esbuild'), e).toBe(true);
    const workers = lines.filter((l) => /\bexecve\(/.test(l) && l.includes('recovery/worker'));
    expect(workers).toHaveLength(1);
    expect(workers[0]).toContain('--max-old-space-size=512');
    // Every process the run created has exited.
    const pids = new Set(lines.map((l) => Number(/^(\d+)/.exec(l)?.[1])).filter((n) => Number.isInteger(n)));
    for (const pid of pids) {
      let alive = false;
      try {
        process.kill(pid, 0);
        alive =
          readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('loopx') ||
          readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('worker');
      } catch {
        alive = false;
      }
      expect(alive, `pid ${pid}`).toBe(false);
    }
  }, 120_000);
});

describe('source loss', () => {
  it('reads Todos and committed history back from the workspace after the source root is gone', async () => {
    const before = (await loopxAsync(['todo', 'list', '--goal', 'launch', '--root', root, '--json'])).json()
      .todos as Array<{ todo_id: string; status: string; title: string }>;
    const dest = join(base, 'dest-loss');
    rmSync(root, { recursive: true, force: true });
    expect(existsSync(root)).toBe(false);
    const r = await loopxAsync([...verifyArgs(dest), '--execute', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const copied = join(dest, WORKSPACE_DIR, 'runtime-root', 'goals', 'launch', 'work.db');
    const h = OWNERS.work.readHistorical(
      { root: join(dest, WORKSPACE_DIR, 'runtime-root') },
      { goal_id: 'launch' },
    ).value;
    expect(copied).toMatch(/work\.db$/);
    expect(h.readable).toBe(true);
    expect(h.execution_authority_granted).toBe(false);
    expect(h.findings.filter((f) => f.severity === 'error')).toEqual([]);
    expect(h.todos.map((t) => ({ todo_id: t.todo_id, status: t.status, title: t.title }))).toEqual(
      before.map((t) => ({ todo_id: t.todo_id, status: t.status, title: t.title })),
    );
    expect(before.some((t) => t.status === 'done')).toBe(true);
    expect(h.history_count).toBeGreaterThanOrEqual(before.length + 1);
    const audit = JSON.parse(readFileSync(join(dest, AUDIT_FILE), 'utf8')) as RecoveryAudit;
    const goal = audit.components.find((c) => c.owner_kind === 'goal')!;
    expect((goal.readback as { work: { history_count: number } }).work.history_count).toBe(h.history_count);
    expect(audit.phase).toBe('held');
  }, 60_000);
});
