/**
 * The audit page in the operator's terms, end to end in headless Chromium against a real daemon:
 * a backup of real Goal work (a Goal with three Todos, a run that delivered a webhook to a real
 * receiver) verified twice — in place and as an upload. The audit page opens with what the backup
 * holds: the Goal by its id and title, its Todos by status, its committed history, its runs and its
 * effects, each row with classification, owner and next action, and where the inert workspace lies
 * with the command that reads it. At 375 px the tables reflow: owner and next action stay on the
 * screen. The backup page lists the audits newest first by when they were made and from where.
 */
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type RunningDaemon } from '../../src/daemon/index.js';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';
import { axeViolations } from './support/axe.js';
import { SCREENSHOTS, buildUi } from './support/ui.js';
import { hasChromium, launchBrowser, type BrowserSession } from './support/browser.js';

const AUTHORITY_DIR = join(STATE_HOME, 'loopx', 'run-authority');
const TITLE = 'Ship the launch post';
const shot = (name: string) => session.page.screenshot({ path: join(SCREENSHOTS, name), fullPage: true });

let sink: WebhookSink;
let root: string;
let uiDir: string;
let daemon: RunningDaemon;
let session: BrowserSession;
let inPlace: string;
let uploaded: string;

const api = (method: string, path: string, init: RequestInit = {}) =>
  fetch(`${daemon.url}${path.replace(/^\//, '')}`, {
    method,
    ...init,
    headers: { authorization: `Bearer ${daemon.token}`, ...(init.headers ?? {}) },
  });

/** Follow a verify job to its end; its audit's recovery id. */
async function auditOf(jobId: string): Promise<string> {
  await (await api('GET', `/api/backups/jobs/${jobId}/events`)).text();
  const job = (await (await api('GET', `/api/backups/jobs/${jobId}`)).json()) as { state: string; recovery_id: string };
  expect(job.state).toBe('held');
  return job.recovery_id;
}

async function verifyBoth(): Promise<void> {
  inPlace = await auditOf(((await (await api('POST', '/api/backups/a1/verify')).json()) as { job_id: string }).job_id);
  const { upload_id } = (await (await api('POST', '/api/backups/uploads')).json()) as { upload_id: string };
  for (const [part, file] of [
    ['archive', 'a1.tar.gz'],
    ['manifest', 'a1.manifest.json'],
  ] as const) {
    const r = await api('PUT', `/api/backups/uploads/${upload_id}/${part}`, {
      headers: { 'content-type': 'application/octet-stream' },
      body: readFileSync(join(root, 'backups', file)),
    });
    expect(r.status).toBe(200);
  }
  uploaded = await auditOf(
    ((await (await api('POST', `/api/backups/uploads/${upload_id}/verify`)).json()) as { job_id: string }).job_id,
  );
}

/** Every holdings row's owner and next action lie inside the viewport's width (reflowed, not scrolled away). */
async function ownerAndNextActionOnScreen(width: number): Promise<void> {
  const rows = session.page.getByTestId('contents-goal-launch').locator('tbody tr[data-testid^="holding-"]');
  expect(await rows.count()).toBe(6);
  for (const cell of ['holding-owner', 'holding-next-action']) {
    const boxes = await rows
      .getByTestId(cell)
      .evaluateAll((els) =>
        els.map((el) => el.getBoundingClientRect()).map((r) => ({ left: r.left, right: r.right, width: r.width })),
      );
    expect(boxes).toHaveLength(6);
    for (const b of boxes) {
      expect(b.width, cell).toBeGreaterThan(0);
      expect(b.left, cell).toBeGreaterThanOrEqual(0);
      expect(b.right, cell).toBeLessThanOrEqual(width);
    }
  }
}

if (process.env.CI === 'true' && !hasChromium())
  throw new Error("CI=true but no chromium binary: install Debian's chromium (.ci/run does)");
