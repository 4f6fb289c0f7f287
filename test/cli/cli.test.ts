/**
 * The `loopx` command as users meet it: help on every command, one JSON document with --json,
 * typed errors with a try: hint, and the exit codes of ARCHITECTURE.md (0 done, 1 internal,
 * 2 usage, 3 rejected, 4 conflict).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CommanderError, type Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.js';
import { loopx, loopxAsync, loopxChild, tempRoot, rel } from '../support/cli.js';

const AGENT = 'examples/agents/researcher.json';

function leafCommands(): string[][] {
  const out: string[][] = [];
  const walk = (cmd: ReturnType<typeof buildProgram>, path: string[]) => {
    for (const sub of cmd.commands) {
      const p = [...path, sub.name()];
      out.push(p);
      walk(sub, p);
    }
  };
  walk(buildProgram(), []);
  return out;
}

describe('loopx CLI', () => {
  // One process per command made this test as slow as the machine; the program main() runs is
  // asked in-process instead, and two real processes prove main() exits 0 after help.
  it('every command answers --help (in the program main() runs), and loopx exits 0 after help', async () => {
    const commands = leafCommands();
    expect(commands.length).toBeGreaterThanOrEqual(12);
    for (const c of commands) {
      const program = buildProgram();
      let help = '';
      const capture = (cmd: Command) => {
        cmd.configureOutput({ writeOut: (text) => (help += text), writeErr: (text) => (help += text) });
        cmd.commands.forEach(capture);
      };
      capture(program);
      const outcome = await program.parseAsync([...c, '--help'], { from: 'user' }).then(
        () => 'no help',
        (e: unknown) => (e instanceof CommanderError ? e.code : String(e)),
      );
      expect(outcome, c.join(' ')).toBe('commander.helpDisplayed');
      expect(help, c.join(' ')).toContain(`Usage: loopx ${c.join(' ')}`);
    }
    for (const argv of [['--help'], ['run', 'list', '--help']]) {
      const r = loopx(argv);
      expect(r.status, argv.join(' ')).toBe(0);
      expect(r.stdout).toContain(`Usage: loopx ${argv.slice(0, -1).join(' ')}`.trimEnd());
    }
  });

  it('a usage error exits 2', async () => {
    expect((await loopxAsync(['run', 'start'])).status).toBe(2); // missing --agent
    expect((await loopxAsync(['run', 'start', '--agent', AGENT, '--suspend-after-turns', 'two'])).status).toBe(2);
    expect((await loopxAsync(['no-such-command'])).status).toBe(2);
  });

  it('an unknown run is refused with exit 3, a typed code on stdout and a try: hint on stderr', async () => {
    const root = tempRoot();
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    const r = await loopxAsync(['run', 'show', 'run_missing', '--root', root, '--json']);
    expect(r.status).toBe(3);
    expect(r.json()).toEqual({
      error: {
        code: 'run_not_found',
        message: 'No run run_missing in this root.',
        next_action: `list runs: loopx run list --root ${rel(root)}`,
      },
    });
    expect(r.stderr).toMatch(/^loopx: .*\[run_not_found\]\ntry: /);
    // No absolute paths in public output: the only one is the operator's own --root, carried as given.
    expect((r.stdout + r.stderr).replaceAll(`--root ${rel(root)}`, '--root R')).not.toContain(root);
  }, 60_000);

  it('an invalid agent file is refused with agent_definition_invalid', async () => {
    const root = tempRoot();
    const bad = join(root, '..', 'bad.json');
    writeFileSync(
      bad,
      JSON.stringify({
        id: 'x',
        version: '1',
        model: { provider: 'scripted', model_id: 'm' },
        turn_limit: 1,
        tool_plan: 'loopx.builtin.v1',
        surprise: true,
      }),
    );
    const r = await loopxAsync(['run', 'start', '--agent', bad, '--root', root, '--json']);
    expect(r.status).toBe(3);
    expect(r.json().error.code).toBe('agent_definition_invalid');
  });

  it('the quickstart journey: start, suspend at a boundary, export, inspect, resume, answer, complete', async () => {
    const root = tempRoot();
    const started = await loopxAsync([
      'run',
      'start',
      '--agent',
      AGENT,
      '--input',
      'Add 2 and 40',
      '--suspend-after-turns',
      '2',
      '--root',
      root,
      '--json',
    ]);
    expect(started.status).toBe(0);
    const s = started.json();
    expect(Object.keys(s)).toEqual(expect.arrayContaining(['run_id', 'status', 'completed_turns', 'last_sequence']));
    expect(s).toMatchObject({ status: 'suspended', completed_turns: 2 });

    const a = join(root, '..', 'a.snapshot');
    const b = join(root, '..', 'b.snapshot');
    const ea = await loopxAsync(['run', 'export', s.run_id, '--out', a, '--root', root, '--json']);
    const eb = await loopxChild(['run', 'export', s.run_id, '--out', b, '--root', root, '--json']);
    expect(ea.status).toBe(0);
    expect(ea.json()).toMatchObject({ run_id: s.run_id, lifecycle: 'suspended', last_sequence: s.last_sequence });
    // Two processes, one run state: byte-identical payloads.
    expect(readFileSync(a).equals(readFileSync(b))).toBe(true);
    expect(eb.json().payload_sha256).toBe(ea.json().payload_sha256);

    // Evidence is never overwritten.
    const again = await loopxAsync(['run', 'export', s.run_id, '--out', a, '--root', root, '--json']);
    expect(again.status).toBe(4);
    expect(again.json().error.code).toBe('destination_occupied');

    const inspected = (await loopxAsync(['run', 'inspect', a, '--json'])).json();
    expect(inspected.snapshot).toMatchObject({
      run_id: s.run_id,
      lifecycle: 'suspended',
      completed_turns: 2,
      last_sequence: s.last_sequence,
    });
    expect(inspected.snapshot.plan_identity.compatibility_identity).toMatch(/^loopx\.builtin\//);

    const resumed = (await loopxAsync(['run', 'resume', s.run_id, '--root', root, '--json'])).json();
    expect(resumed).toMatchObject({
      status: 'active',
      waiting_for: { kind: 'interaction', interaction_id: 'confirm-1' },
    });
    const events = (
      await loopxAsync(['run', 'events', s.run_id, '--after', String(s.last_sequence), '--root', root, '--json'])
    ).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events[0]).toMatchObject({ sequence: s.last_sequence + 1, type: 'Resumed' });
    expect(events.map((e: { type: string }) => e.type)).not.toContain('RunStarted');

    const answered = (
      await loopxAsync(['run', 'answer', s.run_id, 'confirm-1', 'yes', '--root', root, '--json'])
    ).json();
    expect(answered.status).toBe('completed');
    const reused = await loopxAsync(['run', 'answer', s.run_id, 'confirm-1', 'again', '--root', root, '--json']);
    expect(reused.status).toBe(3);
    expect(reused.json().error.code).toBe('interaction_id_reused');
  }, 60_000);

  it('loopx demo runs the main job on the embedded default store', async () => {
    const root = tempRoot();
    const r = await loopxAsync(['demo', '--root', root, '--json']);
    expect(r.status).toBe(0);
    const d = r.json();
    expect(d.run.status).toBe('suspended');
    expect(d.snapshot.lifecycle).toBe('suspended');
    expect(d.inspected.messages.length).toBe(d.snapshot.messages);
    expect((await loopxAsync(['run', 'inspect', join(root, d.snapshot.file_in_root)])).status).toBe(0);
    expect(r.stdout).not.toContain(root);
  });
});

/** The command a next action or hint names (`what to do: loopx …`), as the argv to run it as printed. */
function printedCommand(text: string): string[] {
  const at = text.indexOf(': loopx ');
  expect(at, text).toBeGreaterThanOrEqual(0);
  return (text.slice(at + ': loopx '.length).match(/'[^']*'|\S+/g) ?? []).map((w) => w.replace(/^'(.*)'$/, '$1'));
}

describe('refusals and hints keep to the state the command was given', () => {
  it('a read-only command on a missing root is refused with root_not_found (exit 3), never read as empty, and creates nothing', async () => {
    const root = tempRoot();
    for (const argv of [
      ['run', 'list'],
      ['run', 'show', 'run_x'],
      ['run', 'events', 'run_x'],
      ['goal', 'list'],
      ['goal', 'show', 'g'],
      ['todo', 'list', '--goal', 'g'],
    ]) {
      const r = await loopxAsync([...argv, '--root', root, '--json']);
      expect(r.status, argv.join(' ')).toBe(3);
      expect(r.json().error, argv.join(' ')).toMatchObject({
        code: 'root_not_found',
        next_action: `pass the right --root, or create this root: loopx init --root ${rel(root)}`,
      });
      expect(r.stderr, argv.join(' ')).toContain('[root_not_found]');
    }
    expect((await loopxAsync(['run', 'list', '--root', root])).stdout).not.toContain('no runs');
    expect(existsSync(root)).toBe(false);
    // The path given absolute is printed as the operator types it from here, never echoed back absolute; `init`'s hint too.
    const human = await loopxAsync(['goal', 'list', '--root', root]);
    expect(human.stderr).toContain(`loopx init --root ${rel(root)}`);
    expect((human.stdout + human.stderr).replaceAll(rel(root), 'R')).not.toContain(root);
    const init = await loopxAsync(['init', '--root', root]);
    expect(init.status, init.stderr).toBe(0);
    expect(init.stdout + init.stderr).toContain(`--root ${rel(root)}`);
    expect((init.stdout + init.stderr).replaceAll(rel(root), 'R')).not.toContain(root);
  }, 120_000);

  it('after run import --root B --authority-dir D, the hint and the refusals name B and D, and work when run as printed', async () => {
    const a = tempRoot();
    const b = join(a, '..', 'b root'); // a space: the carried flag is quoted for the shell
    const auth = ['--authority-dir', join(a, '..', 'authority')];
    const s = (
      await loopxAsync([
        'run',
        'start',
        '--agent',
        AGENT,
        '--input',
        'Add 2 and 40',
        '--suspend-after-turns',
        '2',
        '--root',
        a,
        ...auth,
        '--json',
      ])
    ).json();
    const snap = join(a, '..', 'run.snapshot');
    expect((await loopxAsync(['run', 'export', s.run_id, '--out', snap, '--root', a, ...auth])).status).toBe(0);

    const imported = await loopxAsync(['run', 'import', snap, '--root', b, ...auth]);
    expect(imported.status).toBe(0);
    const hint = imported.stdout.split('\n').find((l) => l.includes('continue it:'))!;
    expect(hint).toBe(`  continue it: loopx run resume ${s.run_id} --root ${rel(b)} --authority-dir ${rel(auth[1]!)}`);
    const resumed = await loopxAsync([...printedCommand(hint), '--json']);
    expect(resumed.status).toBe(0);
    expect(resumed.json()).toMatchObject({ run_id: s.run_id, status: 'active' });

    // A second import of the same snapshot: the authority it names is D, not the default one.
    const again = await loopxAsync(['run', 'import', snap, '--root', b, ...auth, '--json']);
    expect(again.status).toBe(4);
    const { code, next_action } = again.json().error;
    expect(code).toBe('snapshot_consumed');
    expect(next_action).toBe(
      `find the run where it was imported: loopx authority show --run ${s.run_id} --root ${rel(b)} --authority-dir ${rel(auth[1]!)}`,
    );
    expect(again.stderr).toContain(`try: ${next_action}\n`);
    const shown = await loopxAsync([...printedCommand(next_action), '--json']);
    expect(shown.status).toBe(0);
    expect(shown.json().run).toMatchObject({ run_id: s.run_id, state: 'ACTIVE' });
  }, 120_000);

  it('run_tombstoned names no placeholder: its next action shows how the run ended, and runs as printed', async () => {
    const a = tempRoot();
    const s = (
      await loopxAsync([
        'run',
        'start',
        '--agent',
        AGENT,
        '--input',
        'Add 2 and 40',
        '--suspend-after-turns',
        '2',
        '--root',
        a,
        '--json',
      ])
    ).json();
    const snap = join(a, '..', 'run.snapshot');
    expect((await loopxAsync(['run', 'export', s.run_id, '--out', snap, '--root', a])).status).toBe(0);
    expect((await loopxAsync(['run', 'cancel', s.run_id, '--root', a])).status).toBe(0);

    const b = join(a, '..', 'b');
    const r = await loopxAsync(['run', 'import', snap, '--root', b, '--json']);
    expect(r.status).toBe(4);
    const { code, next_action } = r.json().error;
    expect(code).toBe('run_tombstoned');
    expect(next_action).not.toMatch(/\bFILE\b/);
    const shown = await loopxAsync([...printedCommand(next_action), '--json']);
    expect(shown.status).toBe(0);
    expect(shown.json().run).toMatchObject({ run_id: s.run_id, state: 'TERMINAL' });
  }, 120_000);

  it("todo_not_found names the Goal: its next action lists that Goal's Todos when run as printed", async () => {
    const root = tempRoot();
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    expect((await loopxAsync(['goal', 'create', 'g1', '--title', 'G', '--root', root])).status).toBe(0);
    expect((await loopxAsync(['todo', 'add', '--goal', 'g1', '--title', 'T', '--root', root])).status).toBe(0);
    const r = await loopxAsync([
      'todo',
      'update',
      'nope',
      '--goal',
      'g1',
      '--status',
      'done',
      '--root',
      root,
      '--json',
    ]);
    expect(r.status).toBe(3);
    expect(r.json().error).toMatchObject({
      code: 'todo_not_found',
      next_action: `list the Goal’s Todos: loopx todo list --goal g1 --root ${rel(root)}`,
    });
    const listed = await loopxAsync([...printedCommand(r.json().error.next_action), '--json']);
    expect(listed.status).toBe(0);
    expect(listed.json().todos.map((t: { title: string }) => t.title)).toEqual(['T']);
  }, 60_000);

  it('todo update of several Todos: a repeated id or more than 100 are usage errors and change nothing; a missing one refuses them all', async () => {
    const root = tempRoot();
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    expect((await loopxAsync(['goal', 'create', 'g1', '--title', 'G', '--root', root])).status).toBe(0);
    for (const title of ['A', 'B'])
      expect((await loopxAsync(['todo', 'add', '--goal', 'g1', '--title', title, '--root', root])).status).toBe(0);
    const cases: Array<[string, string[]]> = [
      ['todo_update_repeated', ['t1', 't2', 't1']],
      ['todo_update_too_many', Array.from({ length: 101 }, (_, i) => `t${i + 1}`)],
      ['todo_not_found', ['t1', 'nope']],
    ];
    for (const [code, ids] of cases) {
      const r = await loopxAsync([
        'todo',
        'update',
        ...ids,
        '--goal',
        'g1',
        '--status',
        'done',
        '--root',
        root,
        '--json',
      ]);
      expect(r.status, code).toBe(code === 'todo_not_found' ? 3 : 2);
      expect(r.json().error.code).toBe(code);
    }
    const listed = (await loopxAsync(['todo', 'list', '--goal', 'g1', '--root', root, '--json'])).json();
    expect(listed.todos.map((t: { status: string; todo_revision: number }) => [t.status, t.todo_revision])).toEqual([
      ['open', 1],
      ['open', 1],
    ]);
  }, 60_000);
});
