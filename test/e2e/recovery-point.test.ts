/**
 * The recovery-point bar draws only what it can count, end to end in headless Chromium against a
 * real daemon whose answer for one recovery is replaced, for this page only, by recovery documents
 * (daemon-recovery) of a complete recovery and of a held one: each counted part is a segment as long
 * as its count, a part with no count (the work the lost source did after the capture, which a real
 * recovery cannot count; the checkpoint's own transactions when the readback lacks them) has no
 * segment at all and is said in words instead, and the checkpoint is marked only at the end of a
 * drawn captured segment. axe finds nothing at full width nor at 375 px.
 */
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATE_HOME, cliFromSources, loopxAsync, tempRoot } from '../support/cli.js';
import { axeViolations } from './support/axe.js';
import { hasChromium, type BrowserSession } from './support/browser.js';
import { signedInDaemon, type SignedInDaemon } from './support/ui.js';

cliFromSources();

const AUTHORITY_DIR = join(STATE_HOME, 'loopx', 'run-authority');
const LOST_NOT_COUNTED =
  'Not counted: the work the lost source did after the capture (the source is gone) — no segment is drawn for it.';

const receipt = (action: string, readback: Record<string, unknown>, startMs: number) => ({
  action,
  owner: action.split(':')[0],
  disposition: 'import_inert',
  result: 'applied',
  readback,
  started_at: new Date(Date.parse('2025-06-01T10:00:00.000Z') + startMs).toISOString(),
  done_at: new Date(Date.parse('2025-06-01T10:00:00.000Z') + startMs + 40).toISOString(),
});

/** A recovery document as GET /api/recoveries/:id answers it, in `state`, with these receipts and holds. */
function recovery(id: string, state: string, receipts: unknown[], holds: unknown[]) {
  return {
    recovery_id: id,
    audit_id: 'audit-1',
    goal_id: 'launch',
    destination_name: 'launch-recovered',
    created_at: '2025-06-01T09:59:00.000Z',
    applying_now: false,
    last_apply_error: null,
    status: {
      schema_version: 'loopx_recovery_status_v0',
      recovery_id: id,
      backup_id: 'backup-1',
      audit_recovery_id: 'audit-1',
      plan_digest: 'c'.repeat(64),
      state,
      goal: {
        goal_id: 'launch',
        recovered_instance_id: `ginst_${'1'.repeat(32)}`,
        new_instance_id: state === 'complete' ? `ginst_${'2'.repeat(32)}` : null,
      },
      capture: {
        requested_profile: 'quiescent',
        achieved_profile: 'quiescent',
        captured_at_end: '2025-06-01T09:30:00.000Z',
      },
      components: { required: 6, optional: 0, by_owner: { work: 1, effect: 1 } },
      verification: { verified: 6, invalid: 0, missing: 0, ambiguous: 0, unsupported: 0, unknown: 0, other: 0 },
      assets: { recovered_readable: 6, historical_only: 0, unknown_unrecoverable: 0 },
      phase: { completed_steps: receipts.length, total_steps: 10, current: null },
      last_durable_receipt: null,
      retryable: false,
      fences: { source_established: true, destination_established: true },
      holds,
      resolved_holds: [],
      preview: {
        recovered_readable: [],
        historical_only: [],
        lost_or_unknown: [],
        expected_holds: [],
        external_systems: [],
        human_actions: [],
      },
      timing: { apply_ms: receipts.length > 0 ? 100 : null, held_ms: null },
      receipts,
      next_action: 'none',
      execution_authority_granted: false,
    },
  };
}

const complete = recovery(
  'rec-complete',
  'complete',
  [
    receipt('work:import_inert', { imported_transactions: 7 }, 0),
    receipt('effect:reconcile', { committed_after_capture: [{ operation_id: 'a' }, { operation_id: 'b' }] }, 100),
  ],
  [],
);
const held = recovery(
  'rec-held',
  'reconciliation_held',
  [receipt('work:import_inert', {}, 0)],
  [
    {
      hold_id: 'h1',
      owner: 'effect',
      code: 'receiver_unconfirmed',
      subject: 'run-1:t1:k0',
      continuation: 'the receiver answers',
      retryable: true,
      digest: 'd'.repeat(64),
      next_action: 'ask again',
    },
  ],
);

let root: string;
let served: SignedInDaemon;
let session: BrowserSession;

async function openRecovery(page: Page, doc: { recovery_id: string }): Promise<ReturnType<Page['getByTestId']>> {
  await page.route(
    (url) => url.pathname === `/api/recoveries/${doc.recovery_id}`,
    (route) => route.fulfill({ json: doc }),
  );
  await page.goto(`${served.daemon.url}#/settings/capability-center/backup/recoveries/${doc.recovery_id}`);
  const rpo = page.getByTestId('recovery-rpo');
  await rpo.waitFor();
  return rpo;
}

