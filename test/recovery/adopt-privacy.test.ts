/**
 * §9 "Privacy boundary holds": a source whose state holds a credential-looking secret (in a Goal
 * document, a Todo's text and note, and a delivery's body), session content (the agent's turn
 * texts) and private absolute paths (its temporary directories), backed up and verified. Every
 * `recover` subcommand — plan, apply, status, resolve (a real hold and an unknown one), abort (of
 * an untouched plan, and refused after the first step) and the refusals of plan and apply — is run
 * by an operator in the user's directory with the paths as typed, in text and in --json, while the
 * receiver is down (holds) and once it is back. Nothing any of them prints, on stdout or stderr,
 * holds an absolute path of the directories, the secret, the document or a turn text. The private
 * files keep what they must (the plan names the workspace's absolute path; the recovered state
 * holds the secret), and the destination, its recovery directory and every file in it are
 * owner-only.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { agentFile, type Doc } from './support/adopt.js';
import { cliIn, effectsOf } from './support/adopt-users.js';

const SECRET = `sk-live-${randomBytes(16).toString('hex')}`;
const DOC = `deploy notes: the production key is ${SECRET}`;
const TURNS = [
  `Reading the confidential roadmap ${randomBytes(6).toString('hex')}.`,
  `Announcing the rotation ${randomBytes(6).toString('hex')}.`,
  `All rotated ${randomBytes(6).toString('hex')}.`,
];

let sink: WebhookSink;
let dir: string;
let journal: string;
/** Everything the recover commands printed: the command, then its stdout and stderr. */
const printed: { command: string; out: string }[] = [];

/** The CLI as the operator in `dir`, with relative paths; a recover command's output is collected. */
async function cli(args: readonly string[], expectStatus?: number): Promise<Doc> {
  const r = await cliIn(dir, [...args, '--authority-dir', 'authority']);
  if (args[0] === 'recover') printed.push({ command: args.join(' '), out: `${r.stdout}\n${r.stderr}` });
  if (expectStatus !== undefined) expect(r.status, `${args.join(' ')}\n${r.stderr}${r.stdout}`).toBe(expectStatus);
  return args.includes('--json') && r.stdout.trim().startsWith('{') ? r.json() : undefined;
}
/** A recover command in text and in --json; the JSON document. */
async function both(args: readonly string[], status: number): Promise<Doc> {
  await cli(args, status);
  return cli([...args, '--json'], status);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'loopx-adopt-privacy-'));
  journal = join(dir, 'sink.jsonl');
  sink = await startWebhookSink({ port: 0, journalPath: journal });
  const agent = agentFile(dir, 'rotate', [
    {
      text: TURNS[0]!,
      tool_calls: [{ name: 'todo.update', arguments: { todo_id: 't1', status: 'done', note: `rotated to ${SECRET}` } }],
    },
    { text: TURNS[1]!, tool_calls: [{ name: 'webhook.deliver', arguments: { message: `the new key is ${SECRET}` } }] },
    { text: TURNS[2]! },
  ]);
  await cli(['init', '--root', 'root'], 0);
  await cli(
    ['goal', 'create', 'launch', '--title', 'Ship the launch post', '--doc', `brief=${DOC}`, '--root', 'root'],
    0,
  );
  await cli(
    ['todo', 'add', '--goal', 'launch', '--title', 'Rotate the keys', '--text', `replace ${SECRET}`, '--root', 'root'],
    0,
  );
  // The delivery reaches the receiver, its answer is lost: an unknown outcome, held at recovery while the receiver is down.
  sink.failNext('drop_response_after_store');
  await cli(['work', 'run', '--goal', 'launch', '--agent', agent, '--sink', sink.deliveriesUrl, '--root', 'root'], 0);
  await cli(
    [
      'backup-state',
      '--execute',
      '--profile',
      'quiescent',
      '--output-dir',
      'backups',
      '--backup-id',
      'p1',
      '--root',
      'root',
    ],
    0,
  );
  await cli(
    [
      'backup-state',
      'verify',
      '--archive',
      'backups/p1.tar.gz',
      '--manifest',
      'backups/p1.manifest.json',
      '--destination',
      'workspace',
      '--execute',
      '--root',
      'root',
    ],
    0,
  );
  await sink.close();
  await runEveryRecoverCommand();
}, 240_000);
afterAll(async () => {
  await sink.close();
});

