/**
 * The new root's name, as the recovery form proposes it and as the daemon checks it: a root whose
 * directory is hidden (`.loopx-sample`, the quickstart's) gets a proposal the daemon accepts; a
 * name it refuses is told the actual rule; and the form's own check (the input's `pattern`) is a
 * valid expression — browsers compile it with the `v` flag — that agrees with the daemon's rule.
 */
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens, type DaemonApp } from '../../src/daemon/index.js';
import { REPO, STATE_HOME, loopxAsync } from '../support/cli.js';

const TOKEN = 'test-token-0123456789';
const AUTH = { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}` };
let d: DaemonApp;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'loopx-dest-name-'));
  const root = join(dir, '.loopx-sample');
  mkdirSync(root, { mode: 0o700 });
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  d = await buildApp({
    root,
    token: TOKEN,
    loginTokens: new LoginTokens(),
    port: () => 80,
    authorityDir: join(STATE_HOME, 'loopx', 'run-authority'),
    logger: false,
  });
}, 60_000);
afterAll(async () => {
  await d?.app.close();
});

const NAME_RULE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

describe('the new root’s name', () => {
  it('is proposed valid beside a hidden root: no leading dot', () => {
    const proposed = d.adoptions.proposeName('sample');
    expect(proposed).toBe('loopx-sample-sample-recovered');
    expect(proposed).toMatch(NAME_RULE);
  });

  it('a refused name is told the actual rule', async () => {
    const r = await d.app.inject({
      method: 'POST',
      url: `/api/audits/${'0'.repeat(64)}/recoveries`,
      headers: AUTH,
      payload: { goal_id: 'sample', destination_name: '.hidden' },
    });
    expect(r.statusCode).toBe(400);
    expect(r.json().error).toMatchObject({
      code: 'daemon_destination_name_invalid',
      message: expect.stringContaining('starting with a letter or digit'),
    });
  });

  it("the form's pattern compiles as browsers compile it (the v flag) and agrees with the daemon", () => {
    const source = readFileSync(join(REPO, 'ui/src/RecoveryView.tsx'), 'utf8');
    const pattern = /pattern="([^"]+)"/.exec(source)![1]!;
    const input = new RegExp(`^(?:${pattern})$`, 'v');
    for (const name of ['launch-recovered', 'a', 'x.y_z-1', 'A'.repeat(64)]) expect(input.test(name), name).toBe(true);
    for (const name of ['.loopx-sample-recovered', '-x', 'a/b', '', 'A'.repeat(65), 'a b'])
      expect(input.test(name), name).toBe(false);
  });
});
