/**
 * The run page's actions over the daemon, through the same engine calls as the CLI's `run answer`,
 * `run resolve` and `run cancel`, on real runs made by the real CLI (a run waiting for its
 * operator's answer, a run whose mutating call was dispatched when its process was killed, a
 * suspended run): each action's answer is the run summary, each refusal is typed (the engine's
 * own codes; a missing or malformed field is `daemon_field_invalid`), a retry with the same
 * Idempotency-Key gets the original answer. The run view carries the open question and each
 * uncertain call's evidence, path-free (docs/schemas/daemon-run.schema.json). A live event stream
 * (`?follow=until-terminal`) keeps following a waiting or suspended run — changed here or by a CLI
 * process — until it ends, with the run's view as it changes.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens, type DaemonApp } from '../../src/daemon/index.js';
import { FAULT_AFTER_MUTATING_DISPATCH } from '../../src/engine/index.js';
import { cliFromSources, REPO, STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';

// The daemon's in-process engine continues runs CLI children started.
cliFromSources();

/** A JSON document as the daemon answered it (its shape is the schema's, checked where it matters). */
type Doc = any; // eslint-disable-line @typescript-eslint/no-explicit-any
const TOKEN = 'run-actions-token-0123456789';
const authorityDir = join(STATE_HOME, 'loopx', 'run-authority');
const RESEARCHER = 'examples/agents/researcher.json';
const MUTATOR = 'test/fixtures/agents/mutator.json';
/** A generous bound per request on a loaded 2-core box. */
const BOUND_MS = 60_000;

const SCHEMA_DIR = join(REPO, 'docs/schemas');
const ajv = new Ajv2020({ strict: true, allErrors: true });
for (const f of readdirSync(SCHEMA_DIR).filter((n) => n.endsWith('.schema.json')))
  ajv.addSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, f), 'utf8')) as Record<string, unknown>);

let root: string;
let d: DaemonApp;
let port = 0;
const runs = { waiting: '', streamed: '', uncertain: '', suspended: '', cancelledElsewhere: '' };

async function start(args: string[], env: Record<string, string> = {}): Promise<string> {
  const r = await loopxAsync(['run', 'start', '--agent', ...args, '--root', root, '--json'], env);
  if (env.LOOPX_TEST_FAULT) {
    expect(r.signal, r.stderr).toBe('SIGKILL');
    const listed = (await loopxAsync(['run', 'list', '--root', root, '--json'])).json() as {
      runs: { run_id: string; definition: { id: string } }[];
    };
    return listed.runs.find((x) => x.definition.id === 'test.mutator')!.run_id;
  }
  expect(r.status, r.stderr).toBe(0);
  return r.json().run_id as string;
}

beforeAll(async () => {
  root = tempRoot('loopx-daemon-run-actions-');
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  runs.uncertain = await start([MUTATOR], { LOOPX_TEST_FAULT: FAULT_AFTER_MUTATING_DISPATCH });
  [runs.waiting, runs.streamed, runs.suspended, runs.cancelledElsewhere] = await Promise.all([
    start([RESEARCHER]),
    start([RESEARCHER]),
    start([RESEARCHER, '--suspend-after-turns', '1']),
    start([RESEARCHER, '--suspend-after-turns', '1']),
  ]);
  d = await buildApp({
    root,
    token: TOKEN,
    loginTokens: new LoginTokens(),
    port: () => port,
    authorityDir,
    logger: false,
  });
  await d.app.listen({ host: '127.0.0.1', port: 0 });
  port = (d.app.server.address() as { port: number }).port;
}, 120_000);

afterAll(async () => {
  await d?.backups.close();
  await d?.app.close();
});

