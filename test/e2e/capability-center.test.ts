/**
 * Settings ▸ Capability Center end to end: the UI built from ui/ (into a temporary directory, so
 * the test sees the current source), served by a real daemon on an ephemeral loopback port and
 * driven in headless Chromium. A backup made by `backup-state --execute` from a root with real
 * Goal work is uploaded and verified through the page; the audit opens with its held status, its
 * classified components, owners and next actions, and the permanent statement; a tampered archive
 * shows its typed refusal; the Runs page lists and follows a run; the workspace of a verified
 * backup of the seeded sample root is read back (Goal `sample`, its Todos and its committed
 * webhook effect) with GETs only. Screenshots of these screens
 * are saved into docs/screenshots/ when LOOPX_SCREENSHOTS=1 (else into a temporary directory).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type RunningDaemon } from '../../src/daemon/index.js';
import { seedSample } from '../../src/runtime/index.js';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';
import { axeViolations } from './support/axe.js';
import { SCREENSHOTS, buildUi } from './support/ui.js';
import { hasChromium, launchBrowser, type BrowserSession } from './support/browser.js';

// Screenshots go to docs/screenshots/ only when asked (LOOPX_SCREENSHOTS=1): an ordinary run
// leaves the tracked images alone and writes them to a private temporary directory.
const STATEMENT =
  'Verification checks bytes and structure only. It never grants execution authority: nothing restored here can run, and no Goal, lease, session or effect is resumed.';
const WORKSPACE_STATEMENT =
  'This workspace is inert evidence, read back without changing it. It grants no execution authority: no Goal, Todo, session, run or effect shown here can start, resume or be delivered again.';
const CLASSIFICATION_WORDS: Record<string, string> = {
  recovered_readable: 'recovered and readable',
  historical_only: 'historical only',
  unknown_unrecoverable: 'unknown or unrecoverable',
};

const AUTHORITY_DIR = join(STATE_HOME, 'loopx', 'run-authority');

let sink: WebhookSink;
let root: string;
let uiDir: string;
let files: { archive: string; manifest: string; tampered: string };
let suspendedRun: string;
let daemon: RunningDaemon;
let session: BrowserSession;

/** A root with real Goal work (a Goal, three Todos, a scripted run that worked them and delivered once) and one suspended run. */
async function rootWithGoalWork(): Promise<string> {
  const r = tempRoot('loopx-e2e-');
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
    'examples/agents/goal-worker.json',
    '--sink',
    sink.deliveriesUrl,
    '--root',
    r,
    '--json',
  ]);
  expect(run.status, run.stderr).toBe(0);
  const started = await loopxAsync([
    'run',
    'start',
    '--agent',
    'examples/agents/researcher.json',
    '--suspend-after-turns',
    '2',
    '--root',
    r,
    '--json',
  ]);
  expect(started.status, started.stderr).toBe(0);
  suspendedRun = started.json().run_id;
  return r;
}

const api = async (path: string): Promise<Response> => {
  const res = await fetch(`${daemon.url}${path.replace(/^\//, '')}`, {
    headers: { authorization: `Bearer ${daemon.token}` },
  });
  expect(res.status, path).toBe(200);
  return res;
};

const shot = (name: string) => session.page.screenshot({ path: join(SCREENSHOTS, name), fullPage: true });

// Under CI=true the browser tests must run: a missing chromium fails instead of skipping. Only a
// local run on a machine without chromium skips them (test/daemon covers every route without a browser).
if (process.env.CI === 'true' && !hasChromium())
  throw new Error("CI=true but no chromium binary: install Debian's chromium (.ci/run does)");