/** The drawn segments (named by their class: rpo-captured, rpo-lost, …), each with its share of the bar's width (0–1). */
const segments = (page: Page) =>
  page.evaluate(`(() => {
    const bar = document.querySelector('[data-testid="recovery-rpo"] .rpo-bar');
    if (!bar) return [];
    const width = bar.getBoundingClientRect().width;
    return [...bar.querySelectorAll('.rpo-seg')].map((s) => ({ segment: s.classList[1].replace('rpo-', ''), share: s.getBoundingClientRect().width / width }));
  })()`) as Promise<{ segment: string; share: number }[]>;

async function accessibleAtBothWidths(page: Page, what: string): Promise<void> {
  expect(await axeViolations(page), `${what} at full width`).toEqual([]);
  await page.setViewportSize({ width: 375, height: 800 });
  try {
    expect(await axeViolations(page), `${what} at 375 px`).toEqual([]);
    // The picture fits (the page's own long ids are the recovery page's to wrap, not this picture's).
    const right = (await page.evaluate(`(() => {
      const f = document.querySelector('[data-testid="recovery-rpo"]');
      return Math.max(f.getBoundingClientRect().right, ...[...f.querySelectorAll('*')].map((e) => e.getBoundingClientRect().right));
    })()`)) as number;
    expect(right, `${what}: the picture inside the 375 px viewport`).toBeLessThanOrEqual(375);
  } finally {
    await page.setViewportSize({ width: 1280, height: 900 });
  }
}

if (process.env.CI === 'true' && !hasChromium())
  throw new Error("CI=true but no chromium binary: install Debian's chromium (.ci/run does)");
describe.skipIf(!hasChromium())('the recovery-point bar', () => {
  beforeAll(async () => {
    root = tempRoot('loopx-e2e-rpo-');
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    served = await signedInDaemon(root, AUTHORITY_DIR);
    session = served.session;
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    if (root) rmSync(dirname(root), { recursive: true, force: true });
  });

  it('draws only counted parts, each as long as its count, and says in words that the lost source’s later work is not counted', async () => {
    const { page } = session;
    const rpo = await openRecovery(page, complete);
    // 7 captured transactions and 2 deliveries after the capture: 7/9 and 2/9 of the bar; nothing for the uncounted loss.
    const drawn = await segments(page);
    expect(drawn.map((s) => s.segment)).toEqual(['captured', 'external']);
    expect(drawn[0]!.share).toBeCloseTo(7 / 9, 1);
    expect(drawn[1]!.share).toBeCloseTo(2 / 9, 1);
    expect(await rpo.locator('.rpo-bar .rpo-lost').count(), 'no segment of a made-up length').toBe(0);
    expect(await rpo.locator('.rpo-legend .rpo-lost').count(), 'no swatch for what has no segment').toBe(0);
    expect(await rpo.getByTestId('rpo-not-counted').textContent()).toBe(LOST_NOT_COUNTED);
    const legend = await rpo.locator('.rpo-legend').textContent();
    expect(legend).toContain(
      'Captured: 7 work transactions up to the checkpoint (quiescent capture, ended at 09:30:00 UTC) — recovered',
    );
    expect(legend).toContain(
      'Committed after the capture, known to its receiver: 2 deliveries — kept, never sent again',
    );
    expect(legend).toContain('Unknown: 0 open holds');
    expect(legend).not.toContain('Lost');
    // The checkpoint is the end of the captured segment, past the bar's middle: its label ends there.
    expect(await rpo.locator('.rpo-mark').textContent()).toBe('captured checkpoint ↑');
    await accessibleAtBothWidths(page, 'a complete recovery’s point');
  });

  it('draws no captured segment and no checkpoint mark when the checkpoint’s transactions are not counted', async () => {
    const { page } = session;
    const rpo = await openRecovery(page, held);
    expect((await segments(page)).map((s) => s.segment)).toEqual(['unknown']);
    expect(await rpo.locator('.rpo-mark').count()).toBe(0);
    expect(await rpo.getByTestId('rpo-not-counted').locator('li').allTextContents()).toEqual([
      'Not counted: the work transactions the checkpoint holds (quiescent capture, ended at 09:30:00 UTC): recovered, but their number is not known here — no segment is drawn for it.',
      LOST_NOT_COUNTED,
    ]);
    expect(await rpo.locator('.rpo-legend').textContent()).toContain('Unknown: 1 open hold — an outcome still awaited');
    await accessibleAtBothWidths(page, 'a held recovery’s point');
  });
});
