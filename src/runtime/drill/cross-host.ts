/**
 * The cross-host variant (`loopx recover drill --cross-host`): a Goal recovered on another host
 * from a repository, as an operator does after losing a machine. Host A works the Goal and backs
 * it up, encrypted, into a directory repository (another disk, in a real deployment), and is lost.
 * Host B — its own HOME, state and data directories and its own run authority, holding only the
 * repository's key; it never saw A's root or A's authority — verifies the backup from the
 * repository with the key, plans (pinning it) and applies the recovery, and continues the Goal's
 * open Todo: B's authority mints the new lifetime. Then A comes back and starts a work run: it
 * must ask the receiver, learn of the newer lifetime and be refused (`goal_lifetime_superseded`)
 * before it sends anything — A's own authority never heard of the recovery.
 *
 * Against a receiver of its own (its journal in the drill's directory), so that the main journey's
 * ledger is not touched. What it does not rehearse: another machine or network (both hosts are
 * processes of this machine, as the drill's other users are); `test/recovery/cross-host.test.ts`
 * runs the same journey with B in a network namespace of its own, against S3.
 */
import { join } from 'node:path';
import { startWebhookSink, type WebhookSink } from '../../dev/index.js';
import { expectOk, type CliOutcome, type Doc } from './cli.js';
import { GOAL } from './definition.js';
import { firstTurnAt, type Phase } from './journey.js';
import { newSourceRoot, type DrillContext } from './source.js';

export interface CrossHost {
  readonly case: string;
  readonly expected: string;
  readonly observed: string;
  readonly met: boolean;
  /** The other host's recovery, timed per phase, and its RTO (repository supplied → first admitted turn). */
  readonly phases: readonly Phase[];
  readonly rto_ms: number;
  readonly repository: { readonly kind: 'directory'; readonly encrypted: true };
  /** What the old host's work run was answered when it came back, and what reached the receiver from it. */
  readonly old_host: { readonly code: string | null; readonly attempts_after_recovery: number };
  readonly continued: { readonly run_status: string; readonly todo_done: boolean };
}

const EXPECTED =
  'verified from the repository, complete, the Todo done on the new host; the old host refused goal_lifetime_superseded with nothing sent';

type Run = (args: readonly string[]) => Promise<CliOutcome>;
interface Hosts {
  readonly a: { readonly user: string; readonly root: string; readonly run: Run };
  readonly b: { readonly user: string; readonly home: string; readonly run: Run };
  readonly repo: string;
  readonly key: string;
}

/** Host A works the Goal and backs it up, encrypted for host B's key, into the repository. */
async function hostABacksUp(ctx: DrillContext, sink: WebhookSink): Promise<Hosts> {
  const a = { user: ctx.user('host-a'), root: join(ctx.dir, 'host-a', 'root') };
  const b = { user: ctx.user('host-b'), home: join(ctx.dir, 'host-b') };
  const h: Hosts = {
    a: { ...a, run: (args) => ctx.cli.run(a.user, args) },
    b: { ...b, run: (args) => ctx.cli.run(b.user, args, { home: b.home }) },
    repo: join(ctx.dir, 'repository'),
    key: join(b.home, 'offsite.key'),
  };
  await newSourceRoot(ctx, a.root, a.user);
  const work = ['work', 'run', '--goal', GOAL, '--agent', ctx.agents.before, '--sink', sink.deliveriesUrl];
  expectOk(await h.a.run([...work, '--root', a.root]));
  expectOk(await h.a.run(['repo', 'init', '--repo', h.repo, '--encrypt']));
  const recipient = expectOk(await h.b.run(['repo', 'key', 'new', '--out', h.key])).recipient as string;
  const backup = ['backup-state', '--execute', '--profile', 'quiescent', '--repo', h.repo, '--backup-id', 'cross'];
  expectOk(await h.a.run([...backup, '--encrypt', '--recipient', recipient, '--root', a.root]));
  return h;
}

