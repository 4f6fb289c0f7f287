/**
 * The newcomer's journey, walked in headless Chromium exactly as docs/capability-center.md tells it
 * ("The whole journey"), against real `loopx daemon` processes:
 *   1. `loopx daemon --seed-sample` on a fresh root (what `npm start` runs): sign in; the sample Goal
 *      has done and open Todos and a delivery at the dev receiver (a fixed loopback port, its journal
 *      in the state home);
 *   2. Back up now from the UI, into the user's backups folder, with the same-file-system warning;
 *   3. the disaster: the daemon stops, the root is moved aside, and `loopx daemon` (no sample) starts
 *      on a new, empty root — the only non-browser actions after start-up — and the browser signs in again;
 *   4. pick the backup, verify, read the audit: a plain verdict first, the recovery form near the top;
 *   5. recover the Goal into a new root: a valid proposed name, a preview with counts, confirm, follow;
 *   6. any hold is settled from its control, with its progress and result;
 *   7. continue the Goal with `demo.goal-finisher` from the recovered Goal's page until no Todo is open;
 *   8. the result where the journey began: Todos done under the new lifetime, the delivery counted once.
 * Every next action the journey meets is a control or a route; it ends with the receiver holding
 * exactly one delivery per operation id. Then, as a check rather than a step, the old root moved back
 * shows its Goal superseded (in `goal show`, and on a daemon's page of that root). Each step's screen
 * is kept in docs/screenshots/journey-*.png (LOOPX_SCREENSHOTS=1).
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon } from '../../src/daemon/index.js';
import { loopxAsync } from '../support/cli.js';
import { freePort, spawnDaemon, stopDaemonProcess, type DaemonStarted } from '../support/daemon-process.js';
import { axeViolations } from './support/axe.js';
import { hasChromium, launchBrowser, type BrowserSession } from './support/browser.js';
import { SCREENSHOTS, buildUi } from './support/ui.js';

let home: string;
let env: NodeJS.ProcessEnv;
let uiDir: string;
let session: BrowserSession;
let daemon: { child: ChildProcessWithoutNullStreams; doc: DaemonStarted } | undefined;
let receiverUrl: string;

const shot = (name: string) => session.page.screenshot({ path: join(SCREENSHOTS, name), fullPage: true });

/** `loopx daemon --json …` as an operator starts it, in the temporary home. */
const startLoopxDaemon = (args: string[]) => spawnDaemon(args, { env, cwd: home });

async function stopDaemon(): Promise<void> {
  const d = daemon;
  daemon = undefined;
  if (!d) return;
  await stopDaemonProcess(d.child);
}

const receiverDeliveries = async () =>
  ((await (await fetch(receiverUrl)).json()) as { deliveries: { operation_id: string; idempotency_key: string }[] })
    .deliveries;

if (process.env.CI === 'true' && !hasChromium())
  throw new Error("CI=true but no chromium binary: install Debian's chromium (.ci/run does)");