describe.skipIf(!hasChromium())('Capability Center in a browser', () => {
  beforeAll(async () => {
    sink = await startWebhookSink({ port: 0 });
    root = await rootWithGoalWork();
    const out = join(dirname(root), 'out');
    const made = await loopxAsync([
      'backup-state',
      '--execute',
      '--output-dir',
      out,
      '--backup-id',
      'b1',
      '--root',
      root,
      '--format',
      'v0',
      '--json',
    ]);
    expect(made.status, made.stderr).toBe(0);
    // And one in the root's own backups/ directory, to pick instead of uploading.
    expect((await loopxAsync(['backup-state', '--execute', '--backup-id', 'in-root', '--root', root])).status).toBe(0);
    const archive = join(out, 'b1.tar.gz');
    const tampered = join(mkdtempSync(join(tmpdir(), 'loopx-e2e-tampered-')), 'b1.tar.gz');
    const bytes = readFileSync(archive);
    const at = Math.floor(bytes.length / 2);
    bytes[at] = bytes[at]! ^ 0xff;
    writeFileSync(tampered, bytes);
    files = { archive, manifest: join(out, 'b1.manifest.json'), tampered };

    // The production bundle, as `npm run build` makes it (vitest sets NODE_ENV=test, which would select React's development build).
    uiDir = await buildUi();

    daemon = await startDaemon({ root, port: 0, uiDir, authorityDir: AUTHORITY_DIR, logger: false });
    mkdirSync(SCREENSHOTS, { recursive: true });
    session = await launchBrowser();
  }, 180_000);

  afterAll(async () => {
    await session?.close();
    await daemon?.close();
    await sink?.close();
    for (const dir of [uiDir, root && dirname(root), files && dirname(files.tampered)])
      if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('signs in with the one-time login address and takes the token out of the address bar', async () => {
    const { page } = session;
    await page.goto(daemon.loginUrl);
    await expect.poll(() => page.getByRole('heading', { level: 1, name: 'Backup & recovery' }).isVisible()).toBe(true);
    expect(page.url()).not.toContain('login=');
    expect(page.url()).not.toContain('#');
    await expect.poll(() => page.getByTestId('daemon-info').textContent()).toContain('daemon ');
    const nav = page.getByRole('navigation', { name: 'Settings' });
    expect(await nav.getByRole('link', { name: 'Backup & recovery' }).getAttribute('aria-current')).toBe('page');
    expect(await nav.getByRole('link', { name: 'Runs' }).isVisible()).toBe(true);
    expect(await page.getByText(STATEMENT).isVisible()).toBe(true);
  });

  it('verifies an uploaded backup and opens its audit: held, classified components with owners and next actions', async () => {
    const { page } = session;
    const requested: string[] = [];
    const onRequest = (r: { url(): string; method(): string }) =>
      requested.push(`${r.method()} ${new URL(r.url()).pathname}`);
    page.on('request', onRequest);
    await page.getByLabel('Backup archive (.tar.gz)').setInputFiles(files.archive);
    await page.getByLabel('Backup manifest (.json)').setInputFiles(files.manifest);
    // Record what the progress list shows while it is on screen (the page moves to the audit when done).
    await page.evaluate(`(() => {
      window.__steps = new Set();
      new MutationObserver(() => {
        for (const li of document.querySelectorAll('[data-testid="verify-step"] .step-label')) window.__steps.add(li.textContent);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    })()`);
    await page.getByRole('button', { name: 'Verify' }).click();

    await page.getByRole('heading', { level: 1, name: 'Audit of backup b1' }).waitFor({ timeout: 60_000 });
    const recoveryId = decodeURIComponent(page.url().split('/audits/')[1] ?? '');
    expect(recoveryId).toMatch(/^[0-9a-f]{64}$/);
    // The API sequence of docs/api.md; the result came over the job's event stream (no fallback poll).
    page.off('request', onRequest);
    const calls = requested
      .filter((r) => r.includes('/api/backups/'))
      .map((r) => r.replace(/up_[0-9a-f]{32}/, ':upload').replace(/job_[0-9a-f]{32}/, ':job'));
    expect(calls).toEqual([
      'POST /api/backups/uploads',
      'PUT /api/backups/uploads/:upload/archive',
      'PUT /api/backups/uploads/:upload/manifest',
      'POST /api/backups/uploads/:upload/verify',
      'GET /api/backups/jobs/:job/events',
    ]);
    const shown = await page.evaluate<string[]>('[...window.__steps]');
    for (const step of [
      'Upload archive — done',
      'Inputs — done',
      'Destination — done',
      'Members — done',
      'Extract — done',
    ])
      expect(shown).toContain(step);
    expect(shown.some((t) => /^Owners — (running|done)/.test(t))).toBe(true);
    const summary = (await (await api(`/api/audits/${recoveryId}`)).json()) as {
      phase: string;
      operator_state: string;
      components: {
        component_id: string;
        owner_kind: string;
        classification: string;
        verification: string;
        next_action: string;
      }[];
      findings: { code: string; severity: string }[];
      counts: { assets: Record<string, number> };
    };

    // The permanent statement stays on the audit page.
    expect(await page.getByText(STATEMENT).isVisible()).toBe(true);
    const status = page.getByTestId('audit-status');
    expect(summary.phase).toBe('held');
    expect(await status.textContent()).toContain('held');
    expect(await status.textContent()).toContain(summary.operator_state);
    expect(await page.getByTestId('audit-execution-authority').textContent()).toBe('no');
    expect(await page.getByText('Execution authority granted').isVisible()).toBe(true);

    // One row per component, in the audit's order, its classification in words, its owner and its one next action.
    const rows = page.getByTestId('audit-component-row');
    expect(await rows.count()).toBe(summary.components.length);
    expect(summary.components.length).toBeGreaterThanOrEqual(4);
    for (const [i, c] of summary.components.entries()) {
      const row = rows.nth(i);
      expect(await row.getByRole('rowheader').textContent()).toContain(c.component_id);
      expect(await row.textContent()).toContain(CLASSIFICATION_WORDS[c.classification]);
      expect(await row.getByTestId('component-owner').textContent()).toBe(c.owner_kind);
      expect(await row.getByTestId('component-next-action').textContent()).toBe(c.next_action);
      expect(await row.textContent()).toContain(c.verification);
    }
    const owners = new Set(summary.components.map((c) => c.owner_kind));
    for (const o of ['config', 'goal', 'work']) expect(owners).toContain(o);
    // The owner legend lists each owner the components name, with what the owners table says it decides.
    const table = (await (await api('/api/owners')).json()) as { owners: { name: string; decides: string }[] };
    const legend = page.getByTestId('owner-legend-entry');
    await legend.first().waitFor();
    const entries = await legend.evaluateAll((els) =>
      els.map((el) => [el.querySelector('dt')?.textContent ?? '', el.querySelector('dd')?.textContent ?? '']),
    );
    expect(entries.map(([n]) => n).sort()).toEqual(
      [...owners].filter((o) => table.owners.some((t) => t.name === o)).sort(),
    );
    for (const [name, text] of entries) expect(text).toBe(table.owners.find((t) => t.name === name)!.decides);
    const counts = await page.getByTestId('audit-counts').textContent();
    for (const [k, n] of Object.entries(summary.counts.assets))
      expect(counts).toContain(`${n} ${CLASSIFICATION_WORDS[k]}`);

    // Findings: holds and errors first; the two v0 holds are there.
    const findingRows = page.getByTestId('audit-finding-row');
    expect(await findingRows.count()).toBe(summary.findings.length);
    const severities = await findingRows.evaluateAll((trs) =>
      trs.map((tr) => tr.querySelector('.badge')?.textContent ?? ''),
    );
    const rank = (s: string) => (s === 'hold' ? 0 : s === 'error' ? 1 : 2);
    expect(severities.map(rank)).toEqual([...severities.map(rank)].sort((a, b) => a - b));
    const findingText = await findingRows.allTextContents();
    expect(findingText.join('\n')).toContain('legacy_manifest_incomplete');
    expect(findingText.join('\n')).toContain('legacy_best_effort');

    // A held audit offers no recovery: the page names the hold that prevents it, its owner and its one next action.
    const firstHold = (
      summary.findings as { code: string; severity: string; owner: string; next_action: string }[]
    ).find((f) => f.severity === 'hold')!;
    const blocked = await page.getByTestId('recover-blocked').textContent();
    expect(blocked).toContain(`the ${firstHold.owner} owner holds it (${firstHold.code})`);
    expect(blocked).toContain(`Next action: ${firstHold.next_action}`);
    expect(await page.getByRole('button', { name: 'Preview the recovery' }).count()).toBe(0);

    // "Download audit" saves the private audit's exact bytes.
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Download audit' }).click(),
    ]);
    const saved = readFileSync((await download.path())!);
    const raw = await api(`/api/audits/${recoveryId}/raw`);
    expect(createHash('sha256').update(saved).digest('hex')).toBe(raw.headers.get('x-loopx-sha256'));
    expect(download.suggestedFilename()).toBe(`recovery-audit-${recoveryId.slice(0, 12)}.json`);

    // The workspace read back below the findings (the full page is the screenshot).
    await page.getByTestId('workspace-goal-row').filter({ hasText: 'launch' }).waitFor();
    await shot('capability-center-audit.png');
    expect(await axeViolations(page), 'an audit page').toEqual([]);

    // Back on the backup page the audit is listed.
    await page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'Backup & recovery' }).click();
    const listed = page.getByTestId('audit-list-row');
    await listed.first().waitFor();
    expect(await listed.count()).toBe(1);
    expect(await listed.first().textContent()).toContain('b1');
    expect(await listed.first().textContent()).toContain('held');
    await page.getByRole('link', { name: `Open audit ${recoveryId.slice(0, 12)}… of backup b1` }).waitFor();
  }, 90_000);

  it('shows a tampered archive’s typed refusal: code, message and next action', async () => {
    const { page } = session;
    await page.goto(`${daemon.url}#/settings/capability-center/backup`);
    await page.getByLabel('Backup archive (.tar.gz)').setInputFiles(files.tampered);
    await page.getByLabel('Backup manifest (.json)').setInputFiles(files.manifest);
    await page.getByRole('button', { name: 'Verify' }).click();
    const code = page.getByTestId('job-error-code');
    await code.waitFor({ timeout: 60_000 });
    expect(await code.textContent()).toBe('verify_archive_digest_mismatch');
    const alert = page.getByRole('alert').filter({ has: code });
    expect(await alert.textContent()).toContain('Next action:');
    expect(await page.getByTestId('verify-step').filter({ hasText: 'Inputs' }).textContent()).toContain('stopped here');
    expect(await page.getByText(STATEMENT).isVisible()).toBe(true);
    // Nothing was published: still one audit.
    expect(await page.getByTestId('audit-list-row').count()).toBe(1);
    await shot('capability-center-verify-refused.png');
    expect(await axeViolations(page), 'the backup page with a refusal').toEqual([]);
  }, 90_000);

  it("picks one of the root's own backups instead of uploading, and opens its held audit", async () => {
    const { page } = session;
    await page.goto(`${daemon.url}#/settings/capability-center/backup`);
    const pick = page.getByLabel('Or pick a backup made on this machine');
    await expect.poll(() => pick.locator('option').count()).toBe(2);
    await pick.selectOption('root/in-root');
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('heading', { level: 1, name: 'Audit of backup in-root' }).waitFor({ timeout: 60_000 });
    expect(await page.getByTestId('audit-status').textContent()).toContain('held');
    expect(await page.getByText(STATEMENT).isVisible()).toBe(true);
  }, 90_000);

  it('lists the runs and follows one run’s events', async () => {
    const { page } = session;
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Runs' }).click();
    await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
    await page.getByTestId('run-row').first().waitFor();
    expect(await page.getByTestId('run-row').count()).toBe(2);
    await page.getByRole('link', { name: suspendedRun }).click();
    await page.getByTestId('run-status').filter({ hasText: 'suspended' }).waitFor();
    await expect.poll(() => page.getByTestId('run-event').count()).toBe(12);
    expect(await page.getByTestId('run-event').last().textContent()).toContain('Suspended');
    // A suspended run can still change (resumed, cancelled, here or elsewhere): its page keeps following it.
    await page.getByTestId('run-follow-state').filter({ hasText: 'Following live' }).waitFor();
    expect(await page.getByRole('button', { name: 'Suspend' }).isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Resume' }).isEnabled()).toBe(true);

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`${suspendedRun}.snapshot`);
    await page.getByText(`Exported ${suspendedRun}.snapshot`).waitFor();
    await shot('capability-center-run.png');
    expect(await axeViolations(page), 'a run page').toEqual([]);
  }, 60_000);

  it('works at a narrow width: the navigation sits above the content', async () => {
    const { page } = session;
    await page.setViewportSize({ width: 375, height: 800 });
    await page.goto(`${daemon.url}#/settings/capability-center/backup`);
    await page.getByRole('heading', { level: 1, name: 'Backup & recovery' }).waitFor();
    const nav = await page.getByRole('navigation', { name: 'Settings' }).boundingBox();
    const main = await page.getByRole('main').boundingBox();
    expect(nav && main && nav.y + nav.height <= main.y + 1).toBe(true);
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await shot('capability-center-narrow.png');
    expect(await axeViolations(page), 'the backup page at 375 px').toEqual([]);
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('signs out of one tab: the token is forgotten there, the address bar stays clean, and a new login address signs it in again', async () => {
    const other = await session.browser.newContext({ viewport: { width: 1000, height: 640 } });
    other.setDefaultTimeout(15_000);
    other.setDefaultNavigationTimeout(15_000);
    try {
      const page = await other.newPage();
      await page.goto(daemon.newLoginUrl());
      await page.getByRole('heading', { level: 1, name: 'Backup & recovery' }).waitFor();
      expect(await page.evaluate<string | null>(`sessionStorage.getItem('loopx.daemon.token')`)).toBe(daemon.token);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { level: 1, name: 'Open loopx from its daemon' }).waitFor();
      expect(await page.evaluate<string | null>(`sessionStorage.getItem('loopx.daemon.token')`)).toBeNull();
      await page.reload();
      await page.getByRole('heading', { level: 1, name: 'Open loopx from its daemon' }).waitFor();
      expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
      // The first tab is still signed in: signing out is per tab.
      await session.page.reload();
      await session.page.getByRole('button', { name: 'Sign out' }).waitFor();
      await page.goto(daemon.newLoginUrl());
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
    } finally {
      await other.close();
    }
  }, 90_000);

  it('without a token shows where to sign in; a used login address is refused with its typed reason', async () => {
    const other = await session.browser.newContext({ viewport: { width: 1000, height: 640 } });
    // The same bounds as the session's own context, so a stuck step names itself.
    other.setDefaultTimeout(15_000);
    other.setDefaultNavigationTimeout(15_000);
    try {
      const page = await other.newPage();
      await page.goto(daemon.url);
      await page.getByRole('heading', { level: 1, name: 'Open loopx from its daemon' }).waitFor();
      expect(await page.getByText('loopx daemon', { exact: true }).first().isVisible()).toBe(true);
      await page.screenshot({ path: join(SCREENSHOTS, 'capability-center-sign-in.png') });
      await page.goto(daemon.loginUrl); // already used by the first test; only the hash changes
      await page.getByTestId('api-error-code').filter({ hasText: 'daemon_login_invalid' }).waitFor();
      expect(page.url()).not.toContain('login=');
      // A token the daemon refuses (say, after a restart) returns to the sign-in screen with the 401's code.
      await page.evaluate(`sessionStorage.setItem('loopx.daemon.token', 'not-the-token')`);
      await page.reload();
      await page.getByTestId('api-error-code').filter({ hasText: 'daemon_unauthorized' }).waitFor();
      await page.getByRole('heading', { level: 1, name: 'Open loopx from its daemon' }).waitFor();
      expect(await page.evaluate<string | null>(`sessionStorage.getItem('loopx.daemon.token')`)).toBeNull();
    } finally {
      await other.close();
    }
  }, 90_000);
  it("reads a verified audit's workspace back, read only: the seeded Goal sample, its Todos and its committed webhook effect", async () => {
    const { page } = session;
    // The root `npm start` shows (`loopx daemon --seed-sample`), backed up elsewhere and uploaded here.
    const seeded = tempRoot('loopx-e2e-seeded-');
    try {
      expect((await loopxAsync(['init', '--root', seeded])).status).toBe(0);
      expect((await seedSample(seeded, { webhookUrl: sink.deliveriesUrl, authorityDir: AUTHORITY_DIR })).seeded).toBe(
        true,
      );
      const out = join(dirname(seeded), 'out');
      const made = await loopxAsync([
        'backup-state',
        '--execute',
        '--output-dir',
        out,
        '--backup-id',
        'sample-1',
        '--root',
        seeded,
      ]);
      expect(made.status, made.stderr).toBe(0);
      await page.goto(`${daemon.url}#/settings/capability-center/backup`);
      await page.getByLabel('Backup archive (.tar.gz)').setInputFiles(join(out, 'sample-1.tar.gz'));
      await page.getByLabel('Backup manifest (.json)').setInputFiles(join(out, 'sample-1.manifest.json'));
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.getByRole('heading', { level: 1, name: 'Audit of backup sample-1' }).waitFor({ timeout: 60_000 });
    } finally {
      rmSync(dirname(seeded), { recursive: true, force: true });
    }
    const recoveryId = decodeURIComponent(page.url().split('/audits/')[1] ?? '');
    // From here on the page only reads.
    const requested: string[] = [];
    const onRequest = (r: { url(): string; method(): string }) =>
      requested.push(`${r.method()} ${new URL(r.url()).pathname}`);
    page.on('request', onRequest);
    const listing = (await (await api(`/api/audits/${recoveryId}/workspace`)).json()) as {
      goals: { goal_id: string; committed_transactions: number }[];
      runs: unknown[];
      sessions: number;
      effects_by_outcome: Record<string, number>;
    };

    const section = page.getByRole('region', { name: 'Workspace contents (read only)' });
    const row = section.getByTestId('workspace-goal-row');
    await row.first().waitFor();
    expect(await section.getByText(WORKSPACE_STATEMENT).isVisible()).toBe(true);
    expect(await page.getByText(STATEMENT).isVisible()).toBe(true);
    expect(await section.getByTestId('workspace-execution-authority').textContent()).toBe('not granted');
    expect(await row.count()).toBe(1);
    expect(await row.getByRole('rowheader').textContent()).toBe('sample');
    expect(await row.textContent()).toContain('Ship the launch post');
    expect(await row.textContent()).toContain('active');
    expect(await row.getByTestId('workspace-goal-todos').textContent()).toBe('1 open, 1 blocked, 1 done');
    expect(listing.goals[0]!.committed_transactions).toBeGreaterThan(0);
    expect(await row.getByTestId('workspace-goal-transactions').textContent()).toBe(
      String(listing.goals[0]!.committed_transactions),
    );
    expect(await section.getByTestId('workspace-run-row').count()).toBe(listing.runs.length);
    expect(await section.getByTestId('workspace-sessions').textContent()).toBe(String(listing.sessions));
    expect(listing.effects_by_outcome.committed).toBeGreaterThan(0);
    expect(await section.getByTestId('workspace-effects').textContent()).toBe(
      `${listing.effects_by_outcome.committed} committed`,
    );

    // Open the Goal: its Todos, its session and bound run, its effects — and nothing to act on.
    await row.getByRole('button', { name: 'Open Goal sample' }).click();
    const goal = page.getByRole('region', { name: 'Workspace Goal sample (read only)' });
    const todos = goal.getByTestId('workspace-todo-row');
    await todos.first().waitFor();
    expect(await page.evaluate<string | undefined>('document.activeElement?.id')).toBe('workspace-goal-heading');
    expect(await row.getByRole('button', { name: 'Close Goal sample' }).getAttribute('aria-expanded')).toBe('true');
    expect(await todos.getByRole('rowheader').allTextContents()).toEqual(['t1', 't2', 't3']);
    const todoText = await todos.allTextContents();
    for (const [i, [title, status]] of [
      ['Draft the outline', 'done'],
      ['Review with design', 'blocked'],
      ['Publish the post', 'open'],
    ].entries()) {
      expect(todoText[i]).toContain(title);
      expect(todoText[i]).toContain(status);
    }
    expect(await goal.getByTestId('workspace-session-row').count()).toBe(1);
    expect(await goal.getByTestId('workspace-goal-run-row').count()).toBe(1);
    const webhook = goal.getByTestId('workspace-effect-row').filter({ hasText: 'webhook.deliver' });
    expect(await webhook.count()).toBe(1);
    expect(await webhook.locator('.badge').textContent()).toBe('committed');
    expect(await goal.getByRole('button').allTextContents()).toEqual(['Close Goal sample']);
    expect(await goal.getByRole('link').count()).toBe(0);
    // The two read-back sections, from the listing's heading to the opened Goal's end.
    const [top, bottom] = [await section.boundingBox(), await goal.boundingBox()];
    const scrollY = await page.evaluate<number>('window.scrollY');
    await page.screenshot({
      path: join(SCREENSHOTS, 'capability-center-workspace.png'),
      fullPage: true,
      clip: { x: 0, y: top!.y + scrollY - 16, width: 1280, height: bottom!.y + bottom!.height - top!.y + 32 },
    });

    // Closing it returns focus to the button that opened it.
    await goal.getByRole('button', { name: 'Close Goal sample' }).click();
    await expect.poll(() => goal.count()).toBe(0);
    expect(
      await page.evaluate<string | null | undefined>(`document.activeElement?.getAttribute('data-goal-toggle')`),
    ).toBe('sample');
    page.off('request', onRequest);
    const calls = requested.filter((r) => r.includes('/api/'));
    expect(calls).toContain(`GET /api/audits/${recoveryId}/workspace/goals/sample`);
    expect(
      calls.filter((r) => !r.startsWith('GET ')),
      'reading the workspace back only GETs',
    ).toEqual([]);
  }, 120_000);
});
