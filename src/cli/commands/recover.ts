/**
 * `loopx recover plan | apply | status | resolve | abort`: recover one Goal of a verified backup
 * workspace into a new, empty runtime root — a digest-bound plan and its preview, a confirmed
 * apply through the owners, holds settled through their owners, and a status read back from the
 * plan, the journal and the owners (src/runtime/recover.ts). The digest the operator confirms is
 * the one `recover plan` printed: apply derives the plan again and never trusts the plan file's
 * word (`recover_plan_tampered`). Nothing here grants execution:
 * after `complete`, `loopx work run --root <destination>` continues the Goal through ordinary
 * admission.
 */
import type { Command } from 'commander';
import { EXIT_CODES, operatorPath, usageError } from '../../core/index.js';
import type { AdoptionPlan, RecoveryStatus } from '../../runtime/index.js';
import { emit, exitAfterOutput, resolveRoot, runtime, type GlobalOptions, type Output } from '../context.js';
import { progressBar } from '../progress.js';
import { registerActivation } from './recover-activation.js';

const access = (g: GlobalOptions) => ({
  ...(g.authorityDir !== undefined ? { authorityDir: g.authorityDir } : {}),
  liveRoot: resolveRoot(g),
});

function printPlan(plan: AdoptionPlan, out: Output): void {
  const d = operatorPath(plan.destination.path);
  out.line(
    `recovery plan for Goal ${plan.goal.goal_id} "${plan.goal.title}" from backup ${plan.audit.backup_id} (${plan.audit.achieved_profile} capture)`,
  );
  out.line(`  plan digest: ${plan.plan_digest}`);
  const section = (title: string, items: readonly string[]) => {
    out.line(`  ${title}:`);
    for (const i of items.length > 0 ? items : ['none']) out.line(`    - ${i}`);
  };
  section('recovered and readable', plan.preview.recovered_readable);
  section('historical only', plan.preview.historical_only);
  section('lost or unknown', plan.preview.lost_or_unknown);
  section('holds expected', plan.preview.expected_holds);
  section('external systems that will be asked', plan.preview.external_systems);
  section('human actions left', plan.preview.human_actions);
  out.line(`  steps: ${plan.steps.map((s) => s.action).join(' → ')}`);
  out.line('  nothing live was touched; execution authority granted: no');
  out.hint(`  next: confirm and apply: loopx recover apply --destination ${d} --confirm ${plan.plan_digest}`);
}

