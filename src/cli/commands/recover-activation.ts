/**
 * `loopx recover activation|disable-activation|enable-activation`: the user's recovery activation
 * switch in the run authority. Off, every root and daemon of the user refuses `recover plan`,
 * `apply` and `resolve` (`recover_activation_disabled`); verify, audit, status and abort keep working.
 */
import type { Command } from 'commander';
import type { ActivationSetting } from '../../runtime/index.js';
import { emit, runtime, type GlobalOptions, type Output } from '../context.js';

const print = (s: ActivationSetting, out: Output): void => {
  out.line(
    s.disabled
      ? `recovery activation is off${s.reason === null ? '' : `: ${s.reason}`} (since ${s.changed_at ?? 'unknown'}); plan, apply and resolve are refused, verify and audit work`
      : 'recovery activation is on',
  );
};

export function registerActivation(recover: Command, globals: () => GlobalOptions): void {
  const access = (g: GlobalOptions) => (g.authorityDir !== undefined ? { authorityDir: g.authorityDir } : {});
  recover
    .command('activation')
    .description("whether recovery activation is on for this user (the run authority's switch)")
    .action(async () => {
      const g = globals();
      const { recoveryActivation } = await runtime();
      emit(g, await recoveryActivation(access(g)), print);
    });
  recover
    .command('disable-activation')
    .description(
      'turn recovery activation off for this user: recover plan, apply and resolve refuse; verify and audit keep working',
    )
    .option('--reason <text>', 'why, in one line (shown with every refusal)')
    .action(async (o: { reason?: string }) => {
      const g = globals();
      const { setRecoveryActivation } = await runtime();
      emit(
        g,
        await setRecoveryActivation(access(g), {
          disabled: true,
          ...(o.reason !== undefined ? { reason: o.reason } : {}),
        }),
        print,
      );
    });
  recover
    .command('enable-activation')
    .description('turn recovery activation back on for this user')
    .action(async () => {
      const g = globals();
      const { setRecoveryActivation } = await runtime();
      emit(g, await setRecoveryActivation(access(g), { disabled: false }), print);
    });
}
