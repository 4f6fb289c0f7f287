/**
 * A run page that stays live, end to end in headless Chromium against a real daemon, on runs made
 * by the real CLI: a run driven by a CLI child process while its page is open shows its new events
 * — each a sentence of its timeline — and its new status without a reload (the newest event in
 * view, the focus left where it was); its
 * question is answered on the page and the run goes on to its end, after which the page no longer
 * says it follows; Resume is disabled on the waiting run with its reason shown; an uncertain call is
 * resolved on the page with its evidence shown, after a deliberate confirmation; a run suspended by
 * a CLI process shows as suspended without a reload, and is cancelled on the page after a
 * confirmation. Every disabled control is described by its reason; axe at full width and at 375 px.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type RunningDaemon } from '../../src/daemon/index.js';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { FAULT_AFTER_MUTATING_DISPATCH, FAULT_AFTER_QUOTA_DEBIT } from '../../src/engine/index.js';
import { STATE_HOME, cliFromSources, loopxAsync, tempRoot } from '../support/cli.js';
import { axeViolations } from './support/axe.js';
import { SCREENSHOTS, buildUi } from './support/ui.js';
import { hasChromium, launchBrowser, type BrowserSession } from './support/browser.js';

// The daemon's in-process engine continues runs CLI children started, and the other way round.
cliFromSources();

const AUTHORITY_DIR = join(STATE_HOME, 'loopx', 'run-authority');
const shot = (name: string) => session.page.screenshot({ path: join(SCREENSHOTS, name), fullPage: true });
/** A generous bound for what a CLI child or the daemon does on a loaded 2-core box. */
const BOUND_MS = 60_000;

let sink: WebhookSink;
let root: string;
let uiDir: string;
let daemon: RunningDaemon;
let session: BrowserSession;
/** A researcher suspended after its first turn; a mutator whose call was dispatched when it was killed; Goal work killed at a turn boundary. */
const runs = { driven: '', uncertain: '', goalWork: '' };

const cli = async (args: string[], env: Record<string, string> = {}) => {
  const r = await loopxAsync([...args, '--root', root, '--json'], env);
  if (!env.LOOPX_TEST_FAULT) expect(r.status, r.stderr).toBe(0);
  else expect(r.signal, r.stderr).toBe('SIGKILL');
  return r;
};
const runOf = async (definition: string): Promise<string> =>
  (
    (await loopxAsync(['run', 'list', '--root', root, '--json'])).json().runs as {
      run_id: string;
      definition: { id: string };
    }[]
  ).find((r) => r.definition.id === definition)!.run_id;
const lastSequence = async (id: string): Promise<number> =>
  (await loopxAsync(['run', 'show', id, '--root', root, '--json'])).json().last_sequence as number;

/** Open a run's page (signed in) and mark the document, so a reload would show. */
async function openRun(page: Page, runId: string): Promise<void> {
  await page.goto(`${daemon.url}#/runs/${runId}`);
  await page.getByRole('heading', { level: 1, name: `Run ${runId}` }).waitFor();
  await page.evaluate('window.__sameDocument = true');
}
const sameDocument = (page: Page) => page.evaluate('window.__sameDocument === true');
/** The sentences of the run's timeline, in sequence order. */
const sentences = (page: Page) => page.getByTestId('run-event-text').allTextContents();

/** Every disabled button is described (aria-describedby) by visible, non-empty text saying why. */
async function undescribedDisabledButtons(page: Page): Promise<string[]> {
  return (await page.evaluate(`[...document.querySelectorAll('button:disabled')]
    .filter((b) => {
      const why = document.getElementById(b.getAttribute('aria-describedby') ?? '');
      return !why || why.textContent.trim() === '' || why.offsetParent === null;
    })
    .map((b) => b.textContent)`)) as string[];
}
/** The reason a control is disabled, as its description says it. */
async function whyDisabled(page: Page, name: string): Promise<string | null> {
  const button = page.getByRole('button', { name, exact: true });
  expect(await button.isDisabled(), `${name} is disabled`).toBe(true);
  const id = await button.getAttribute('aria-describedby');
  return id ? page.locator(`[id="${id}"]`).textContent() : null;
}
/** axe at full width and at 375 px (a screenshot of each when `name` is given). */
async function accessibleAtBothWidths(page: Page, what: string, name?: string): Promise<void> {
  expect(await axeViolations(page), `${what} at full width`).toEqual([]);
  if (name) await shot(`${name}.png`);
  await page.setViewportSize({ width: 375, height: 800 });
  try {
    expect(await axeViolations(page), `${what} at 375 px`).toEqual([]);
    if (name) await shot(`${name}-375.png`);
    const overflow = (await page.evaluate(
      'document.documentElement.scrollWidth - document.documentElement.clientWidth',
    )) as number;
    expect(overflow, `${what}: nothing wider than the 375 px viewport`).toBeLessThanOrEqual(0);
  } finally {
    await page.setViewportSize({ width: 1280, height: 900 });
  }
}