function printStatus(s: RecoveryStatus, out: Output): void {
  out.line(`recovery ${s.recovery_id.slice(0, 16)}… of Goal ${s.goal.goal_id} (backup ${s.backup_id}): ${s.state}`);
  out.line(
    `  plan digest ${s.plan_digest}; capture ${s.capture.achieved_profile} (requested ${s.capture.requested_profile ?? 'unknown'})`,
  );
  const v = s.verification;
  out.line(
    `  components: ${v.verified} verified, ${v.invalid} invalid, ${v.missing} missing, ${v.ambiguous} ambiguous, ${v.unsupported} unsupported, ${v.unknown} unknown`,
  );
  out.line(`  Goal lifetime: ${s.goal.recovered_instance_id} → ${s.goal.new_instance_id ?? 'not yet adopted'}`);
  out.line(
    `  steps: ${s.phase.completed_steps}/${s.phase.total_steps} done${s.phase.current ? `; next step ${s.phase.current}` : ''}`,
  );
  for (const r of s.receipts) out.line(`    ${r.action.padEnd(28)} ${r.result.padEnd(8)} ${r.disposition}`);
  if (s.timing.apply_ms !== null)
    out.line(
      `  the apply took ${(s.timing.apply_ms / 1000).toFixed(1)} s${s.timing.held_ms !== null ? `; it then stood held ${(s.timing.held_ms / 1000).toFixed(1)} s until its holds were settled (waiting on an operator, not the apply's time)` : ''}`,
    );
  if (s.last_durable_receipt)
    out.line(
      `  last durable receipt: ${s.last_durable_receipt.action} (${s.last_durable_receipt.owner}, ${s.last_durable_receipt.result})`,
    );
  out.line(
    `  writer fences: source ${s.fences.source_established ? 'established' : 'not established'}, destination ${s.fences.destination_established ? 'established' : 'not established'}`,
  );
  out.line(`  holds: ${s.holds.length}`);
  for (const h of s.holds) {
    out.hint(`    ${h.hold_id} (${h.owner}, ${h.code}): until ${h.continuation} — ${h.next_action}`);
    if (h.hold_id.startsWith('receiver:') && h.retryable)
      out.hint(
        `      (hold digest ${h.digest}: confirm it with --receiver-gone once you know the receiver will never answer again)`,
      );
  }
  for (const r of s.resolved_holds)
    out.line(`  settled: ${r.hold_id} ${r.outcome}${r.reason !== undefined ? ` (operator: ${r.reason})` : ''}`);
  out.line(`  retryable: ${s.retryable ? 'yes' : 'no'}; execution authority granted: no — the owners admit new work`);
  out.hint(`  next: ${s.next_action}`);
}

export function register(program: Command, globals: () => GlobalOptions): void {
  const recover = program
    .command('recover')
    .description('recover one Goal of a verified backup into a new, empty runtime root');
  registerPlan(recover, globals);
  registerApply(recover, globals);
  registerStatus(recover, globals);
  registerResolve(recover, globals);
  registerAbort(recover, globals);
  registerDrill(recover, globals);
  registerActivation(recover, globals);
}

/** `loopx recover plan`: re-verify the workspace and write the digest-bound adoption plan into the destination. */
function registerPlan(recover: Command, globals: () => GlobalOptions): void {
  recover
    .command('plan')
    .description(
      're-verify the workspace and write a digest-bound adoption plan into the destination; prints what will be recovered, kept as history or lost',
    )
    .requiredOption('--from <workspace>', 'a verified recovery workspace (the destination backup-state verify wrote)')
    .requiredOption('--goal <goal-id>', 'the Goal to recover')
    .requiredOption('--destination <dir>', 'a new, empty directory (it becomes the new runtime root)')
    .option(
      '--database-url <reference>',
      'the new root keeps its Goal state in PostgreSQL: env:NAME, the variable holding the URL (read at run time, never stored)',
    )
    .option(
      '--pg-schema <name>',
      "with --database-url: the new root's schema, which must hold no loopx installation (default: a new loopx_<hex>)",
    )
    .option(
      '--repo <url>',
      'the repository the verified backup came from: it is pinned there (kept by every forget) until this recovery completes or is abandoned',
    )
    .action(
      async (o: {
        from: string;
        goal: string;
        destination: string;
        databaseUrl?: string;
        pgSchema?: string;
        repo?: string;
      }) => {
        const g = globals();
        if (o.pgSchema !== undefined && o.databaseUrl === undefined) {
          throw usageError(
            'recover_store_options_invalid',
            '--pg-schema goes with --database-url (a destination on PostgreSQL).',
            'see its options: loopx recover plan --help',
          );
        }
        const store =
          o.databaseUrl === undefined
            ? undefined
            : { databaseUrl: o.databaseUrl, ...(o.pgSchema !== undefined ? { schema: o.pgSchema } : {}) };
        const { planRecovery, publicPlan } = await runtime();
        const plan = await planRecovery({
          ...access(g),
          workspace: o.from,
          goalId: o.goal,
          destination: o.destination,
          ...(store ? { store } : {}),
          ...(o.repo !== undefined ? { repository: o.repo } : {}),
        });
        emit(g, publicPlan(plan), (_doc, out) => printPlan(plan, out));
      },
    );
}

/** `loopx recover apply`: apply the confirmed plan through the owners, with a progress bar on a terminal. */
function registerApply(recover: Command, globals: () => GlobalOptions): void {
  recover
    .command('apply')
    .description('apply the confirmed plan through the owners; ends complete or reconciliation_held')
    .requiredOption('--destination <dir>', 'the destination the plan was written into')
    .requiredOption(
      '--confirm <plan-digest>',
      'the plan digest `recover plan` printed (apply derives the plan again and refuses a plan file that differs)',
    )
    .action(async (o: { destination: string; confirm: string }) => {
      const g = globals();
      const { applyRecovery } = await runtime();
      const bar = process.stderr.isTTY ? progressBar(process.stderr) : undefined;
      try {
        const status = await applyRecovery(
          { ...access(g), onStep: (step, i, total) => bar?.update(i / total, `${step.action} (${step.owner})`, true) },
          o.destination,
          o.confirm,
        );
        bar?.end();
        emit(g, status, printStatus);
      } finally {
        bar?.end();
      }
    });
}

/** `loopx recover status`: the recovery state read back from the plan, the journal and the owners. */
function registerStatus(recover: Command, globals: () => GlobalOptions): void {
  recover
    .command('status')
    .description('the recovery state, read back from the plan, the journal and the owners')
    .requiredOption('--destination <dir>', 'the recovery destination')
    .action(async (o: { destination: string }) => {
      const g = globals();
      const { recoveryStatusOf } = await runtime();
      emit(g, await recoveryStatusOf(access(g), o.destination), printStatus);
    });
}

/** `loopx recover resolve`: settle one hold through its owner. */
function registerResolve(recover: Command, globals: () => GlobalOptions): void {
  recover
    .command('resolve')
    .description("settle one hold through its owner: ask the external system again, or record the operator's evidence")
    .requiredOption('--destination <dir>', 'the recovery destination')
    .requiredOption('--hold <hold-id>', 'the hold, as status lists it')
    .option('--outcome <outcome>', 'an effect hold: settle it from your own evidence, committed or absent')
    .option(
      '--receiver-gone',
      'a receiver hold: the receiver will never answer again — its unknown deliveries are abandoned (never sent) and this Goal sends it nothing more',
    )
    .option('--confirm <hold-digest>', 'with --receiver-gone: the hold digest recover status shows')
    .option('--reason <text>', 'with --receiver-gone: why you know it is gone (recorded with the settlement)')
    .action(
      async (o: {
        destination: string;
        hold: string;
        outcome?: string;
        receiverGone?: boolean;
        confirm?: string;
        reason?: string;
      }) => {
        const g = globals();
        const { resolveRecoveryHold, settlementFrom } = await runtime();
        emit(g, await resolveRecoveryHold(access(g), o.destination, o.hold, settlementFrom(o)), printStatus);
      },
    );
}

/** `loopx recover abort`: abandon a recovery that has not changed a live owner yet. */
function registerAbort(recover: Command, globals: () => GlobalOptions): void {
  recover
    .command('abort')
    .description('abandon a recovery that has not changed a live owner yet (the plan stays as evidence)')
    .requiredOption('--destination <dir>', 'the recovery destination')
    .action(async (o: { destination: string }) => {
      const g = globals();
      const { abortRecovery } = await runtime();
      emit(g, await abortRecovery(access(g), o.destination), printStatus);
    });
}

/** `loopx recover drill`: the rehearsal on synthetic state, its receipt (with the digest of the targets it judged by) printed whatever the outcome. */
function registerDrill(recover: Command, globals: () => GlobalOptions): void {
  recover
    .command('drill')
    .description(
      'rehearse the recovery of one Goal end to end on disposable synthetic state (its own temporary roots, users and receiver; never yours) and report each measured figure beside its target',
    )
    .option('--short', 'the short drill: two crash points of the apply and one of the resolve instead of every one')
    .option('--keep', "keep the drill's temporary state for inspection")
    .option(
      '--cross-host',
      'also recover on another host (its own home and run authority) from an encrypted repository, and bring the old host back',
    )
    .action(async (o: { short?: boolean; keep?: boolean; crossHost?: boolean }) => {
      const g = globals();
      const { runRecoveryDrill, renderReceipt } = await runtime();
      const progress =
        process.stderr.isTTY && !g.json ? (line: string) => process.stderr.write(`  ${line}\n`) : undefined;
      const { receipt, kept } = await runRecoveryDrill({
        command: [...process.execArgv, process.argv[1]!],
        mode: o.short ? 'short' : 'full',
        keep: o.keep === true,
        crossHost: o.crossHost === true,
        ...(progress ? { onProgress: progress } : {}),
      });
      emit(g, receipt, (r, out) => {
        renderReceipt(r, (text) => out.line(text));
        if (kept !== undefined) out.line(`  the drill's state is kept in ${operatorPath(kept)} (remove it when done)`);
      });
      // Every figure is printed; a missed target still fails the command.
      if (receipt.result !== 'targets_met') exitAfterOutput(EXIT_CODES.rejected);
    });
}