/** Host B, holding only the key: verify from the repository, plan (pinning it), apply, resolve, continue — each phase timed. */
async function hostBRecovers(ctx: DrillContext, h: Hosts, sink: WebhookSink) {
  const phases: Phase[] = [];
  const timed = async (phase: Phase['phase'], args: readonly string[]): Promise<Doc> => {
    const t = performance.now();
    try {
      return expectOk(await h.b.run(args));
    } finally {
      phases.push({ phase, elapsed_ms: Math.round(performance.now() - t) });
    }
  };
  const supplied = Date.now();
  const workspace = join(h.b.home, 'workspace');
  const destination = join(h.b.home, 'recovered');
  const from = ['--repo', h.repo, '--backup-id', 'cross', '--key', `file:${h.key}`];
  const verified = await timed('verify', ['backup-state', 'verify', ...from, '--destination', workspace, '--execute']);
  const plan = await timed('plan', [
    'recover',
    'plan',
    '--from',
    workspace,
    '--goal',
    GOAL,
    '--destination',
    destination,
    '--repo',
    h.repo,
  ]);
  const confirm = ['--destination', destination, '--confirm', plan.plan_digest as string];
  let status = await timed('apply', ['recover', 'apply', ...confirm]);
  for (const hold of status.holds as { hold_id: string }[])
    status = await timed('resolve', ['recover', 'resolve', '--destination', destination, '--hold', hold.hold_id]);
  const work = ['work', 'run', '--goal', GOAL, '--agent', ctx.agents.cont, '--sink', sink.deliveriesUrl];
  const run = await timed('first_turn', [...work, '--root', destination]);
  const firstTurn = await firstTurnAt(ctx, h.b.user, destination, run.run_id as string);
  const todos = expectOk(await h.b.run(['todo', 'list', '--goal', GOAL, '--root', destination])).todos as {
    todo_id: string;
    status: string;
  }[];
  return {
    phases,
    rto_ms: Math.max(0, firstTurn - supplied),
    audited: verified.phase as string,
    state: status.state as string,
    run_status: run.status as string,
    todo_done: todos.some((t) => t.todo_id === 't3' && t.status === 'done'),
  };
}

/** Host A comes back and starts a work run: what it is answered, and how many deliveries the receiver saw it attempt. */
async function hostAComesBack(ctx: DrillContext, h: Hosts, sink: WebhookSink) {
  ctx.progress('variant: the old host comes back and starts a work run');
  const before = sink.attempts().attempts.length;
  const work = ['work', 'run', '--goal', GOAL, '--agent', ctx.agents.after, '--sink', sink.deliveriesUrl];
  const back = await h.a.run([...work, '--root', h.a.root]);
  return {
    code: back.code ?? null,
    exit: back.status,
    attempts_after_recovery: sink.attempts().attempts.length - before,
  };
}

export async function crossHost(ctx: DrillContext): Promise<CrossHost> {
  ctx.progress('variant: recovery on another host, from an encrypted repository');
  const sink = await startWebhookSink({ port: 0, journalPath: join(ctx.dir, 'receiver-cross-host.jsonl') });
  try {
    const hosts = await hostABacksUp(ctx, sink);
    const b = await hostBRecovers(ctx, hosts, sink);
    const a = await hostAComesBack(ctx, hosts, sink);
    const met =
      // Held is a verification too: the audit says what it holds back, and the recovery goes on from it.
      (b.audited === 'audited' || b.audited === 'held') &&
      b.state === 'complete' &&
      b.run_status === 'completed' &&
      b.todo_done &&
      a.code === 'goal_lifetime_superseded' &&
      a.attempts_after_recovery === 0;
    const done = b.todo_done ? ' with the Todo done' : '';
    const answered = a.code ?? `exit ${a.exit}`;
    return {
      case: 'recovery on another host from an encrypted repository; the old host comes back',
      expected: EXPECTED,
      observed: `${b.audited} from the repository, ${b.state}, run ${b.run_status}${done}; the old host ${answered} with ${a.attempts_after_recovery} attempt(s) at the receiver`,
      met,
      phases: b.phases,
      rto_ms: b.rto_ms,
      repository: { kind: 'directory', encrypted: true },
      old_host: { code: a.code, attempts_after_recovery: a.attempts_after_recovery },
      continued: { run_status: b.run_status, todo_done: b.todo_done },
    };
  } finally {
    await sink.close();
  }
}