if (process.env.CI === 'true' && !hasChromium())
  throw new Error("CI=true but no chromium binary: install Debian's chromium (.ci/run does)");
describe.skipIf(!hasChromium())('a live run page in a browser', () => {
  beforeAll(async () => {
    sink = await startWebhookSink({ port: 0 });
    root = tempRoot('loopx-e2e-live-');
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    expect(
      (await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', '--root', root])).status,
    ).toBe(0);
    for (const title of ['Draft the outline', 'Review with design'])
      expect((await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', title, '--root', root])).status).toBe(0);
    runs.driven = (
      await cli(['run', 'start', '--agent', 'examples/agents/researcher.json', '--suspend-after-turns', '1'])
    ).json().run_id as string;
    await cli(['run', 'start', '--agent', 'test/fixtures/agents/mutator.json'], {
      LOOPX_TEST_FAULT: FAULT_AFTER_MUTATING_DISPATCH,
    });
    runs.uncertain = await runOf('test.mutator');
    // Killed after its first turn, at the boundary: active, idle, driven by no one.
    await cli(
      ['work', 'run', '--goal', 'launch', '--agent', 'examples/agents/goal-worker.json', '--sink', sink.deliveriesUrl],
      { LOOPX_TEST_FAULT: FAULT_AFTER_QUOTA_DEBIT },
    );
    runs.goalWork = await runOf('demo.goal-worker');

    uiDir = await buildUi();
    daemon = await startDaemon({ root, port: 0, uiDir, authorityDir: AUTHORITY_DIR, logger: false });
    mkdirSync(SCREENSHOTS, { recursive: true });
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

  it(
    'shows the events of a run a CLI process drives while the page is open, without a reload; the newest in view, the focus where it was',
    async () => {
      const { page } = session;
      await openRun(page, runs.driven);
      await page.getByTestId('run-status').filter({ hasText: 'suspended' }).waitFor();
      await page.getByTestId('run-follow-state').filter({ hasText: 'Following live' }).waitFor();
      await expect.poll(() => page.getByTestId('run-event').count()).toBe(await lastSequence(runs.driven));
      // Each event reads as a sentence of the run's timeline, its raw JSON behind its own disclosure.
      const first = await sentences(page);
      for (const line of [
        'Started demo.researcher@1.0.0 with scripted/scripted-v1, at most 6 turns',
        'Turn 1 started',
        'Called math.add (call t1/k0)',
        'math.add answered (call t1/k0)',
        'Turn 1 completed',
      ])
        expect(first).toContain(line);
      expect(first.at(-1)).toBe('Suspended at the turn boundary after 1 completed turn');
      expect(await page.getByTestId('run-event').locator('details > summary').count()).toBe(first.length);
      const focused = page.getByLabel('Turns to resume (optional)');
      await focused.focus();

      // Resumed from the command line, in another process: it runs on until it asks its question.
      expect((await cli(['run', 'resume', runs.driven])).json()).toMatchObject({
        status: 'active',
        waiting_for: { kind: 'interaction', interaction_id: 'confirm-1' },
      });
      const expected = await lastSequence(runs.driven);
      await expect.poll(() => page.getByTestId('run-event').count(), { timeout: BOUND_MS }).toBe(expected);
      expect(await page.getByTestId('run-event-text').last().textContent()).toBe(
        'Asked the operator: “Is 42 the answer you expected?” (interaction confirm-1)',
      );
      await page.getByTestId('run-status').filter({ hasText: 'waiting for an answer' }).waitFor();
      expect(await sameDocument(page), 'no reload').toBe(true);
      expect(
        await page.evaluate('document.activeElement === document.querySelector("input[type=number]")'),
        'the focus stays',
      ).toBe(true);
      // The newest event scrolled into the log's view.
      const log = (await page.getByTestId('run-event-log').boundingBox())!;
      const newest = (await page.getByTestId('run-event').last().boundingBox())!;
      expect(newest.y + newest.height).toBeLessThanOrEqual(log.y + log.height + 1);
      expect(newest.y).toBeGreaterThanOrEqual(log.y - 1);
      expect(await focused.isVisible()).toBe(true);
    },
    BOUND_MS * 2,
  );

  it(
    'disables Resume on the waiting run with its reason, and answers its question on the page; the finished run no longer says it follows',
    async () => {
      const { page } = session;
      expect(await whyDisabled(page, 'Resume')).toBe('Answer its question first.');
      expect(await page.getByTestId('run-question').textContent()).toContain('Is 42 the answer you expected?');
      expect(await undescribedDisabledButtons(page)).toEqual([]);
      await accessibleAtBothWidths(page, 'a run waiting for an answer', 'run-question');

      await page.getByRole('button', { name: 'Send the answer' }).click();
      await page.getByText('Write an answer first.').waitFor();
      await page.getByLabel('Your answer').fill('Yes, 42 is right.');
      // A reader who scrolled up the log stays where they are while the run's last events arrive.
      const logTop = () =>
        page.evaluate('document.querySelector(\'[data-testid="run-event-log"]\').scrollTop') as Promise<number>;
      await page.evaluate('document.querySelector(\'[data-testid="run-event-log"]\').scrollTop = 0');
      await page.evaluate('new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))'); // its scroll event handled
      await page.getByRole('button', { name: 'Send the answer' }).click();
      await page.getByTestId('run-status').filter({ hasText: 'completed' }).waitFor({ timeout: BOUND_MS });
      await page
        .getByTestId('run-follow-state')
        .filter({ hasText: 'Not following: the run has ended (completed)' })
        .waitFor();
      await expect
        .poll(() => page.getByTestId('run-event-text').last().textContent())
        .toBe('Completed after 4 completed turns: “The answer is 42, recorded and confirmed.”');
      expect(await sentences(page)).toContain('The operator answered (interaction confirm-1)');
      expect(await page.getByTestId('run-event').count()).toBe(await lastSequence(runs.driven));
      expect(await logTop(), 'the log stayed where the reader scrolled it').toBe(0);
      expect(
        await page.evaluate(
          '(() => { const l = document.querySelector(\'[data-testid="run-event-log"]\'); return l.scrollHeight > l.clientHeight; })()',
        ),
        'the log has more than its view',
      ).toBe(true);
      expect(await page.getByTestId('run-question').count()).toBe(0);
      expect(await whyDisabled(page, 'Resume')).toBe('The run has ended.');
      expect(await undescribedDisabledButtons(page)).toEqual([]);
      const shown = (await loopxAsync(['run', 'show', runs.driven, '--root', root, '--json'])).json();
      expect(shown).toMatchObject({ status: 'completed', waiting_for: null });
      expect(await sameDocument(page)).toBe(true);
    },
    BOUND_MS * 2,
  );

  it(
    'resolves an uncertain call on the page with its evidence shown, only after a deliberate confirmation',
    async () => {
      const { page } = session;
      await openRun(page, runs.uncertain);
      await page.getByTestId('run-status').filter({ hasText: 'waiting for a resolution' }).waitFor();
      const call = page.getByTestId('uncertain-call');
      expect(await call.count()).toBe(1);
      const evidence = (await call.getByTestId('call-evidence').textContent())!;
      for (const fact of [
        'outbox.append',
        'file:outbox.jsonl',
        '1 dispatch',
        'message',
        'dispatched, never settled',
        'intent → pending',
        'dispatch → pending',
      ])
        expect(evidence, fact).toContain(fact);
      // The arguments' values stay out of the page.
      expect(evidence).not.toContain('deliver once');
      expect(await whyDisabled(page, 'Resume')).toBe('Resolve its uncertain calls first.');
      const resolve = 'Resolve call t1/k0';
      expect(await whyDisabled(page, resolve)).toBe('Choose what happened first.');
      await call.getByLabel('It took effect (committed)').check();
      expect(await whyDisabled(page, resolve)).toBe('Give its result (JSON) first.');
      await call.getByLabel('Its result, as JSON').fill('{"delivered":true}');
      expect(await whyDisabled(page, resolve)).toBe('Confirm that you checked the evidence first.');
      expect(await undescribedDisabledButtons(page)).toEqual([]);
      await call.getByLabel(/I checked the receiver’s evidence/).check();
      await accessibleAtBothWidths(page, 'a run with an uncertain call', 'run-resolve');

      await page.getByRole('button', { name: resolve, exact: true }).click();
      await page.getByTestId('run-status').filter({ hasText: 'completed' }).waitFor({ timeout: BOUND_MS });
      await page.getByTestId('run-action-note').filter({ hasText: 'Resolved call t1/k0 as committed' }).waitFor();
      expect(await page.getByTestId('uncertain-call').count()).toBe(0);
      // The timeline says who settled the call and how; nothing of the call's arguments is on it.
      await expect
        .poll(() => sentences(page))
        .toContain('Settled by the operator: outbox.append (call t1/k0) committed: it took effect');
      expect(await sentences(page)).toContain(
        'Outcome unknown: outbox.append (call t1/k0) — it is not run again; it waits for you to settle it',
      );
      expect(await page.getByTestId('run-event-log').textContent()).not.toContain('deliver once');
      const events = (await loopxAsync(['run', 'events', runs.uncertain, '--root', root, '--json'])).stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { type: string; data: Record<string, unknown> });
      expect(
        events
          .filter((e) => e.type === 'ToolResulted' && e.data.call_id === `${runs.uncertain}/t1/k0`)
          .map((e) => e.data.resolution),
      ).toEqual([undefined, 'committed']);
    },
    BOUND_MS * 2,
  );

  it(
    'shows a run suspended by a CLI process as suspended without a reload, and cancels it on the page after a confirmation',
    async () => {
      const { page } = session;
      await openRun(page, runs.goalWork);
      await page.getByTestId('run-status').filter({ hasText: 'active' }).waitFor();
      await page.getByTestId('run-follow-state').filter({ hasText: 'Following live' }).waitFor();

      expect((await cli(['run', 'suspend', runs.goalWork])).json()).toMatchObject({ status: 'suspended' });
      await page.getByTestId('run-status').filter({ hasText: 'suspended' }).waitFor({ timeout: BOUND_MS });
      await expect
        .poll(() => page.getByTestId('run-event-text').last().textContent())
        .toMatch(/^Suspended at the turn boundary after \d+ completed turns?$/);
      expect(await sameDocument(page), 'no reload').toBe(true);
      expect(await whyDisabled(page, 'Suspend')).toBe('It is suspended.');

      await page.getByRole('button', { name: 'Cancel the run…' }).click();
      const confirm = page.getByRole('group', { name: 'Confirm the cancel' });
      expect(await confirm.textContent()).toContain('It ends for good');
      await accessibleAtBothWidths(page, 'the cancel confirmation', 'run-cancel');
      await confirm.getByRole('button', { name: 'Keep the run' }).click();
      expect(await page.getByTestId('run-status').textContent()).toContain('suspended');
      await page.getByRole('button', { name: 'Cancel the run…' }).click();
      await page.getByRole('button', { name: 'Yes, cancel the run' }).click();
      await page.getByTestId('run-status').filter({ hasText: 'cancelled' }).waitFor({ timeout: BOUND_MS });
      await page
        .getByTestId('run-follow-state')
        .filter({ hasText: 'Not following: the run has ended (cancelled)' })
        .waitFor();
      await expect
        .poll(() => page.getByTestId('run-event-text').last().textContent())
        .toMatch(/^Cancelled after \d+ completed turns?$/);
      expect(await whyDisabled(page, 'Cancel the run…')).toBe('The run has ended.');
      expect(await undescribedDisabledButtons(page)).toEqual([]);
      expect((await loopxAsync(['run', 'show', runs.goalWork, '--root', root, '--json'])).json()).toMatchObject({
        status: 'cancelled',
      });
      await accessibleAtBothWidths(page, 'a cancelled run');
    },
    BOUND_MS * 2,
  );
});
