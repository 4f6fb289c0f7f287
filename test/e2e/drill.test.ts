/**
 * The recovery drill in the Capability Center, end to end in headless Chromium against a real
 * daemon: a short drill run from its page shows its stages as they start, then its receipt as
 * pictures — each phase of the recovery on one time axis with the frozen 60 s target marked, the
 * recovery point as the captured checkpoint beside the work after it — and every figure beside
 * its target, the drill in the list of past drills. A missed target is said plainly (MISSED). The
 * page passes axe at full width and at 375 px, where nothing scrolls sideways but its tables.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type RunningDaemon } from '../../src/daemon/index.js';
import { STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';
import { axeViolations } from './support/axe.js';
import { SCREENSHOTS, buildUi } from './support/ui.js';
import { hasChromium, launchBrowser, type BrowserSession } from './support/browser.js';

const AUTHORITY_DIR = join(STATE_HOME, 'loopx', 'run-authority');
const shot = (name: string) => session.page.screenshot({ path: join(SCREENSHOTS, name), fullPage: true });

let root: string;
let uiDir: string;
let daemon: RunningDaemon;
let session: BrowserSession;
let drillId: string;

const api = async (path: string): Promise<Record<string, unknown>> => {
  const res = await fetch(`${daemon.url}${path.replace(/^\//, '')}`, {
    headers: { authorization: `Bearer ${daemon.token}` },
  });
  return (await res.json()) as Record<string, unknown>;
};

if (process.env.CI === 'true' && !hasChromium())
  throw new Error("CI=true but no chromium binary: install Debian's chromium (.ci/run does)");
describe.skipIf(!hasChromium())('the recovery drill in a browser', () => {
  beforeAll(async () => {
    root = tempRoot('loopx-e2e-drill-');
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    uiDir = await buildUi();
    daemon = await startDaemon({ root, port: 0, uiDir, authorityDir: AUTHORITY_DIR, logger: false });
    mkdirSync(SCREENSHOTS, { recursive: true });
    session = await launchBrowser();
  }, 240_000);

  afterAll(async () => {
    await session?.close();
    await daemon?.close();
    for (const dir of [uiDir, root && dirname(root)]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('runs a short drill from its page, showing each stage as it starts, then its receipt', async () => {
    const { page } = session;
    await page.goto(daemon.loginUrl);
    await expect.poll(() => page.getByRole('heading', { level: 1, name: 'Backup & recovery' }).isVisible()).toBe(true);
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Recovery drill' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1, name: 'Recovery drill' }).isVisible()).toBe(true);
    await page.getByTestId('no-drills').waitFor();
    expect(await axeViolations(page), 'the drill page before any drill').toEqual([]);

    await page.getByRole('button', { name: 'Run a short drill' }).click();
    await expect
      .poll(() => page.getByTestId('drill-progress').textContent(), { timeout: 120_000 })
      .toMatch(/^Stage \d+: /);
    expect(await page.getByRole('button', { name: 'A drill is running…' }).isDisabled()).toBe(true);
    expect(await page.getByTestId('drill-stages').textContent()).toContain('running');
    expect(await axeViolations(page), 'the drill page while a drill runs').toEqual([]);
    await page.getByTestId('drill-run').screenshot({ path: join(SCREENSHOTS, 'drill-1-running.png') });

    await page.getByTestId('drill-outcome').waitFor({ timeout: 900_000 });
    expect(await page.getByTestId('drill-progress').textContent()).toMatch(/^The drill ran \d+ stages\.$/);
    expect(await page.getByTestId('drill-stages').textContent()).toContain(
      'recovery: continue the unfinished Todo in the new root — done',
    );
    drillId = (await page.getByTestId('drill-outcome').getByRole('link').textContent())!;
    expect(drillId).toMatch(/^drill_[0-9a-f]{16}$/);
    await expect
      .poll(() => page.getByTestId('drill-receipt').getByRole('heading', { level: 2 }).textContent())
      .toBe(`The latest drill ${drillId}`);
  }, 960_000);

  it('draws the receipt: each phase on one axis with the 60 s target marked, the recovery point, and every figure beside its target', async () => {
    const { page } = session;
    const receipt = (await api(`/api/drills/${drillId}`)) as {
      phases: unknown[];
      rto: { seconds: number; met: boolean };
      rpo: { met: boolean; work_items_lost_locally: number };
    };
    const timeline = page.getByTestId('drill-timeline');
    // One row per phase, the recovery time, and the axis with the target labelled.
    expect(await timeline.locator('li').count()).toBe(receipt.phases.length + 2);
    expect(await timeline.locator('.timeline-target').count()).toBe(receipt.phases.length + 1);
    const text = await timeline.textContent();
    expect(text).toContain('Verify the backup: ');
    expect(text).toContain(
      `Recovery time, to the first admitted turn: ${receipt.rto.seconds.toFixed(1)} s — target ≤ 60 s — ${receipt.rto.met ? 'met' : 'MISSED'}`,
    );
    expect(await timeline.locator('.timeline-target-label').textContent()).toBe('target 60 s');
    expect(await page.getByTestId('drill-rto').locator('figcaption').textContent()).toContain(
      'the red line marks the 60 s target',
    );

    const rpo = page.getByTestId('drill-rpo');
    expect(await rpo.locator('.rpo-captured').count()).toBe(2); // its segment and its swatch
    const legend = await rpo.locator('.rpo-legend').textContent();
    expect(legend).toMatch(/Captured: \d+ work transactions up to the checkpoint \(quiescent capture/);
    expect(legend).toContain(`Lost: ${receipt.rpo.work_items_lost_locally} work item`);
    expect(legend).toContain('Committed after the capture, known to its receiver: 1 delivery');
    expect(await rpo.locator('figcaption').textContent()).toContain(
      `Claimed beyond it: 0 work transactions — ${receipt.rpo.met ? 'met' : 'MISSED'}`,
    );

    const rows = page.getByTestId('drill-figures').locator('tbody tr');
    expect(await rows.count()).toBe(8);
    expect(await rows.first().textContent()).toBe(
      `Recovery time (RTO)${receipt.rto.seconds.toFixed(1)} s≤ 60 s${receipt.rto.met ? 'met' : 'MISSED'}`,
    );
    expect(await page.getByTestId('drill-list').textContent()).toContain(drillId);
    expect(await axeViolations(page), 'the drill page with its receipt').toEqual([]);
    await shot('drill-2-receipt.png');
  });

  it('says a missed target plainly: MISSED beside the figure, in the result and on the bar', async () => {
    const { page } = session;
    // A kept receipt whose recovery took longer than its target (the daemon serves what it kept).
    const missed = JSON.parse(readFileSync(join(root, 'daemon', 'drills', `${drillId}.json`), 'utf8'));
    missed.drill_id = 'drill_00000000000000ff';
    missed.rto = { seconds: 75.25, target_seconds: 60, met: false };
    missed.result = 'targets_missed';
    missed.missed = ['rto'];
    writeFileSync(join(root, 'daemon', 'drills', `${missed.drill_id}.json`), JSON.stringify(missed), { mode: 0o600 });
    await page.goto(`${daemon.url}#/settings/capability-center/drills/${missed.drill_id}`);
    await expect.poll(() => page.getByTestId('drill-result').textContent()).toBe('MISSED: recovery time');
    expect(await page.getByTestId('drill-figures').locator('tbody tr').first().textContent()).toBe(
      'Recovery time (RTO)75.3 s≤ 60 s' + 'MISSED',
    );
    expect(await page.getByTestId('drill-timeline').locator('.timeline-missed').count()).toBe(1);
    expect(await page.getByTestId('drill-rto').locator('figcaption').textContent()).toContain(
      'the target was MISSED by 15.3 s',
    );
    expect(await page.getByTestId('drill-list').textContent()).toContain('MISSED: recovery time');
    expect(await axeViolations(page), 'a drill that missed its target').toEqual([]);
  });

  it('works at 375 px: nothing scrolls sideways but its tables, and axe finds nothing', async () => {
    const { page } = session;
    await page.setViewportSize({ width: 375, height: 800 });
    await page.goto(`${daemon.url}#/settings/capability-center/drills/${drillId}`);
    await page.getByTestId('drill-rpo').waitFor();
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    // The target stays on the track: its mark and its label end inside the axis.
    const track = await page.getByTestId('drill-timeline').locator('.timeline-track').first().boundingBox();
    const label = await page.getByTestId('drill-timeline').locator('.timeline-target-label').boundingBox();
    expect(track && label && label.x >= track.x && label.x + label.width <= track.x + track.width + 1).toBe(true);
    expect(await axeViolations(page), 'the drill page at 375 px').toEqual([]);
    await shot('drill-3-narrow.png');
    await page.setViewportSize({ width: 1280, height: 900 });
  });
});