/** Every recover subcommand and refusal, in text and --json: first with the receiver down, then with it back. */
async function runEveryRecoverCommand(): Promise<void> {
  const planArgs = (destination: string, goal = 'launch') => [
    'recover',
    'plan',
    '--from',
    'workspace',
    '--goal',
    goal,
    '--destination',
    destination,
    '--root',
    'root',
  ];
  await cli(planArgs('R-text'), 0);
  const plan = await cli([...planArgs('R'), '--json'], 0);
  await both(['recover', 'status', '--destination', 'R'], 0);
  await both(['recover', 'apply', '--destination', 'R', '--confirm', '0'.repeat(64)], 3);
  await both(planArgs('R-none', 'nope'), 3);
  await both(planArgs('root/nested'), 3);
  await both(planArgs('R'), 4);
  await both(['recover', 'abort', '--destination', 'R-text'], 0);
  await both(['recover', 'apply', '--destination', 'R', '--confirm', plan.plan_digest], 0);
  const held = await both(['recover', 'status', '--destination', 'R'], 0);
  expect(held.state).toBe('reconciliation_held');
  await both(['recover', 'resolve', '--destination', 'R', '--hold', 'effect:no-such-operation'], 3);
  for (const h of held.holds as { hold_id: string }[])
    await both(['recover', 'resolve', '--destination', 'R', '--hold', h.hold_id], 0);
  await both(['recover', 'abort', '--destination', 'R'], 4);
  sink = await startWebhookSink({ port: sink.port, journalPath: journal });
  // Each hold clears once: the first in text, the next in JSON.
  for (const [i, h] of (held.holds as { hold_id: string }[]).entries())
    await cli(['recover', 'resolve', '--destination', 'R', '--hold', h.hold_id, ...(i % 2 ? ['--json'] : [])], 0);
  expect((await both(['recover', 'status', '--destination', 'R'], 0)).state).toBe('complete');
}

/** Every file and directory under `root` (itself included) with its permission bits. */
function modes(root: string): Record<string, number> {
  const out: Record<string, number> = { '.': statSync(root).mode & 0o777 };
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, e.name);
      out[path.slice(root.length + 1)] = statSync(path).mode & 0o777;
      if (e.isDirectory()) walk(path);
    }
  };
  walk(root);
  return out;
}

describe('recover keeps the privacy boundary', () => {
  it('ran every subcommand, in text and JSON, held and complete', () => {
    const all = printed.map((p) => p.out).join('\n');
    for (const code of [
      'recover_confirm_mismatch',
      'recover_goal_not_in_backup',
      'verify_destination_inside_runtime_root',
      'recover_destination_not_empty',
      'recover_hold_not_found',
      'recover_abort_too_late',
    ])
      expect(all).toContain(code);
    for (const state of [
      'adoption_prepared',
      'abandoned',
      'reconciliation_held',
      'complete',
      'effect_outcome_unknown',
      'receiver_unreachable',
    ])
      expect(all).toContain(state);
    expect(printed.length).toBeGreaterThanOrEqual(30);
  });

  it('prints every suggested command with the operator’s own flags, as typed', () => {
    const suggested = printed
      .filter((p) => !p.command.endsWith('--json'))
      .flatMap((p) => p.out.split('\n').filter((l) => l.includes(': loopx ')));
    expect(suggested.length).toBeGreaterThanOrEqual(20);
    expect(suggested.filter((l) => !l.endsWith(' --authority-dir authority'))).toEqual([]);
  });

  it('prints no private path, secret, document or session text, on stdout or stderr', () => {
    const forbidden = [dir, realpathSync(dir), SECRET, 'sk-live-', DOC, ...TURNS];
    const leaks = printed.flatMap((p) =>
      forbidden.filter((f) => p.out.includes(f)).map((f) => `${p.command}: ${f === SECRET ? 'the secret' : f}`),
    );
    expect(leaks).toEqual([]);
  });

  it('keeps them where they belong: the private plan and the recovered state', async () => {
    const plan = JSON.parse(readFileSync(join(dir, 'R', 'recovery', 'plan.json'), 'utf8'));
    expect(plan.workspace.path).toBe(join(realpathSync(dir), 'workspace'));
    const todos = (await cli(['todo', 'list', '--goal', 'launch', '--root', 'R', '--json'], 0)).todos as {
      note: string | null;
    }[];
    expect(todos[0]!.note).toBe(`rotated to ${SECRET}`);
    const delivery = (await effectsOf(join(dir, 'R'))).find((e) => e.kind === 'webhook.deliver')!;
    expect(JSON.parse(delivery.intent).body.message).toBe(`the new key is ${SECRET}`);
  });

  it('keeps the destination, its recovery directory and every file in them owner-only', () => {
    const m = modes(join(dir, 'R'));
    expect({
      root: m['.'],
      recovery: m['recovery'],
      plan: m['recovery/plan.json'],
      seal: m['recovery/plan.seal.json'],
      journal: m['recovery/journal.jsonl'],
    }).toEqual({
      root: 0o700,
      recovery: 0o700,
      plan: 0o600,
      seal: 0o600,
      journal: 0o600,
    });
    expect(Object.entries(m).filter(([, mode]) => (mode & 0o077) !== 0)).toEqual([]);
    expect(
      Object.keys(m)
        .filter((p) => p.startsWith('recovery/'))
        .sort(),
    ).toEqual(['recovery/journal.jsonl', 'recovery/lock', 'recovery/plan.json', 'recovery/plan.seal.json']);
  });
});
