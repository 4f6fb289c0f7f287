/** `loopx authority init|show|rotate|retire|bind-root` — the per-user run authority and the binding of a root to its directory. Never prints key material. */
import type { Command } from 'commander';
import { toHex, usageError } from '../../core/index.js';
import type { LocalRunAuthority } from '../../runtime/index.js';
import { emit, existingRoot, runtime, withAuthority, withEngine, type GlobalOptions } from '../context.js';
import { parseCount } from '../parse.js';

const describe = (a: LocalRunAuthority) => ({
  scope_id: toHex(a.scopeId),
  current_key_generation: a.currentKeyGeneration(),
  key_generations: a.keyGenerations(),
});

const print = (d: ReturnType<typeof describe>, out: { line(t?: string): void }) => {
  out.line(`scope ${d.scope_id}`);
  out.line(`current key generation ${d.current_key_generation}`);
  for (const g of d.key_generations) out.line(`  generation ${g.generation}${g.retired ? ' (retired)' : ''}`);
};

/** One run's authority record as `authority show --run` prints it, or null without one. */
const runRecordView = async (a: LocalRunAuthority, runId: string) => {
  const rec = await a.readRecord(runId);
  if (!rec) return null;
  const { recordNextAction } = await runtime();
  return {
    run_id: rec.runId,
    state: rec.state,
    transition_generation: rec.transitionGeneration,
    owner_root: rec.ownerRoot,
    payload_sha256: rec.payloadSha256 ?? null,
    last_sequence: rec.lastSequence ?? null,
    next_action: recordNextAction(rec),
  };
};

/** `bind-root --adopt`: the move to this authority previewed, or done with the previewed digest. */
async function adoptRoot(g: GlobalOptions, confirm: string | undefined): Promise<void> {
  const a = await withEngine(g, (engine) => engine.adoptAuthority(confirm));
  emit(g, a, (x, out) => {
    if (x.state === 'unchanged') out.line(`root ${x.root_id} already belongs to this authority`);
    else if (x.state === 'adopted')
      out.line(
        `root ${x.root_id} now belongs to this authority (${x.to_authority}); writers under ${x.from_authority ?? 'no recorded authority'} are refused`,
      );
    else {
      out.line(
        `root ${x.root_id} belongs to authority ${x.from_authority ?? '(none recorded)'}; this one is ${x.to_authority}.`,
      );
      out.line(
        'Moving it makes this authority the only one whose writers it admits; Goal lifetimes the other authority recorded as superseded are not known here.',
      );
      out.hint(`what to do: loopx authority bind-root --adopt --confirm ${x.digest}`);
    }
  });
}

/** `authority init`: create the authority directory, scope id and first key. */
function registerInit(authority: Command, globals: () => GlobalOptions): void {
  authority
    .command('init')
    .description('create the authority directory, scope id and first key (idempotent)')
    .action(async () => {
      const g = globals();
      const d = await withAuthority(g, describe, { create: true });
      emit(g, d, print);
    });
}

/** `authority bind-root`: bind the root to its directory, or move it to this authority with --adopt. */
function registerBindRoot(authority: Command, globals: () => GlobalOptions): void {
  authority
    .command('bind-root')
    .description(
      'bind this runtime root (--root) to its directory: once for a root whose runs were recorded before roots were bound, or after its device changed; refused while the directory it is bound to still exists',
    )
    .option(
      '--adopt',
      'move this root to this authority (it belongs to another one today); previews unless --confirm is given',
    )
    .option('--confirm <digest>', 'with --adopt: the digest the preview printed')
    .action(async (o: { adopt?: boolean; confirm?: string }) => {
      const g = globals();
      await existingRoot(g);
      if (o.confirm !== undefined && o.adopt !== true)
        throw usageError(
          'confirm_without_adopt',
          '--confirm goes with --adopt.',
          'preview the move first: loopx authority bind-root --adopt',
        );
      if (o.adopt === true) return adoptRoot(g, o.confirm);
      const d = await withEngine(g, (engine) => engine.bindRootDirectory());
      emit(g, d, (x, out) =>
        out.line(
          `root ${x.root_id}: ${x.binding === 'unchanged' ? 'already bound to this directory' : 'bound to this directory'}; a copy of it owns no runs`,
        ),
      );
    });
}

/** `authority show`: the scope id and key generations, and with --run one run's record. */
function registerShow(authority: Command, globals: () => GlobalOptions): void {
  authority
    .command('show')
    .description('print the scope id and key generations (never key material); --run shows one run record')
    .option('--run <id>', 'also show the authority record of this run')
    .action(async (o: { run?: string }) => {
      const g = globals();
      const d = await withAuthority(
        g,
        async (a) => ({ ...describe(a), ...(o.run ? { run: await runRecordView(a, o.run) } : {}) }),
        { create: false },
      );
      emit(g, d, (doc, out) => {
        print(doc, out);
        if (o.run)
          out.line(
            doc.run
              ? `run ${doc.run.run_id}: ${doc.run.state}, transition generation ${doc.run.transition_generation}, owner ${doc.run.owner_root}`
              : `run ${o.run}: no record`,
          );
        if (doc.run?.next_action) out.line(`  next: ${doc.run.next_action}`);
      });
    });
}

/** `authority rotate`: add a key generation. */
function registerRotate(authority: Command, globals: () => GlobalOptions): void {
  authority
    .command('rotate')
    .description('add a key generation; older generations stay verifiable until retired')
    .action(async () => {
      const g = globals();
      const d = await withAuthority(g, (a) => {
        a.rotate();
        return describe(a);
      });
      emit(g, d, print);
    });
}

/** `authority retire <generation>`: retire a key generation so its claims stop verifying. */
function registerRetire(authority: Command, globals: () => GlobalOptions): void {
  authority
    .command('retire <generation>')
    .description('retire a key generation: its claims stop verifying')
    .action(async (generation: string) => {
      const g = globals();
      let gen: number;
      try {
        gen = parseCount(generation);
      } catch {
        throw usageError(
          'generation_invalid',
          'The generation must be a whole number.',
          'list the key generations: loopx authority show',
        );
      }
      const d = await withAuthority(g, (a) => {
        a.retire(gen);
        return describe(a);
      });
      emit(g, d, print);
    });
}

export function register(program: Command, globals: () => GlobalOptions): void {
  const authority = program
    .command('authority')
    .description('the per-user run authority that signs snapshots and owns runs');
  registerInit(authority, globals);
  registerBindRoot(authority, globals);
  registerShow(authority, globals);
  registerRotate(authority, globals);
  registerRetire(authority, globals);
}