const api = (path: string, init: { method?: string; body?: unknown; key?: string; signal?: AbortSignal } = {}) =>
  fetch(`http://127.0.0.1:${port}/api/${path}`, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${TOKEN}`,
      ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(init.key !== undefined ? { 'idempotency-key': init.key } : {}),
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    signal: init.signal ?? AbortSignal.timeout(BOUND_MS),
  });
async function post(path: string, body?: unknown, key?: string): Promise<{ status: number; json: Doc; text: string }> {
  const res = await api(path, {
    method: 'POST',
    ...(body !== undefined ? { body } : {}),
    ...(key !== undefined ? { key } : {}),
  });
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text) as Doc, text };
}
/** A refusal: its status and code. */
async function refused(path: string, body?: unknown): Promise<[number, string]> {
  const r = await post(path, body);
  return [r.status, r.json.error?.code as string];
}
/** The run view, checked against daemon-run.schema.json and for paths. */
async function view(id: string): Promise<Doc> {
  const res = await api(`runs/${id}`);
  expect(res.status).toBe(200);
  const doc = (await res.json()) as Doc;
  expectRunView(doc);
  return doc;
}
function expectRunView(doc: unknown): void {
  const validate = ajv.getSchema('https://loopx.dev/schemas/daemon-run.json')!;
  expect(validate(doc) ? [] : validate.errors).toEqual([]);
  expect(JSON.stringify(doc)).not.toContain(dirname(root));
}

describe('answer: the question a waiting run asks', () => {
  it('the run view says what the run waits for: the interaction id and its prompt', async () => {
    expect((await view(runs.waiting)).waiting_for).toEqual({
      kind: 'interaction',
      interaction_id: 'confirm-1',
      prompt: 'Is 42 the answer you expected?',
    });
  });

  it('refuses a missing or empty field, another interaction and an unknown run, and leaves the run waiting', async () => {
    const path = `runs/${runs.waiting}/answer`;
    expect(await refused(path, { text: 'yes' })).toEqual([400, 'daemon_field_invalid']);
    expect(await refused(path, { interaction_id: 'confirm-1', text: '' })).toEqual([400, 'daemon_field_invalid']);
    expect(await refused(path)).toEqual([400, 'daemon_field_invalid']);
    expect(await refused(path, { interaction_id: 'confirm-2', text: 'yes' })).toEqual([422, 'interaction_not_pending']);
    // A run this root and the run authority do not know: refused before anything is read, as the CLI's `run answer`.
    expect(await refused('runs/run_nope/answer', { interaction_id: 'confirm-1', text: 'yes' })).toEqual([
      422,
      'run_authority_record_missing',
    ]);
    expect(await view(runs.waiting)).toMatchObject({
      status: 'active',
      waiting_for: { kind: 'interaction', interaction_id: 'confirm-1' },
    });
  });

  it(
    'answers it and the run goes on to its end; a retry with the same key gets the same answer; the id is used once',
    async () => {
      const path = `runs/${runs.waiting}/answer`;
      const first = await post(path, { interaction_id: 'confirm-1', text: 'yes, 42' }, 'answer-1');
      expect(first.status, first.text).toBe(200);
      expect(first.json).toMatchObject({
        run_id: runs.waiting,
        status: 'completed',
        waiting_for: null,
        completed_turns: 4,
      });
      const again = await post(path, { interaction_id: 'confirm-1', text: 'yes, 42' }, 'answer-1');
      expect([again.status, again.text]).toEqual([200, first.text]);
      expect(await refused(path, { interaction_id: 'confirm-1', text: 'yes again' })).toEqual([
        422,
        'interaction_id_reused',
      ]);
      // The answer is in the run, as the CLI's would be.
      const shown = (await loopxAsync(['run', 'show', runs.waiting, '--root', root, '--json'])).json();
      expect(shown).toMatchObject({ status: 'completed' });
    },
    BOUND_MS,
  );
});

describe('resolve: an uncertain mutating call, with the evidence the run and the effect owner hold', () => {
  const callId = () => `${runs.uncertain}/t1/k0`;

  it('the run view shows each uncertain call with its tool, its arguments by digest, what the receiver was asked, how often and when', async () => {
    const v = await view(runs.uncertain);
    expect(v).toMatchObject({ status: 'active', waiting_for: { kind: 'resolution', call_ids: [callId()] } });
    const [call] = v.waiting_for.effects as Doc[];
    const args = JSON.stringify({ message: 'deliver once' });
    expect(call).toMatchObject({
      call_id: callId(),
      operation_id: callId().replaceAll('/', ':'),
      outcome: 'pending',
      evidence: {
        call_id: callId(),
        tool: 'outbox.append',
        turn: 1,
        arguments: {
          sha256: createHash('sha256').update(args).digest('hex'),
          bytes: Buffer.byteLength(args),
          fields: ['message'],
        },
        effect: { kind: 'outbox.append', target: 'file:outbox.jsonl', attempts: 1, hold: null, reconcile_attempts: 0 },
      },
    });
    expect(call!.evidence.effect.dispatched_at).toEqual(expect.any(String));
    expect(call!.evidence.effect.history.map((h: { event: string; outcome: string }) => [h.event, h.outcome])).toEqual([
      ['intent', 'pending'],
      ['dispatch', 'pending'],
    ]);
    // The arguments' values and the intent stay out of the answer.
    expect(JSON.stringify(v)).not.toContain('deliver once');
  });

  it('refuses a resolution the CLI would not take, a call the run does not have, and a result that is not JSON, and leaves the call uncertain', async () => {
    const path = `runs/${runs.uncertain}/resolve`;
    expect(await refused(path, { call_id: callId(), resolution: 'maybe' })).toEqual([400, 'daemon_field_invalid']);
    expect(await refused(path, { call_id: callId(), resolution: 'committed' })).toEqual([400, 'daemon_field_invalid']);
    expect(await refused(path, { call_id: callId(), resolution: 'absent', result: '{}' })).toEqual([
      400,
      'daemon_field_invalid',
    ]);
    expect(await refused(path, { resolution: 'absent' })).toEqual([400, 'daemon_field_invalid']);
    expect(await refused(path, { call_id: `${runs.uncertain}/t9/k0`, resolution: 'absent' })).toEqual([
      404,
      'call_not_found',
    ]);
    expect(await refused(path, { call_id: callId(), resolution: 'committed', result: 'not json' })).toEqual([
      422,
      'resolution_result_invalid',
    ]);
    expect((await view(runs.uncertain)).waiting_for).toMatchObject({ kind: 'resolution', call_ids: [callId()] });
  });

  it(
    'resolves it as the CLI does (committed with its result): the run takes the outcome and goes on; a second resolution is refused',
    async () => {
      const path = `runs/${runs.uncertain}/resolve`;
      const r = await post(path, { call_id: callId(), resolution: 'committed', result: '{"delivered":true}' });
      expect(r.status, r.text).toBe(200);
      expect(r.json).toMatchObject({ run_id: runs.uncertain, status: 'completed', waiting_for: null });
      expect(await refused(path, { call_id: callId(), resolution: 'absent' })).toEqual([422, 'call_not_uncertain']);
      const events = (await loopxAsync(['run', 'events', runs.uncertain, '--root', root, '--json'])).stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Doc);
      expect(
        events.filter((e) => e.type === 'ToolResulted' && e.data.call_id === callId()).map((e) => e.data.status),
      ).toEqual(['mutation_uncertain', 'ok']);
    },
    BOUND_MS,
  );
});

describe('cancel', () => {
  it('cancels a suspended run; a finished run and an unknown run are refused', async () => {
    const r = await post(`runs/${runs.suspended}/cancel`, undefined, 'cancel-1');
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ run_id: runs.suspended, status: 'cancelled', waiting_for: null });
    expect(await post(`runs/${runs.suspended}/cancel`, undefined, 'cancel-1')).toMatchObject({
      status: 200,
      text: r.text,
    });
    expect(await refused(`runs/${runs.suspended}/cancel`)).toEqual([422, 'run_terminal']);
    expect(await refused('runs/run_nope/cancel')).toEqual([422, 'run_authority_record_missing']);
    expect((await loopxAsync(['run', 'show', runs.suspended, '--root', root, '--json'])).json()).toMatchObject({
      status: 'cancelled',
    });
  });
});

/** An event stream read as it arrives: each SSE message (event name and parsed data) and whether it ended. */
function openStream(path: string) {
  const abort = new AbortController();
  const messages: { event: string; data: Doc }[] = [];
  let ended = false;
  const waiters: (() => void)[] = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  const done = (async () => {
    const res = await api(path, { signal: abort.signal });
    expect(res.status).toBe(200);
    let buffer = '';
    const decoder = new TextDecoder();
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let at = buffer.indexOf('\n\n'); at >= 0; at = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (data !== undefined) messages.push({ event, data: JSON.parse(data) as Doc });
      }
      wake();
    }
    ended = true;
    wake();
  })();
  /** Wait (within the bound) until `pred` holds of what arrived. */
  const until = async (pred: () => boolean, what: string) => {
    const deadline = Date.now() + BOUND_MS;
    while (!pred()) {
      if (ended || Date.now() > deadline) throw new Error(`the stream ${ended ? 'ended' : 'timed out'} before ${what}`);
      await new Promise<void>((r) => waiters.push(r));
    }
  };
  return { messages, until, done, isEnded: () => ended, close: () => abort.abort() };
}

describe('a live event stream (?follow=until-terminal)', () => {
  it('refuses an unknown follow mode', async () => {
    const res = await api(`runs/${runs.streamed}/events?follow=sometimes`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('daemon_field_invalid');
  });

  it('without it the stream of a waiting run ends when every event is delivered, as before', async () => {
    const text = await (await api(`runs/${runs.streamed}/events`)).text();
    expect(text).toContain('event: InteractionRequested');
    expect(text).not.toContain('event: run');
  });

  it(
    'keeps following a waiting run with its view: a suspend request from a CLI process (no event) and an answer given meanwhile arrive, and the stream ends with the run',
    async () => {
      const s = openStream(`runs/${runs.streamed}/events?follow=until-terminal`);
      const views = () => s.messages.filter((m) => m.event === 'run').map((m) => m.data);
      try {
        await s.until(
          () => views().length > 0 && s.messages.some((m) => m.event === 'InteractionRequested'),
          'the first view and the question',
        );
        expectRunView(views()[0]);
        expect(views()[0]).toMatchObject({
          status: 'active',
          suspend_requested: false,
          waiting_for: { kind: 'interaction', interaction_id: 'confirm-1' },
        });
        // A suspend request writes no event: the view, read again on the stream's own timer, carries it.
        const requested = await loopxAsync(['run', 'suspend', runs.streamed, '--root', root, '--json']);
        expect(requested.json(), requested.stderr).toMatchObject({ status: 'active', suspend_requested: true });
        await s.until(() => views().some((v) => v.suspend_requested === true), 'the suspend request');
        // Answered here, the run goes on to its next boundary and suspends there, as requested.
        const r = await post(`runs/${runs.streamed}/answer`, { interaction_id: 'confirm-1', text: 'yes' });
        expect(r.status, r.text).toBe(200);
        expect(r.json).toMatchObject({ status: 'suspended' });
        await s.until(
          () => s.messages.some((m) => m.event === 'Suspended') && views().at(-1)?.status === 'suspended',
          'the suspension',
        );
        expect(s.isEnded()).toBe(false);
        expect((await post(`runs/${runs.streamed}/cancel`)).status).toBe(200);
        await s.done;
        const names = s.messages.map((m) => m.event);
        expect(names).toEqual(expect.arrayContaining(['InteractionAnswered', 'Suspended', 'Cancelled']));
        expect(names.filter((n) => n !== 'run').at(-1)).toBe('Cancelled');
        expect(s.messages.at(-1)).toMatchObject({ event: 'run', data: { status: 'cancelled', waiting_for: null } });
        const sequences = s.messages.filter((m) => m.event !== 'run').map((m) => m.data.sequence as number);
        expect(sequences).toEqual(sequences.map((_, i) => i + 1));
      } finally {
        s.close();
      }
    },
    BOUND_MS,
  );

  it(
    'keeps following a suspended run; a cancel from a CLI process arrives without asking again, and the stream ends',
    async () => {
      const s = openStream(`runs/${runs.cancelledElsewhere}/events?follow=until-terminal`);
      try {
        await s.until(
          () => s.messages.some((m) => m.event === 'Suspended') && s.messages.some((m) => m.event === 'run'),
          'the suspended run',
        );
        expect(s.messages.find((m) => m.event === 'run')!.data.status).toBe('suspended');
        expect(s.isEnded()).toBe(false);
        const cancelled = await loopxAsync(['run', 'cancel', runs.cancelledElsewhere, '--root', root, '--json']);
        expect(cancelled.status, cancelled.stderr).toBe(0);
        await s.done;
        expect(s.messages.some((m) => m.event === 'Cancelled')).toBe(true);
        expect(s.messages.at(-1)).toMatchObject({ event: 'run', data: { status: 'cancelled' } });
      } finally {
        s.close();
      }
    },
    BOUND_MS,
  );

  it('ends at once for a run that has ended, after its events and its view', async () => {
    const text = await (await api(`runs/${runs.suspended}/events?follow=until-terminal`)).text();
    expect(text).toContain('event: Cancelled');
    expect(text.trimEnd().split('\n\n').at(-1)).toMatch(/^event: run\ndata: .*"status":"cancelled"/);
  });
});
