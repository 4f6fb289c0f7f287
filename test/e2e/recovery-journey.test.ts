/**
 * The recovery journey in the Capability Center, end to end in headless Chromium against a real
 * daemon: a backup made from real Goal work is verified, its audit page offers to recover the
 * Goal into a new root (a proposed name; an occupied one is refused on the page), the recovery
 * page shows the preview and the plan digest, recovers only after a deliberate confirmation, and
 * shows the result — read back from the daemon, so a reload shows it again. Then the Goals pages:
 * the list, a Goal worked from its page (a Todo added and done, the Goal paused), and the
 * recovered Goal's old lifetime shown as superseded — in the list, and on its page the root it
 * continues in with a link there, every control that would write disabled with the reason.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type RunningDaemon } from '../../src/daemon/index.js';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { REPO, STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';
import { axeViolations } from './support/axe.js';
import { contrastOf } from './support/contrast.js';
import { focusAfterChange, tabTo } from './support/keyboard.js';
import { SCREENSHOTS, buildUi } from './support/ui.js';
import { hasChromium, launchBrowser, type BrowserSession } from './support/browser.js';

const AUTHORITY_DIR = join(STATE_HOME, 'loopx', 'run-authority');
const shot = (name: string) => session.page.screenshot({ path: join(SCREENSHOTS, name), fullPage: true });

let sink: WebhookSink;
let root: string;
let uiDir: string;
let daemon: RunningDaemon;
let session: BrowserSession;
let auditId: string;
let agentsDir: string;

const FINISHER = {
  id: 'test.finisher',
  version: '1.0.0',
  model: { provider: 'scripted', model_id: 'scripted-v1' },
  turn_limit: 4,
  tool_plan: 'loopx.goal-work.v1',
  script: [
    {
      text: 'Publishing the post.',
      tool_calls: [{ name: 'todo.update', arguments: { todo_id: 't3', status: 'done', note: 'published' } }],
    },
    { text: 'Published.' },
  ],
};

const api = async (method: string, path: string): Promise<Record<string, unknown>> => {
  const res = await fetch(`${daemon.url}${path.replace(/^\//, '')}`, {
    method,
    headers: { authorization: `Bearer ${daemon.token}` },
  });
  return (await res.json()) as Record<string, unknown>;
};

if (process.env.CI === 'true' && !hasChromium())
  throw new Error("CI=true but no chromium binary: install Debian's chromium (.ci/run does)");
describe.skipIf(!hasChromium())('the recovery journey in a browser', () => {
  beforeAll(async () => {
    sink = await startWebhookSink({ port: 0 });
    root = tempRoot('loopx-e2e-recover-');
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    expect(
      (await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', '--root', root])).status,
    ).toBe(0);
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
      '--json',
    ]);
    expect(run.status, run.stderr).toBe(0);
    expect((await loopxAsync(['goal', 'create', 'notes', '--title', 'Keep the notes', '--root', root])).status).toBe(0);
    expect(
      (await loopxAsync(['backup-state', '--execute', '--profile', 'quiescent', '--backup-id', 'j1', '--root', root]))
        .status,
    ).toBe(0);

    uiDir = await buildUi();
    // The agents the Goal page offers: the shipped Goal worker, and one that finishes the Todo it leaves open.
    agentsDir = mkdtempSync(join(tmpdir(), 'loopx-e2e-agents-'));
    copyFileSync(join(REPO, 'examples', 'agents', 'goal-worker.json'), join(agentsDir, 'goal-worker.json'));
    writeFileSync(join(agentsDir, 'finisher.json'), JSON.stringify(FINISHER));
    daemon = await startDaemon({ root, port: 0, uiDir, agentsDir, authorityDir: AUTHORITY_DIR, logger: false });
    const job = (await api('POST', '/api/backups/j1/verify')) as { job_id: string };
    await fetch(`${daemon.url}api/backups/jobs/${job.job_id}/events`, {
      headers: { authorization: `Bearer ${daemon.token}` },
    }).then((r) => r.text());
    auditId = ((await api('GET', `/api/backups/jobs/${job.job_id}`)) as { recovery_id: string }).recovery_id;
    mkdirSync(SCREENSHOTS, { recursive: true });
    session = await launchBrowser();
  }, 240_000);

  afterAll(async () => {
    await session?.close();
    await daemon?.close();
    await sink?.close();
    for (const dir of [uiDir, agentsDir, root && dirname(root)]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('offers to recover the Goal from its audit, and refuses an occupied destination on the page', async () => {
    const { page } = session;
    await page.goto(daemon.loginUrl);
    await expect.poll(() => page.getByRole('heading', { level: 1, name: 'Backup & recovery' }).isVisible()).toBe(true);
    await page.goto(`${daemon.url}#/settings/capability-center/backup/audits/${auditId}`);
    const form = page.getByTestId('recover-goal-launch');
    const name = form.getByLabel('New root (a new directory beside this daemon’s root)');
    await expect.poll(() => name.inputValue()).toBe('root-launch-recovered');
    expect(await axeViolations(page), 'the audit page with its recovery form').toEqual([]);
    await page.getByTestId('recover-section').screenshot({ path: join(SCREENSHOTS, 'recovery-1-choose.png') });
    mkdirSync(join(dirname(root), 'occupied'), { mode: 0o700 });
    writeFileSync(join(dirname(root), 'occupied', 'keep.txt'), 'mine');
    await name.fill('occupied');
    await form.getByRole('button', { name: 'Preview the recovery' }).click();
    await expect.poll(() => form.textContent()).toContain('recover_destination_not_empty');
    await name.fill('root-launch-recovered');
    await form.getByRole('button', { name: 'Preview the recovery' }).click();
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Recovery of Goal launch' }).isVisible())
      .toBe(true);
  });

  it('shows the preview and the digest, recovers only after a deliberate confirmation, and shows the result after a reload', async () => {
    const { page } = session;
    expect(await page.getByTestId('recovery-state').textContent()).toContain('planned');
    expect(await page.getByTestId('recovery-preview').textContent()).toContain('Lost or unknown');
    expect(await page.getByTestId('plan-digest').textContent()).toMatch(/^[0-9a-f]{64}$/);
    expect(await axeViolations(page), 'the planned recovery').toEqual([]);
    await shot('recovery-2-preview.png');
    const confirm = page.getByRole('button', { name: 'Confirm and recover' });
    expect(await confirm.isDisabled()).toBe(true);
    await page.getByLabel(/I have read the preview/).check();
    await confirm.click();
    await expect
      .poll(() => page.getByTestId('recovery-state').textContent(), { timeout: 60_000 })
      .toContain('complete');
    expect(await page.getByTestId('recovery-result').textContent()).toContain('--root root-launch-recovered');
    await page.reload();
    await expect.poll(() => page.getByTestId('recovery-state').textContent()).toContain('complete');
    expect(await page.getByTestId('recovery-receipts').textContent()).toContain('effect:reconcile');
    expect(await page.getByTestId('recovery-elapsed').textContent()).toMatch(/^The apply took \d+\.\d s of the 60 s/);
    expect(await axeViolations(page), 'the complete recovery').toEqual([]);
    await shot('recovery-3-complete.png');
    // The new root beside the daemon's holds the Goal under its new lifetime.
    const shown = await loopxAsync([
      'goal',
      'show',
      'launch',
      '--root',
      join(dirname(root), 'root-launch-recovered'),
      '--json',
    ]);
    expect(shown.status, shown.stderr).toBe(0);
  }, 120_000);

  it('lists the Goals, and works one from its page: add a Todo, change its status, pause the Goal', async () => {
    const { page } = session;
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Goals' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1, name: 'Goals' }).isVisible()).toBe(true);
    expect(await page.getByTestId('goals-table').textContent()).toContain('Keep the notes');
    expect(await axeViolations(page), 'the Goals list').toEqual([]);
    await page.getByRole('link', { name: 'notes' }).click();
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Goal notes: Keep the notes' }).isVisible())
      .toBe(true);
    await page.getByLabel('New Todo').fill('Write it down');
    await page.getByRole('button', { name: 'Add Todo' }).click();
    await expect.poll(() => page.getByTestId('todo-t1').textContent()).toContain('Write it down');
    await page.getByLabel('New status of t1').selectOption('done');
    await page.getByRole('button', { name: 'Update t1' }).click();
    await expect.poll(() => page.getByTestId('todo-t1').locator('.todo-status').textContent()).toBe('done');
    await page.getByRole('button', { name: 'Pause the Goal' }).click();
    await expect.poll(() => page.getByTestId('goal-lifecycle').textContent()).toBe('paused');
    expect(await axeViolations(page), 'a Goal page').toEqual([]);
    await shot('goal-page.png');
    expect(await page.getByRole('button', { name: 'Pause the Goal' }).isDisabled()).toBe(true);
    const cli = await loopxAsync(['todo', 'list', '--goal', 'notes', '--root', root, '--json']);
    expect(cli.json().todos).toEqual([expect.objectContaining({ todo_id: 't1', status: 'done' })]);
  });

  it('works a Goal with the keyboard only: every stop named and visibly focused, focus kept where the change shows', async () => {
    const { page } = session;
    await page.goto(`${daemon.url}#/goals/notes`);
    await expect.poll(() => page.getByTestId('goal-lifecycle').textContent()).toBe('paused');
    await tabTo(page, 'Resume the Goal');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByTestId('goal-lifecycle').textContent()).toBe('active');
    expect((await focusAfterChange(page)).name, 'the disabled button hands its focus to the actions').toBe('Actions');
    await tabTo(page, 'New Todo');
    await page.keyboard.type('Tell the team');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByTestId('todo-t2').textContent()).toContain('Tell the team');
    await tabTo(page, 'New status of t2');
    await page.keyboard.press('ArrowDown');
    await tabTo(page, 'Update t2');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByTestId('todo-t2').locator('.todo-status').textContent()).toBe('done');
    expect((await focusAfterChange(page)).name, 'the replaced row hands its focus to the Todos').toBe('Todos');
    expect(
      (await loopxAsync(['todo', 'list', '--goal', 'notes', '--root', root, '--json'])).json().todos[1],
    ).toMatchObject({ todo_id: 't2', status: 'done' });
  });

  it('shows the recovered Goal’s old lifetime as superseded: the root it continues in with a link there, its controls disabled with the reason', async () => {
    const { page } = session;
    await page.goto(`${daemon.url}#/goals`);
    await expect.poll(() => page.getByTestId('goal-lifecycle-launch').first().textContent()).toBe('superseded');
    await page.goto(`${daemon.url}#/goals/launch`);
    await expect
      .poll(() => page.getByTestId('goal-superseded').textContent())
      .toContain('Superseded by the recovery into root-launch-recovered.');
    expect(await page.getByTestId('goal-lifecycle').textContent()).toBe('superseded (was active)');
    const link = page.getByRole('link', { name: 'Continue Goal launch in root-launch-recovered' });
    expect(await link.getAttribute('href')).toBe('#/roots/root-launch-recovered/goals/launch');
    // Nothing that would write is offered, and each control says why.
    const why =
      'A recovery superseded this lifetime: it takes no new work here. Continue the Goal in root-launch-recovered.';
    expect(await page.getByTestId('goal-superseded-why').textContent()).toBe(why);
    expect(await page.getByTestId('start-run-why').textContent()).toBe(why);
    for (const control of [
      page.getByLabel('New Todo'),
      page.getByRole('button', { name: 'Add Todo' }),
      page.getByRole('button', { name: 'Pause the Goal' }),
      page.getByRole('button', { name: 'Resume the Goal' }),
      page.getByRole('button', { name: 'Retire…' }),
      page.getByRole('button', { name: 'Start a work run' }),
      page.getByLabel('New status of t3'),
      page.getByRole('button', { name: 'Update t3' }),
    ]) {
      expect(await control.isDisabled()).toBe(true);
    }
    expect(await page.getByRole('button', { name: 'Add Todo' }).getAttribute('aria-describedby')).toBe(
      'goal-superseded-why',
    );
    expect(await page.getByRole('button', { name: 'Update t3' }).getAttribute('aria-describedby')).toBe(
      'goal-superseded-why',
    );
    expect(await page.getByTestId('goal-refusal').count()).toBe(0);
    expect(await axeViolations(page), 'a superseded Goal’s page').toEqual([]);
    await shot('goal-superseded.png');
    // The link leads to the Goal where it continues: live there, nothing superseded.
    await link.click();
    await expect.poll(() => page.url()).toContain('#/roots/root-launch-recovered/goals/launch');
    await expect.poll(() => page.getByTestId('goal-lineage').textContent()).toContain('Recovered from backup j1');
    expect(await page.getByTestId('goal-superseded').count()).toBe(0);
    expect(await page.getByTestId('goal-lifecycle').textContent()).toBe('active');
  });

  it('shows what happened to a Goal: its run, its effects with outcomes, no hold, its progress and its history in pages', async () => {
    const { page } = session;
    await page.goto(`${daemon.url}#/goals/launch`);
    await expect.poll(() => page.getByTestId('goal-runs').textContent()).toContain('completed');
    expect(await page.getByTestId('goal-effects').textContent()).toContain('webhook.deliver');
    expect(await page.getByTestId('goal-effects').locator('tr[data-outcome="committed"]').count()).toBe(3);
    expect(await page.getByTestId('goal-no-holds').isVisible()).toBe(true);
    // The progress and the history arrive in answers of their own.
    await expect
      .poll(() => page.getByTestId('goal-progress').textContent())
      .toMatch(/Now: 1 done, 1 blocked, 0 deferred, 1 open/);
    expect(await page.getByTestId('todo-t1').textContent()).toMatch(/#\d+ update todo/);
    await expect
      .poll(() => page.getByTestId('history-range').textContent())
      .toMatch(/^Transactions \d+–\d+ of \d+, newest last\.$/);
    expect(await page.getByRole('button', { name: 'Newer' }).isDisabled()).toBe(true);
    // Disabled controls stay readable (axe exempts them; WCAG's 4.5:1 is kept anyway).
    const disabled = await contrastOf(page, 'button:disabled');
    expect(disabled.length).toBeGreaterThan(0);
    for (const d of disabled) expect(d.ratio, `“${d.text}”`).toBeGreaterThanOrEqual(4.5);
    // The old lifetime takes no run: its recovery superseded it, and the page says so instead of offering one.
    expect(await page.getByRole('button', { name: 'Start a work run' }).isDisabled()).toBe(true);
    expect(await axeViolations(page), 'a worked Goal’s page').toEqual([]);
    await page.setViewportSize({ width: 375, height: 800 });
    expect(await axeViolations(page), 'a worked Goal’s page at 375 px').toEqual([]);
    // Reflowed, not hidden: every effect row still names its outcome on screen.
    expect(await page.getByTestId('goal-effects').locator('td[data-label="Outcome"]').first().isVisible()).toBe(true);
    expect(
      await page.evaluate<number>('document.documentElement.scrollWidth'),
      'nothing scrolls sideways at 375 px',
    ).toBeLessThanOrEqual(375);
    await shot('goal-page-375.png');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('sees the recovered Goal continue from the same Goals page: its backup and losses, a work run started there finishes the open Todo', async () => {
    const { page } = session;
    await page.goto(`${daemon.url}#/goals`);
    const table = page.getByTestId('goals-table-root-launch-recovered');
    await expect.poll(() => table.textContent()).toContain('Ship the launch post');
    await table.getByRole('link', { name: 'launch' }).click();
    await expect.poll(() => page.getByTestId('goal-lineage').textContent()).toContain('Recovered from backup j1');
    expect(await page.getByTestId('goal-lost').isVisible()).toBe(true);
    expect(await page.getByTestId('goal-counts').textContent()).toBe('1 open, 1 done, 1 blocked, 0 deferred');
    await page.getByLabel('Agent').selectOption('test.finisher');
    await page.getByRole('button', { name: 'Start a work run' }).click();
    await expect.poll(() => page.url()).toContain('#/roots/root-launch-recovered/runs/run_');
    // The run page follows the run in the recovered root until it ends.
    await expect.poll(() => page.getByTestId('run-status').textContent(), { timeout: 60_000 }).toContain('completed');
    await page.goto(`${daemon.url}#/roots/root-launch-recovered/goals/launch`);
    await expect
      .poll(() => page.getByTestId('todo-t3').locator('.todo-status').textContent(), { timeout: 60_000 })
      .toBe('done');
    expect(await page.getByTestId('goal-counts').textContent()).toBe('0 open, 2 done, 1 blocked, 0 deferred');
    await expect.poll(() => page.getByTestId('goal-runs').textContent()).toContain('completed');
    expect(await axeViolations(page), 'the recovered Goal’s page').toEqual([]);
    await shot('goal-recovered-continued.png');
    // The command line reads the same result in the new root.
    const cli = await loopxAsync([
      'todo',
      'list',
      '--goal',
      'launch',
      '--root',
      join(dirname(root), 'root-launch-recovered'),
      '--json',
    ]);
    expect(cli.json().todos.find((t: { todo_id: string }) => t.todo_id === 't3')).toMatchObject({
      status: 'done',
      note: 'published',
    });
  }, 120_000);

  it('keeps an audit whose workspace a live recovery came from: deleting it is refused on the page, after a confirmation', async () => {
    const { page } = session;
    await page.goto(`${daemon.url}#/settings/capability-center/backup/audits/${auditId}`);
    await page.getByRole('button', { name: 'Delete this audit…' }).click();
    await page.getByRole('button', { name: /^Delete audit / }).click();
    await expect.poll(() => page.getByTestId('delete-audit-refusal').textContent()).toContain('daemon_audit_in_use');
    expect(((await api('GET', `/api/audits/${auditId}`)) as { recovery_id: string }).recovery_id).toBe(auditId);
  });
});