describe.skipIf(!hasChromium())('the newcomer’s journey in the Capability Center', () => {
  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'loopx-journey-'));
    uiDir = await buildUi();
    env = {
      ...process.env,
      HOME: home,
      XDG_STATE_HOME: join(home, '.local', 'state'),
      XDG_DATA_HOME: join(home, '.local', 'share'),
      LOOPX_DEV_RECEIVER_PORT: String(await freePort()),
      LOOPX_UI_DIR: uiDir,
    };
    mkdirSync(SCREENSHOTS, { recursive: true });
    session = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await session?.close();
    await stopDaemon();
    rmSync(uiDir, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  });

  it('1. starts on a fresh root with the sample Goal: done and open Todos, and its delivery at the dev receiver', async () => {
    daemon = await startLoopxDaemon(['--seed-sample', '--root', join(home, '.loopx')]);
    receiverUrl = daemon.doc.dev_receiver_url!;
    expect(receiverUrl).toBe(`http://127.0.0.1:${env.LOOPX_DEV_RECEIVER_PORT}/deliveries`);
    expect(await receiverDeliveries()).toHaveLength(1);
    const { page } = session;
    await page.goto(daemon.doc.login_url);
    await page.getByRole('heading', { level: 1, name: 'Backup & recovery' }).waitFor();
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Goals' }).click();
    await page.getByRole('link', { name: 'sample' }).click();
    await expect
      .poll(() => page.getByTestId('goal-counts').textContent())
      .toBe('1 open, 1 done, 1 blocked, 0 deferred');
    await expect
      .poll(() => page.getByTestId('goal-effects').locator('tbody tr').filter({ hasText: 'webhook.deliver' }).count())
      .toBe(1);
    expect(await axeViolations(page), 'the sample Goal').toEqual([]);
    await shot('journey-1-sample.png');
  }, 120_000);

  it('2. backs up from the UI into the user backups folder, and says it shares the root’s file system', async () => {
    const { page } = session;
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Backup & recovery' }).click();
    const section = page.getByTestId('backup-now');
    expect(await section.getByLabel('Capture profile').inputValue()).toBe('quiescent');
    expect(await section.getByLabel('Destination').inputValue()).toBe('user');
    await section.getByRole('button', { name: 'Back up now' }).click();
    await expect
      .poll(() => page.getByTestId('backup-now-result').textContent(), { timeout: 60_000 })
      .toContain('Backed up:');
    expect(await page.getByTestId('backup-now-warning').textContent()).toContain(
      'same file system as the root it protects',
    );
    expect(await page.getByTestId('backup-now-warning').textContent()).toContain(
      'loopx backup-state --execute --output-dir DIR',
    );
    expect(await axeViolations(page), 'the backup page after Back up now').toEqual([]);
    await shot('journey-2-backed-up.png');
  }, 120_000);

  it('3. loses the root: the daemon stops, the root moves aside, and a daemon starts on a new, empty root; the browser signs in again', async () => {
    await stopDaemon();
    renameSync(join(home, '.loopx'), join(home, 'lost-root'));
    mkdirSync(join(home, 'replacement'), { mode: 0o700 });
    daemon = await startLoopxDaemon(['--root', join(home, 'replacement')]);
    expect(daemon.doc.dev_receiver_url).toBe(receiverUrl); // reopened, with what it held
    expect(await receiverDeliveries()).toHaveLength(1);
    const { page } = session;
    await page.goto(daemon.doc.url);
    await page.getByRole('heading', { level: 1, name: 'Open loopx from its daemon' }).waitFor();
    await page.goto(daemon.doc.login_url);
    await page.getByRole('heading', { level: 1, name: 'Backup & recovery' }).waitFor();
  }, 60_000);

  it('4. picks the backup, verifies it and reads a plain verdict, with the recovery form near the top', async () => {
    const { page } = session;
    const pick = page.getByLabel('Or pick a backup made on this machine');
    await expect.poll(() => pick.locator('option').count()).toBe(2);
    const option = pick.locator('option').nth(1);
    expect(await option.textContent()).toContain('in your backups folder');
    await pick.selectOption((await option.getAttribute('value'))!);
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('heading', { level: 1, name: /^Audit of backup / }).waitFor({ timeout: 60_000 });
    const verdict = page.getByTestId('audit-verdict').locator('p').first();
    await expect
      .poll(() => verdict.textContent())
      .toMatch(/^Recoverable: 1 Goal eligible; \d+ holds? that recovery settles itself\.$/);
    // Its one action is a control: the recovery form, right under it.
    expect(
      await page.getByTestId('audit-verdict').getByRole('link', { name: 'Recover a Goal into a new root' }).isVisible(),
    ).toBe(true);
    expect(await page.getByTestId('audit-status').textContent()).toContain('held');
    const box = await page.getByTestId('recover-section').boundingBox();
    expect(box!.y, 'the recovery form sits near the top of the audit page').toBeLessThan(900);
    expect(await axeViolations(page), 'the audit page').toEqual([]);
    await shot('journey-3-audit.png');
  }, 120_000);

  it('5. recovers the Goal into a new root: a valid proposed name, a preview with counts, confirmed and followed', async () => {
    const { page } = session;
    const form = page.getByTestId('recover-goal-sample');
    const name = form.getByLabel('New root (a new directory beside this daemon’s root)');
    await expect.poll(() => name.inputValue()).toBe('replacement-sample-recovered');
    expect(await name.evaluate((el) => (el as unknown as { checkValidity(): boolean }).checkValidity())).toBe(true);
    await form.getByRole('button', { name: 'Preview the recovery' }).click();
    await page.getByRole('heading', { level: 1, name: 'Recovery of Goal sample' }).waitFor();
    const preview = await page.getByTestId('recovery-preview').textContent();
    expect(preview).toContain('Todos: 1 done, 1 blocked, 1 open');
    expect(preview).toMatch(/1 session and their turn journals/);
    expect(preview).toMatch(/the effect journal: \d+ effects of this Goal \(\d+ committed\), never sent again/);
    expect(preview).not.toMatch(/\b(\w+) \(\1\)/); // never "effect (effect)"
    await shot('journey-4-preview.png');
    await page.getByLabel(/I have read the preview/).check();
    await page.getByRole('button', { name: 'Confirm and recover' }).click();
    await expect
      .poll(() => page.getByTestId('recovery-state').textContent(), { timeout: 60_000 })
      .toMatch(/complete|held/);
    expect(await page.getByTestId('recovery-timing').textContent()).toMatch(/^the apply took \d+\.\d s/);
    expect(await axeViolations(page), 'the recovery after its apply').toEqual([]);
    await shot('journey-5-recovered.png');
  }, 120_000);

  it('6. settles any hold from its control, showing what it is doing and what came of it, until the recovery is complete', async () => {
    const { page } = session;
    for (let i = 0; i < 5 && !(await page.getByTestId('recovery-state').textContent())!.includes('complete'); i++) {
      const ask = page.getByRole('button', { name: 'Ask again and settle' }).first();
      await ask.click();
      await expect
        .poll(() => page.getByTestId('hold-progress').textContent(), { timeout: 60_000 })
        .toMatch(/Settled|Still held/);
      await shot('journey-6-hold-settled.png');
    }
    await expect.poll(() => page.getByTestId('recovery-state').textContent()).toContain('complete');
    expect(await page.getByTestId('recovery-timing').textContent()).toMatch(/^the apply took \d+\.\d s/);
  }, 180_000);

  it('7. continues the Goal with demo.goal-finisher from its page, until no Todo is open', async () => {
    const { page } = session;
    // The complete recovery's own link (the Goals page lists it too, under the new root's name).
    await page.getByRole('link', { name: 'Continue Goal sample in replacement-sample-recovered' }).click();
    await expect.poll(() => page.getByTestId('goal-lineage').textContent()).toContain('Recovered from backup');
    await expect.poll(() => page.getByLabel('Agent').inputValue()).toBe('demo.goal-finisher');
    await page.getByRole('button', { name: 'Start a work run' }).click();
    await expect.poll(() => page.url()).toContain('#/roots/replacement-sample-recovered/runs/run_');
    await expect.poll(() => page.getByTestId('run-status').textContent(), { timeout: 60_000 }).toContain('completed');
    // The status can read completed before the event stream has connected and replayed.
    await expect.poll(() => page.locator('main').textContent(), { timeout: 30_000 }).toContain('Marked 2 Todos done');
    expect(await axeViolations(page), 'the finished run').toEqual([]);
    await shot('journey-7-run.png');
  }, 120_000);

  it('8. shows the result where the journey began: every Todo done under the new lifetime, the delivery counted once', async () => {
    const { page } = session;
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Goals' }).click();
    const table = page.getByTestId('goals-table-replacement-sample-recovered');
    await expect.poll(() => table.textContent()).toContain('Ship the launch post');
    await table.getByRole('link', { name: 'sample' }).click();
    await expect
      .poll(() => page.getByTestId('goal-counts').textContent(), { timeout: 30_000 })
      .toBe('0 open, 3 done, 0 blocked, 0 deferred');
    // The one delivery of the lost root, counted once under the new lifetime (beside the Todo updates).
    const deliveriesShown = page.getByTestId('goal-effects').locator('tbody tr').filter({ hasText: 'webhook' });
    await expect.poll(() => deliveriesShown.count()).toBe(1);
    expect(await deliveriesShown.first().getAttribute('data-outcome')).toBe('committed');
    expect(await axeViolations(page), 'the continued Goal').toEqual([]);
    await shot('journey-8-continued.png');
    const deliveries = await receiverDeliveries();
    expect(deliveries).toHaveLength(1);
    expect(new Set(deliveries.map((d) => d.operation_id)).size).toBe(deliveries.length);
  }, 60_000);

  it('(check) the old root, moved back, shows its Goal superseded by the recovery: in goal show and on its page', async () => {
    await stopDaemon();
    renameSync(join(home, 'lost-root'), join(home, '.loopx'));
    const shown = await loopxAsync(['goal', 'show', 'sample', '--root', join(home, '.loopx')], {
      HOME: home,
      XDG_STATE_HOME: env.XDG_STATE_HOME!,
      XDG_DATA_HOME: env.XDG_DATA_HOME!,
    });
    expect(shown.stdout).toMatch(/superseded/i);
    expect(shown.stdout).toContain('replacement-sample-recovered');
    const old = await startDaemon({
      root: join(home, '.loopx'),
      port: 0,
      uiDir,
      authorityDir: join(env.XDG_STATE_HOME!, 'loopx', 'run-authority'),
      logger: false,
    });
    try {
      const { page } = session;
      await page.goto(old.loginUrl);
      await page.getByRole('heading', { level: 1, name: 'Backup & recovery' }).waitFor();
      await page.goto(`${old.url}#/goals/sample`);
      await expect
        .poll(() => page.getByTestId('goal-superseded').textContent())
        .toContain('replacement-sample-recovered');
      // The recovered root lies beside this one: this daemon serves it, and the page links there.
      const link = page.getByRole('link', { name: 'Continue Goal sample in replacement-sample-recovered' });
      expect(await link.getAttribute('href')).toBe('#/roots/replacement-sample-recovered/goals/sample');
      expect(await page.getByRole('button', { name: 'Start a work run' }).isDisabled()).toBe(true);
      expect(await page.getByRole('button', { name: 'Add Todo' }).isDisabled()).toBe(true);
      expect(await axeViolations(page), 'the old root’s superseded Goal').toEqual([]);
      await shot('journey-9-old-root.png');
      await link.click();
      await expect
        .poll(() => page.getByTestId('goal-counts').textContent())
        .toBe('0 open, 3 done, 0 blocked, 0 deferred');
    } finally {
      await old.close();
    }
  }, 120_000);
});