describe.skipIf(!hasChromium())('the audit page in the operator’s terms', () => {
  beforeAll(async () => {
    sink = await startWebhookSink({ port: 0 });
    root = tempRoot('loopx-e2e-audit-');
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    expect((await loopxAsync(['goal', 'create', 'launch', '--title', TITLE, '--root', root])).status).toBe(0);
    for (const title of ['Draft the outline', 'Review with design', 'Publish the post'])
      expect((await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', title, '--root', root])).status).toBe(0);
    const run = await loopxAsync([
      'work',
      'run',
      '--goal',
      'launch',
      '--agent',
      'examples/agents/goal-worker.json',
      '--sink',
      sink.deliveriesUrl,
      '--root',
      root,
    ]);
    expect(run.status, run.stderr).toBe(0);
    expect(
      (await loopxAsync(['backup-state', '--execute', '--profile', 'quiescent', '--backup-id', 'a1', '--root', root]))
        .status,
    ).toBe(0);

    uiDir = await buildUi();
    daemon = await startDaemon({ root, port: 0, uiDir, authorityDir: AUTHORITY_DIR, logger: false });
    await verifyBoth();
    session = await launchBrowser();
    await session.page.goto(daemon.loginUrl);
    await session.page.getByRole('heading', { level: 1, name: 'Backup & recovery' }).waitFor();
  }, 240_000);

  afterAll(async () => {
    await session?.close();
    await daemon?.close();
    await sink?.close();
    for (const dir of [uiDir, root && dirname(root)]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('opens with what the backup holds: the Goal by its title, its Todos, history, runs and effects, each with classification, owner and next action', async () => {
    const { page } = session;
    await page.goto(`${daemon.url}#/settings/capability-center/backup/audits/${inPlace}`);
    const goal = page.getByTestId('contents-goal-launch');
    await goal.waitFor();
    // The page leads with its verdict and the recovery form; what the backup holds comes right after.
    await page.getByTestId('audit-verdict').waitFor();
    expect((await page.locator('main h2').allTextContents()).slice(0, 3)).toEqual([
      'Verdict',
      'Recover a Goal into a new root',
      'What this backup holds',
    ]);
    expect(await goal.getByRole('heading', { level: 3 }).textContent()).toBe(`Goal launch: ${TITLE}`);
    const found = async (item: string) =>
      goal.getByTestId(`holding-${item}`).getByTestId('holding-found').textContent();
    expect(await found('goal')).toBe('active');
    expect(await found('todos')).toBe('3: 1 open, 1 blocked, 1 done');
    expect(await found('history')).toMatch(/^\d+ transactions$/);
    expect(await found('runs')).toBe('1: 1 completed');
    expect(await found('effects')).toBe('3: 3 committed');
    const owners = await goal.getByTestId('holding-owner').allTextContents();
    expect(owners).toEqual(['goal', 'work', 'work', 'session', 'engine', 'effect']);
    expect(await goal.getByTestId('holding-todos').textContent()).toContain('recovered and readable');
    expect(await goal.getByTestId('holding-effects').textContent()).toContain('historical only');
    // The session the run was bound to is held: its next action is the hold's.
    const held = await goal.getByTestId('holding-sessions').getByTestId('holding-next-action').textContent();
    expect(held).toContain('session_binding_historical');
    expect(held).toContain('readmit the session');
    for (const text of await goal.getByTestId('holding-next-action').allTextContents())
      expect(text.length).toBeGreaterThan(10);
    expect(await goal.getByTestId('contents-run').textContent()).toContain('demo.goal-worker');
    const effects = await goal.getByTestId('contents-effect').allTextContents();
    expect(effects).toHaveLength(3);
    expect(effects.join('\n')).toContain('webhook.deliver');
    // Where the workspace lies, relative to the root, and how to read it without changing it; no absolute path on the page.
    expect(await page.getByTestId('workspace-directory').textContent()).toMatch(
      /^daemon\/recoveries\/job_[0-9a-f]{32}\/workspace$/,
    );
    expect(await page.getByTestId('workspace-command').textContent()).toMatch(
      /^loopx backup-state workspace ls daemon\/recoveries\/job_[0-9a-f]{32}$/,
    );
    expect(await page.getByTestId('audit-source').textContent()).toContain('backup a1 of this root');
    const text = (await page.locator('main').textContent()) ?? '';
    expect(text).not.toContain(dirname(root));
    // The components below are named by owner and what they belong to, beside their ids.
    const work = page.getByTestId('audit-component-row').filter({ hasText: 'Goal launch: work' });
    expect(await work.getByRole('rowheader').textContent()).toContain(TITLE);
    await shot('audit-page-contents.png');
    expect(await axeViolations(page), 'the audit page at full width').toEqual([]);
  });

  it('at 375 px the tables reflow: owner and next action stay on the screen', async () => {
    const { page } = session;
    await ownerAndNextActionOnScreen(1280);
    await page.setViewportSize({ width: 375, height: 800 });
    try {
      await ownerAndNextActionOnScreen(375);
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
      // Each reflowed cell still names its column.
      // A string, evaluated in the page: this file is compiled without the DOM's types.
      const label = await page.evaluate<string>(
        `getComputedStyle(document.querySelector('[data-testid="contents-goal-launch"] [data-testid="holding-owner"]'), '::before').content`,
      );
      expect(label).toContain('Owner');
      await shot('audit-page-contents-narrow.png');
      expect(await axeViolations(page), 'the audit page at 375 px').toEqual([]);
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it('lists the audits newest first by when they were made, with their source, Goals and state, each linking to its page', async () => {
    const { page } = session;
    await page.goto(`${daemon.url}#/settings/capability-center/backup`);
    const rows = page.getByTestId('audit-list-row');
    await expect.poll(() => rows.count()).toBe(2);
    expect(await rows.getByTestId('audit-list-source').allTextContents()).toEqual([
      expect.stringContaining('uploaded backup a1'),
      expect.stringContaining('backup a1 of this root'),
    ]);
    expect(await rows.getByTestId('audit-list-goals').allTextContents()).toEqual(['1', '1']);
    const made = await rows.locator('th time').evaluateAll((els) => els.map((el) => el.getAttribute('datetime') ?? ''));
    expect(made[0]! >= made[1]!).toBe(true);
    expect(await rows.first().textContent()).toContain('held');
    expect(await axeViolations(page), 'the backup page’s audit list').toEqual([]);
    await page.setViewportSize({ width: 375, height: 800 });
    try {
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
      expect(await axeViolations(page), 'the backup page’s audit list at 375 px').toEqual([]);
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
    await page.getByRole('link', { name: `Open audit ${uploaded.slice(0, 12)}… of backup a1` }).click();
    await page.getByTestId('contents-goal-launch').waitFor();
    expect(await page.getByTestId('audit-source').textContent()).toContain('uploaded backup a1');
  });
});
