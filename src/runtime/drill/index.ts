/**
 * `loopx recover drill`: the whole one-Goal recovery on disposable synthetic state — a private
 * temporary directory with its own roots, its own users' run authorities and its own receiver,
 * never the operator's — measured against the targets frozen in targets.json (targets.ts), whose
 * digest the receipt prints; it refuses to run against a targets file that is not valid. The stages run in
 * the order an incident would: the source works, is captured, works on and dies; the operator
 * recovers and continues; the old source comes back and tries; then the variants, the crash at
 * every owner commit point and the refusals run against the same verified backup.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startWebhookSink } from '../../dev/index.js';
import { refusals } from './cases.js';
import { DrillCli } from './cli.js';
import {
  APPLY_CRASH_POINTS,
  RESOLVE_CRASH_POINTS,
  SHORT_CRASH_POINTS,
  SHORT_RESOLVE_CRASH_POINTS,
  type DrillMode,
} from './definition.js';
import { crossHost } from './cross-host.js';
import { crashEveryCommitPoint } from './faults.js';
import { recoverAndContinue } from './journey.js';
import { oldWritersTry } from './old-writers.js';
import { buildReceipt, type DrillReceipt } from './receipt.js';
import { prepareSource, withOwnReceiver, writeAgents, type DrillContext } from './source.js';
import { assertDrillTargets } from './targets.js';
import { onlineCaptures, receiverDown } from './variants.js';

export { renderReceipt, type DrillReceipt } from './receipt.js';
export { DRILL_SCHEMA, type DrillMode } from './definition.js';
export { DRILL_TARGETS, DRILL_TARGETS_SHA256, type DrillTargets } from './targets.js';

export interface DrillOptions {
  /** Node's arguments that start this CLI (`[...process.execArgv, entry]`). */
  readonly command: readonly string[];
  readonly mode: DrillMode;
  /** Keep the temporary state for inspection (its location is returned, never put in the receipt). */
  readonly keep?: boolean;
  /** Also rehearse the recovery on another host from an encrypted repository (cross-host.ts); the receipt says which variant ran. */
  readonly crossHost?: boolean;
  readonly onProgress?: (line: string) => void;
}

export async function runRecoveryDrill(
  options: DrillOptions,
): Promise<{ receipt: DrillReceipt; kept: string | undefined }> {
  assertDrillTargets();
  const startedAt = new Date().toISOString();
  const dir = mkdtempSync(join(tmpdir(), 'loopx-drill-'));
  chmodSync(dir, 0o700);
  const sinkJournal = join(dir, 'receiver.jsonl');
  const ctx: DrillContext = {
    dir,
    cli: new DrillCli(options.command, join(dir, 'state')),
    sink: await startWebhookSink({ port: 0, journalPath: sinkJournal }),
    sinkJournal,
    agents: writeAgents(dir),
    user: (name) => {
      mkdirSync(join(dir, 'users'), { recursive: true, mode: 0o700 });
      return join(dir, 'users', name);
    },
    progress: options.onProgress ?? (() => undefined),
  };
  try {
    const source = await prepareSource(ctx);
    const journey = await recoverAndContinue(ctx, source);
    const oldWriters = await oldWritersTry(ctx, source, journey);
    const held = await withOwnReceiver(ctx, 'receiver-down', () => receiverDown(ctx, journey.workspace));
    const crashes = await crashEveryCommitPoint(
      ctx,
      journey.workspace,
      options.mode === 'full'
        ? { apply: APPLY_CRASH_POINTS, resolve: RESOLVE_CRASH_POINTS }
        : { apply: SHORT_CRASH_POINTS, resolve: SHORT_RESOLVE_CRASH_POINTS },
    );
    const cases = await refusals(ctx, source, journey.workspace);
    const online = await onlineCaptures(ctx);
    const cross = options.crossHost === true ? await crossHost(ctx) : undefined;
    const ledger = ctx.sink.attempts();
    const storedMessages = ctx.sink.deliveries().map((d) => {
      const body = d.body as { message?: unknown } | null;
      return typeof body?.message === 'string' ? body.message : d.body_sha256;
    });
    const receipt = buildReceipt({
      drillId: `drill_${randomBytes(8).toString('hex')}`,
      mode: options.mode,
      startedAt,
      source,
      journey,
      oldWriters,
      crashes,
      cases,
      held,
      online,
      ...(cross !== undefined ? { crossHost: cross } : {}),
      receiver: { counts: ledger.counts, storedMessages },
    });
    return { receipt, kept: options.keep ? dir : undefined };
  } finally {
    await ctx.sink.close();
    if (!options.keep) rmSync(dir, { recursive: true, force: true });
  }
}
