/**
 * `loopx goal show` on the root a Goal was recovered from, through the real CLI after a real
 * recovery (`recover plan` + `recover apply`): it says plainly that the lifetime is superseded,
 * names the root the Goal continues in as the operator types it from where the command runs
 * (never an absolute path) and the new lifetime, and prints the one next action — which runs as
 * printed and shows the Goal live there. `--json` carries it as `superseded_by` (goal-show
 * schema); a root the run authority no longer finds is said so, with a placeholder to fill in.
 * The daemon on the old root answers the same without a path (a root it does not serve: null).
 */
import { readdirSync, readFileSync, renameSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens } from '../../src/daemon/index.js';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { closeDaemon } from '../support/daemon.js';
import { REPO, loopxAsync, rel } from '../support/cli.js';
import {
  as,
  backupVerified,
  cliIn,
  newUser,
  recoverInto,
  workedSource,
  type User,
} from '../recovery/support/adopt-users.js';

const SCHEMA_DIR = join(REPO, 'docs/schemas');
const ajv = new Ajv2020({ strict: true, allErrors: true });
for (const f of readdirSync(SCHEMA_DIR).filter((n) => n.endsWith('.schema.json')))
  ajv.addSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, f), 'utf8')) as Record<string, unknown>);
function expectValid(schema: string, doc: unknown): void {
  const validate = ajv.getSchema(`https://loopx.dev/schemas/${schema}.json`)!;
  expect(validate(doc) ? [] : validate.errors, JSON.stringify(doc)).toEqual([]);
}

let sink: WebhookSink;
let u: User;
/** The source root (the old lifetime) and the root the recovery made. */
let S: string;
let R: string;
let recovered: { goal_instance_id: string };
let old: string;

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  u = newUser('loopx-goal-superseded-');
  S = u.root;
  old = await workedSource(u, sink.deliveriesUrl);
  await backupVerified(u);
  R = join(u.dir, 'recovered');
  const st = await recoverInto(u, R);
  expect(st.state, JSON.stringify(st.holds)).toBe('complete');
  recovered = await as(u, ['goal', 'show', 'launch', '--root', R]);
}, 240_000);
afterAll(async () => {
  await sink.close();
});

describe('goal show on the root a Goal was recovered from', () => {
  it('--json carries superseded_by: the new lifetime, the root relative to here, and the one next action — no absolute path', async () => {
    const doc = await as(u, ['goal', 'show', 'launch', '--root', S]);
    expectValid('goal-show', doc);
    expect(doc).toMatchObject({ goal_id: 'launch', goal_instance_id: old, lifecycle: 'active' });
    expect(doc.superseded_by).toEqual({
      goal_instance_id: recovered.goal_instance_id,
      root_id: expect.stringMatching(/^[A-Za-z0-9_-]+$/),
      root: relative(REPO, R),
      recovery_id: expect.stringMatching(/^[0-9a-f]{64}$/),
      recorded_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      next_action: `continue the Goal in the root it was recovered into: loopx goal show launch --root ${rel(R)} --authority-dir ${rel(u.authority)}`,
    });
    expect(recovered.goal_instance_id).not.toBe(old);
    // Relative paths only: no value, and no word of one, starts at the file system's root.
    expect(JSON.stringify(doc)).not.toMatch(/["\s]\//);

    // The next action runs as printed: the Goal's new lifetime there, live.
    const next = doc.superseded_by.next_action as string;
    const there = await loopxAsync([...next.slice(next.indexOf('loopx ') + 'loopx '.length).split(' '), '--json']);
    expect(there.status, there.stderr).toBe(0);
    expectValid('goal-show', there.json());
    expect(there.json()).toMatchObject({ goal_instance_id: recovered.goal_instance_id, superseded_by: null });
  });

  it('says it plainly to a person, naming the root as typed from the working directory the command runs in', async () => {
    const r = await cliIn(u.dir, ['goal', 'show', 'launch', '--root', 'root', '--authority-dir', 'authority']);
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe(`Goal launch (${old}) superseded (was active): Ship the launch post`);
    expect(lines[1]).toMatch(
      new RegExp(
        `^ {2}superseded by the recovery into recovered: the Goal continues there as lifetime ${recovered.goal_instance_id} \\(recorded \\d{4}-`,
      ),
    );
    expect(r.stdout).toContain('  this root keeps this lifetime as history and takes no more work for it\n');
    expect(r.stdout).toContain(
      '  continue the Goal in the root it was recovered into: loopx goal show launch --root recovered --authority-dir authority\n',
    );
    expect(r.stdout).toMatch(/ {2}todos: 1 open, 1 done, 1 blocked, 0 deferred;/);
    expect(r.stdout).not.toContain(u.dir);
  });

  it('says so when the run authority no longer finds the new root, with a placeholder for it', async () => {
    const moved = `${R}-moved`;
    renameSync(R, moved);
    try {
      const doc = await as(u, ['goal', 'show', 'launch', '--root', S]);
      expectValid('goal-show', doc);
      expect(doc.superseded_by).toMatchObject({ goal_instance_id: recovered.goal_instance_id, root: null });
      expect(doc.superseded_by.next_action).toBe(
        `continue the Goal in the root it was recovered into (root id ${doc.superseded_by.root_id}): loopx goal show launch --root <recovered-root> --authority-dir ${rel(u.authority)}`,
      );
      const human = await loopxAsync(['goal', 'show', 'launch', '--root', S, '--authority-dir', u.authority]);
      expect(human.stdout).toContain(
        `superseded by the recovery into another root (root id ${doc.superseded_by.root_id}), which the run authority no longer finds:`,
      );
    } finally {
      renameSync(moved, R);
    }
  });

  it('the daemon on the old root answers the same without a path, and serves the root beside it where the Goal continues, by its name', async () => {
    const TOKEN = 'test-token-0123456789';
    const d = await buildApp({
      root: S,
      token: TOKEN,
      loginTokens: new LoginTokens(),
      port: () => 80,
      authorityDir: u.authority,
      logger: false,
    });
    try {
      const r = await d.app.inject({
        method: 'GET',
        url: '/api/goals/launch',
        headers: { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}` },
      });
      expect(r.statusCode, r.body).toBe(200);
      expectValid('daemon-goal', r.json());
      const shown = await as(u, ['goal', 'show', 'launch', '--root', S]);
      const { next_action: _next, ...same } = shown.superseded_by as Record<string, unknown>;
      // The recovered root lies beside the old one (another process made it): the daemon serves it by its name.
      expect(r.json().superseded_by).toEqual({ ...same, root: basename(R) });
      expect(r.body).not.toContain(u.dir);
      const there = await d.app.inject({
        method: 'GET',
        url: `/api/goals/launch?root=${basename(R)}`,
        headers: { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}` },
      });
      expect(there.json()).toMatchObject({ goal_instance_id: recovered.goal_instance_id, superseded_by: null });
      // Only a root the authority names as where one of this root's Goals continues: no other sibling.
      const other = await d.app.inject({
        method: 'GET',
        url: `/api/goals/launch?root=${basename(S)}x`,
        headers: { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}` },
      });
      expect(other.json()).toMatchObject({ error: { code: 'daemon_root_unknown' } });
    } finally {
      await closeDaemon(d);
    }
  });
});
