/**
 * A run's events read as a timeline, and a deduplicated delivery says so, end to end in headless
 * Chromium against a real daemon whose run and Goal answers are replaced, for these pages only, by
 * documents that hold every event type of the engine's vocabulary (src/engine/events.ts) and every
 * delivery result a receiver gives: each event is one line — its sequence, its time and a sentence
 * saying what happened from what the event carries — with its raw JSON behind its own "Raw event"
 * disclosure; a delivery the receiver already held reads "deduplicated: the receiver already held
 * it" on the run's timeline and in the Goal's effects table, never as a fresh commit. axe finds
 * nothing at full width nor at 375 px. And with nothing replaced: a second Goal's real work runs
 * against the dev webhook sink — a delivery stored, the same one replayed by the receiver once the
 * root's effect journal lost it, then not sent again beside a fresh one — read the same way from the
 * daemon's own answers.
 */
import { readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { EVENT_TYPES } from '../../src/engine/index.js';
import { agentFile } from '../recovery/support/adopt.js';
import { STATE_HOME, cliFromSources, loopxAsync, tempRoot } from '../support/cli.js';
import { axeViolations } from './support/axe.js';
import { hasChromium, type BrowserSession } from './support/browser.js';
import { signedInDaemon, type SignedInDaemon } from './support/ui.js';

cliFromSources();

const AUTHORITY_DIR = join(STATE_HOME, 'loopx', 'run-authority');

interface Ev {
  readonly run_id: string;
  readonly sequence: number;
  readonly type: string;
  readonly at: string;
  readonly data: Record<string, unknown>;
}

/** A run's events from [type, data, sentence] rows, one second apart; and the sentence each must read as. */
function run(
  runId: string,
  rows: readonly (readonly [string, Record<string, unknown>, string])[],
): { events: Ev[]; sentences: string[] } {
  const t0 = Date.parse('2025-06-01T10:00:00.000Z');
  return {
    events: rows.map(([type, data], i) => ({
      run_id: runId,
      sequence: i + 1,
      type,
      at: new Date(t0 + i * 1000).toISOString(),
      data,
    })),
    sentences: rows.map(([, , sentence]) => sentence),
  };
}

const RUN = 'run-tl';
const call = (turn: number, k: number) => `${RUN}/t${turn}/k${k}`;
const FINAL = `The outline is done and announced; the review is blocked on design feedback. ${'Publishing stays open for the next run, which picks it up from the Goal. '.repeat(3)}`;
const DEDUPLICATED = 'deduplicated: the receiver already held it';

const completed = run(RUN, [
  [
    'RunStarted',
    {
      definition_id: 'demo.goal-worker',
      definition_version: '1.0.0',
      model_provider: 'scripted',
      model_id: 'scripted-v1',
      turn_limit: 8,
      plan_fingerprint: 'a'.repeat(64),
    },
    'Started demo.goal-worker@1.0.0 with scripted/scripted-v1, at most 8 turns',
  ],
  ['TurnStarted', { turn: 1 }, 'Turn 1 started'],
  [
    'ModelStreamed',
    { turn: 1, model_call_id: `${RUN}/t1/c0`, attempt: 1, text: 'Telling ' },
    'Model text arriving (turn 1): “Telling”',
  ],
  [
    'ModelRetried',
    { turn: 1, model_call_id: `${RUN}/t1/c0`, attempt: 1, code: 'model_rate_limited', delay_ms: 1500 },
    'Model call failed (model_rate_limited) on attempt 1; tried again after 1.5 s',
  ],
  [
    'ModelResponded',
    {
      turn: 1,
      model_call_id: `${RUN}/t1/c0`,
      text: 'Telling the team.',
      tool_calls: [{ call_id: call(1, 0), tool_name: 'webhook.deliver' }],
      usage: { input_tokens: 10, output_tokens: 4, source: 'provider' },
    },
    'Model answered: “Telling the team.” — and asks to call webhook.deliver',
  ],
  ['ToolCalled', { call_id: call(1, 0), tool_name: 'webhook.deliver' }, 'Called webhook.deliver (call t1/k0)'],
  [
    'ToolResulted',
    { call_id: call(1, 0), tool_name: 'webhook.deliver', status: 'ok', delivery_result: 'stored' },
    'Delivered webhook (operation run-tl:t1:k0): stored by the receiver',
  ],
  ['TurnCompleted', { turn: 1 }, 'Turn 1 completed'],
  ['TurnStarted', { turn: 2 }, 'Turn 2 started'],
  [
    'ModelResponded',
    {
      turn: 2,
      model_call_id: `${RUN}/t2/c0`,
      text: '',
      tool_calls: [
        { call_id: call(2, 0), tool_name: 'webhook.deliver' },
        { call_id: call(2, 1), tool_name: 'webhook.deliver' },
        { call_id: call(2, 2), tool_name: 'todo.update' },
      ],
    },
    'Model asks to call webhook.deliver, webhook.deliver, todo.update',
  ],
  ['ToolCalled', { call_id: call(2, 0), tool_name: 'webhook.deliver' }, 'Called webhook.deliver (call t2/k0)'],
  [
    'ToolResulted',
    { call_id: call(2, 0), tool_name: 'webhook.deliver', status: 'ok', delivery_result: 'replayed' },
    `Webhook delivery (operation run-tl:t2:k0) — ${DEDUPLICATED} (not stored again)`,
  ],
  ['ToolCalled', { call_id: call(2, 1), tool_name: 'webhook.deliver' }, 'Called webhook.deliver (call t2/k1)'],
  [
    'ToolResulted',
    {
      call_id: call(2, 1),
      tool_name: 'webhook.deliver',
      status: 'ok',
      delivery_result: 'not_sent',
      duplicate_of: 'run-tl:t1:k0',
    },
    `Webhook delivery (operation run-tl:t2:k1) — ${DEDUPLICATED} (not sent again; operation run-tl:t1:k0 delivered it)`,
  ],
  ['ToolCalled', { call_id: call(2, 2), tool_name: 'todo.update' }, 'Called todo.update (call t2/k2)'],
  [
    'ToolResulted',
    { call_id: call(2, 2), tool_name: 'todo.update', status: 'mutation_uncertain' },
    'Outcome unknown: todo.update (call t2/k2) — it is not run again; it waits for you to settle it',
  ],
  [
    'ToolResulted',
    { call_id: call(2, 2), tool_name: 'todo.update', status: 'ok', resolution: 'committed' },
    'Settled by the operator: todo.update (call t2/k2) committed: it took effect',
  ],
  ['TurnCompleted', { turn: 2 }, 'Turn 2 completed'],
  ['Suspended', { completed_turns: 2 }, 'Suspended at the turn boundary after 2 completed turns'],
  ['Resumed', { completed_turns: 2 }, 'Resumed after 2 completed turns'],
  ['TurnStarted', { turn: 3 }, 'Turn 3 started'],
  [
    'ModelResponded',
    {
      turn: 3,
      model_call_id: `${RUN}/t3/c0`,
      text: 'Asking first.',
      tool_calls: [{ call_id: call(3, 0), tool_name: 'human.ask' }],
    },
    'Model answered: “Asking first.” — and asks to call human.ask',
  ],
  ['ToolCalled', { call_id: call(3, 0), tool_name: 'human.ask' }, 'Called human.ask (call t3/k0)'],
  [
    'InteractionRequested',
    { interaction_id: 'confirm-1', call_id: call(3, 0), prompt: 'Is the launch post\nready?' },
    'Asked the operator: “Is the launch post ready?” (interaction confirm-1)',
  ],
  [
    'InteractionAnswered',
    { interaction_id: 'confirm-1', call_id: call(3, 0) },
    'The operator answered (interaction confirm-1)',
  ],
  ['ToolResulted', { call_id: call(3, 0), tool_name: 'human.ask', status: 'ok' }, 'human.ask answered (call t3/k0)'],
  ['TurnCompleted', { turn: 3 }, 'Turn 3 completed'],
  ['TurnStarted', { turn: 4 }, 'Turn 4 started'],
  [
    'ModelResponded',
    { turn: 4, model_call_id: `${RUN}/t4/c0`, text: FINAL, tool_calls: [] },
    `Model answered: “${FINAL.slice(0, 159)}…”`,
  ],
  ['TurnCompleted', { turn: 4 }, 'Turn 4 completed'],
  ['Completed', { completed_turns: 4 }, `Completed after 4 completed turns: “${FINAL.slice(0, 159)}…”`],
]);

const failed = run('run-failed', [
  [
    'RunStarted',
    {
      definition_id: 'demo.x',
      definition_version: '2.0.0',
      model_provider: 'openai',
      model_id: 'gpt-x',
      turn_limit: 1,
      plan_fingerprint: 'b'.repeat(64),
    },
    'Started demo.x@2.0.0 with openai/gpt-x, at most 1 turn',
  ],
  ['TurnStarted', { turn: 1 }, 'Turn 1 started'],
  [
    'ToolResulted',
    { call_id: 'run-failed/t1/k0', tool_name: 'webhook.deliver', status: 'error', settled_by: 'effect_owner' },
    'Webhook delivery failed or was refused (operation run-failed:t1:k0), as the effect owner had settled it',
  ],
  ['LaterInvention', { anything: 1 }, 'LaterInvention (an event this page does not describe; see the raw event)'],
  ['Failed', { code: 'model_auth_failed', turn: 1 }, 'Failed in turn 1: model_auth_failed'],
]);
const limited = run('run-limited', [
  [
    'Failed',
    { code: 'turn_limit_reached', completed_turns: 1 },
    'Failed after 1 completed turn: the turn limit was reached (turn_limit_reached)',
  ],
]);
const cancelled = run('run-cancelled', [['Cancelled', { completed_turns: 0 }, 'Cancelled after 0 completed turns']]);

const viewOf = (runId: string, status: string, last: number) => ({
  run_id: runId,
  status,
  completed_turns: 4,
  last_sequence: last,
  waiting_for: null,
  suspend_requested: false,
  failure: status === 'failed' ? { code: 'model_auth_failed', message: 'The provider refused the key.' } : null,
  definition: { id: 'demo.goal-worker', version: '1.0.0' },
  turn_limit: 8,
});

/** The run's page and its event stream answered from `events` (the daemon's event-stream format), the run ended `status`. */
async function serveRun(page: Page, runId: string, status: string, events: readonly Ev[]): Promise<void> {
  const view = viewOf(runId, status, events.length);
  await page.route(
    (url) => url.pathname === `/api/runs/${runId}`,
    (route) => route.fulfill({ json: view }),
  );
  const stream = [
    ...events.map((e) => `event: ${e.type}\nid: ${e.sequence}\ndata: ${JSON.stringify(e)}\n\n`),
    `event: run\ndata: ${JSON.stringify(view)}\n\n`,
  ].join('');
  await page.route(
    (url) => url.pathname === `/api/runs/${runId}/events`,
    (route) =>
      route.fulfill({
        status: 200,
        headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store' },
        body: stream,
      }),
  );
}

async function openRun(page: Page, runId: string, status: string): Promise<void> {
  await page.goto(`${served.daemon.url}#/runs/${runId}`);
  await page
    .getByTestId('run-follow-state')
    .filter({ hasText: `Not following: the run has ended (${status})` })
    .waitFor();
}

const sentences = (page: Page) => page.getByTestId('run-event-text').allTextContents();

let root: string;
let served: SignedInDaemon;
let session: BrowserSession;
let sink: WebhookSink | undefined;

/**
 * Real deliveries of the Goal `news`, made before the daemon starts: a delivery stored; the effect
 * journal lost (effects.db removed), so the same delivery is sent again under its logical key and
 * the receiver replays it; then a run that delivers it once more (not sent: the journal holds it
 * committed) and a new one (stored). Returns the last run's id and the replayed operation.
 */
async function realDeliveries(): Promise<{ last: string; replayed: string }> {
  sink = await startWebhookSink({ port: 0 });
  expect((await loopxAsync(['goal', 'create', 'news', '--title', 'Tell the team', '--root', root])).status).toBe(0);
  const deliver = (message: string) => ({
    text: 'Telling the team.',
    tool_calls: [{ name: 'webhook.deliver', arguments: { message } }],
  });
  const dir = dirname(root);
  const once = agentFile(dir, 'announce', [deliver('the outline is ready'), { text: 'Done.' }]);
  const twice = agentFile(dir, 'publish', [
    deliver('the outline is ready'),
    deliver('the post is published'),
    { text: 'Done.' },
  ]);
  const work = async (agent: string): Promise<string> => {
    const r = await loopxAsync([
      'work',
      'run',
      '--goal',
      'news',
      '--agent',
      agent,
      '--sink',
      sink!.deliveriesUrl,
      '--root',
      root,
      '--json',
    ]);
    expect(r.status, r.stderr).toBe(0);
    return r.json().run_id as string;
  };
  await work(once);
  for (const f of readdirSync(root).filter((n) => n.startsWith('effects.db'))) rmSync(join(root, f));
  const replayed = `${await work(once)}:t1:k0`;
  const last = await work(twice);
  expect(sink.deliveries()).toHaveLength(2);
  return { last, replayed };
}
let real: { last: string; replayed: string };

if (process.env.CI === 'true' && !hasChromium())
  throw new Error("CI=true but no chromium binary: install Debian's chromium (.ci/run does)");
describe.skipIf(!hasChromium())('a run’s events as a timeline, and deduplicated deliveries', () => {
  beforeAll(async () => {
    root = tempRoot('loopx-e2e-timeline-');
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    expect(
      (await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', '--root', root])).status,
    ).toBe(0);
    real = await realDeliveries();
    served = await signedInDaemon(root, AUTHORITY_DIR);
    session = served.session;
    await serveRun(session.page, RUN, 'completed', completed.events);
    await serveRun(session.page, 'run-failed', 'failed', failed.events);
    await serveRun(session.page, 'run-limited', 'failed', limited.events);
    await serveRun(session.page, 'run-cancelled', 'cancelled', cancelled.events);
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    await sink?.close();
    if (root) rmSync(dirname(root), { recursive: true, force: true });
  });

  it('describes every event type of the engine’s vocabulary', () => {
    const shown = new Set([completed, failed, limited, cancelled].flatMap((r) => r.events.map((e) => e.type)));
    for (const type of EVENT_TYPES) expect(shown, `a fixture event of type ${type}`).toContain(type);
  });

  it('shows each event as a line: its sequence, its time and a sentence from what it carries', async () => {
    const { page } = session;
    await openRun(page, RUN, 'completed');
    const lines = page.getByTestId('run-event');
    expect(await lines.count()).toBe(completed.events.length);
    expect(await sentences(page)).toEqual(completed.sentences);
    expect(await lines.first().locator('.ev-seq').textContent()).toBe('Event 1');
    // Its time in the reader's locale (en-US, UTC here), the day on the first line and where the day changes only.
    expect(await lines.first().locator('time').getAttribute('datetime')).toBe('2025-06-01T10:00:00.000Z');
    expect(await lines.first().locator('time').textContent()).toBe('6/1/2025 10:00:00 AM');
    expect(await lines.nth(1).locator('time').textContent()).toBe('10:00:01 AM');

    for (const [r, status] of [
      [failed, 'failed'],
      [limited, 'failed'],
      [cancelled, 'cancelled'],
    ] as const) {
      await openRun(page, r.events[0]!.run_id, status);
      expect(await page.getByTestId('run-event').count()).toBe(r.events.length);
      expect(await sentences(page)).toEqual(r.sentences);
    }
  });

  it('keeps each event’s raw JSON behind its own closed “Raw event” disclosure', async () => {
    const { page } = session;
    await openRun(page, RUN, 'completed');
    const line = page.getByTestId('run-event').nth(11);
    const raw = line.getByTestId('run-event-raw');
    expect(await line.locator('details').getAttribute('open')).toBeNull();
    expect(await raw.isVisible(), 'closed until asked for').toBe(false);
    expect(await page.locator('details > summary').count()).toBe(completed.events.length);
    const summary = line.getByText('Raw event', { exact: false });
    expect(await summary.textContent()).toBe('Raw event 12');
    await summary.click();
    expect(await raw.isVisible()).toBe(true);
    expect(JSON.parse((await raw.textContent())!)).toEqual(completed.events[11]);
    // The raw JSON is not what the line reads as: its sentence does not carry it.
    expect(await line.getByTestId('run-event-text').textContent()).not.toContain('{');
    expect(await axeViolations(page), 'the run’s timeline with a raw event open').toEqual([]);
    await page.setViewportSize({ width: 375, height: 800 });
    try {
      expect(await axeViolations(page), 'the run’s timeline at 375 px').toEqual([]);
      const overflow = (await page.evaluate(
        'document.documentElement.scrollWidth - document.documentElement.clientWidth',
      )) as number;
      expect(overflow, 'nothing wider than the 375 px viewport').toBeLessThanOrEqual(0);
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it('marks a delivery the receiver already held as deduplicated on the run’s timeline, apart from a stored one', async () => {
    const { page } = session;
    await openRun(page, RUN, 'completed');
    const marked = page.locator('[data-testid="run-event"].ev-deduplicated');
    expect(await marked.getByTestId('run-event-text').allTextContents()).toEqual([
      completed.sentences[11],
      completed.sentences[13],
    ]);
    const stored = page.getByTestId('run-event').nth(6);
    expect(await stored.getAttribute('class')).toBeNull();
    expect(await stored.getByTestId('run-event-text').textContent()).not.toContain('deduplicated');
  });

  it('says in the Goal’s effects table which committed deliveries the receiver already held', async () => {
    const { page } = session;
    const at = '2025-06-01T10:00:06.000Z';
    const effect = (operation: string, extra: Record<string, unknown>) => ({
      operation_id: operation,
      kind: 'webhook.deliver',
      target: 'webhook:127.0.0.1:9',
      outcome: 'committed',
      attempt: 1,
      hold: null,
      created_at: at,
      settled_at: at,
      run_id: operation.split(':')[0],
      call_id: operation.replaceAll(':', '/'),
      ...extra,
    });
    await page.route(
      (url) => url.pathname === '/api/goals/launch/activity',
      async (route) => {
        const real = (await (await route.fetch()).json()) as Record<string, unknown>;
        const effects = [
          effect('run-tl:t1:k0', { delivery_result: 'stored', duplicate_of: null }),
          effect('run-tl:t2:k0', { delivery_result: 'replayed', duplicate_of: null }),
          effect('run-tl:t2:k1', { delivery_result: 'not_sent', duplicate_of: 'run-tl:t1:k0', attempt: 0 }),
          // A record from before the daemon said what the receiver did: nothing is claimed.
          effect('run-old:t1:k0', {}),
          effect('run-tl:t3:k0', { outcome: 'rejected', delivery_result: 'replayed' }),
        ];
        await route.fulfill({ json: { ...real, effects } });
      },
    );
    await page.goto(`${served.daemon.url}#/goals/launch`);
    const table = page.getByTestId('goal-effects');
    await table.waitFor();
    expect(await table.getByTestId('effect-outcome').allTextContents()).toEqual([
      'committed — stored by the receiver',
      `committed — ${DEDUPLICATED} (not stored again)`,
      `committed — ${DEDUPLICATED} (not sent again; operation run-tl:t1:k0 delivered it)`,
      'committed',
      'rejected',
    ]);
    expect(await table.locator('tr[data-deduplicated="true"]').count()).toBe(2);
    expect(await table.locator('tr[data-outcome="committed"]').count()).toBe(4);
    expect(await axeViolations(page), 'the Goal page with deduplicated deliveries').toEqual([]);
    await page.setViewportSize({ width: 375, height: 800 });
    try {
      expect(await axeViolations(page), 'the Goal page at 375 px').toEqual([]);
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it('says what the receiver did with real deliveries, from the daemon’s own answers: the Goal’s effects and the run’s timeline', async () => {
    const { page } = session;
    await page.goto(`${served.daemon.url}#/goals/news`);
    const table = page.getByTestId('goal-effects');
    await table.waitFor();
    expect(await table.getByTestId('effect-outcome').allTextContents()).toEqual([
      `committed — ${DEDUPLICATED} (not stored again)`,
      `committed — ${DEDUPLICATED} (not sent again; operation ${real.replayed} delivered it)`,
      'committed — stored by the receiver',
    ]);
    expect(await table.locator('tr[data-deduplicated="true"]').count()).toBe(2);

    await openRun(page, real.last, 'completed');
    const delivered = page
      .locator('[data-testid="run-event"]')
      .filter({ hasText: /webhook/i })
      .filter({ hasText: 'operation' });
    expect(await delivered.getByTestId('run-event-text').allTextContents()).toEqual([
      `Webhook delivery (operation ${real.last}:t1:k0) — ${DEDUPLICATED} (not sent again; operation ${real.replayed} delivered it)`,
      `Delivered webhook (operation ${real.last}:t2:k0): stored by the receiver`,
    ]);
    expect(await page.locator('[data-testid="run-event"].ev-deduplicated').count()).toBe(1);

    await openRun(page, real.replayed.split(':')[0]!, 'completed');
    expect(
      await page.locator('[data-testid="run-event"].ev-deduplicated').getByTestId('run-event-text').allTextContents(),
    ).toEqual([`Webhook delivery (operation ${real.replayed}) — ${DEDUPLICATED} (not stored again)`]);
  });
});
