/**
 * The `loopx` command as users meet it: help on every command, one JSON document with --json,
 * typed errors with a try: hint, and the exit codes of ARCHITECTURE.md (0 done, 1 internal,
 * 2 usage, 3 rejected, 4 conflict).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.js';
import { loopx, tempRoot } from '../support/cli.js';

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
  it('every command answers --help with exit 0', () => {
    const commands = leafCommands();
    expect(commands.length).toBeGreaterThanOrEqual(12);
    const r = loopx(['--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Usage: loopx');
    for (const c of commands) {
      const h = loopx([...c, '--help']);
      expect(h.status, c.join(' ')).toBe(0);
      expect(h.stdout, c.join(' ')).toContain(`Usage: loopx ${c.join(' ')}`);
    }
  }, 60_000);

  it('a usage error exits 2', () => {
    expect(loopx(['run', 'start']).status).toBe(2); // missing --agent
    expect(loopx(['run', 'start', '--agent', AGENT, '--suspend-after-turns', 'two']).status).toBe(2);
    expect(loopx(['no-such-command']).status).toBe(2);
  });

  it('an unknown run is refused with exit 3, a typed code on stdout and a try: hint on stderr', () => {
    const root = tempRoot();
    const r = loopx(['run', 'show', 'run_missing', '--root', root, '--json']);
    expect(r.status).toBe(3);
    expect(r.json()).toEqual({ error: { code: 'run_not_found', message: 'No run run_missing in this root.', next_action: 'list runs: loopx run list' } });
    expect(r.stderr).toMatch(/^loopx: .*\[run_not_found\]\ntry: /);
    expect(r.stdout + r.stderr).not.toContain(root); // no absolute paths in public output
  });

  it('an invalid agent file is refused with agent_definition_invalid', () => {
    const root = tempRoot();
    const bad = join(root, '..', 'bad.json');
    writeFileSync(bad, JSON.stringify({ id: 'x', version: '1', model: { provider: 'scripted', model_id: 'm' }, turn_limit: 1, tool_plan: 'loopx.builtin.v1', surprise: true }));
    const r = loopx(['run', 'start', '--agent', bad, '--root', root, '--json']);
    expect(r.status).toBe(3);
    expect(r.json().error.code).toBe('agent_definition_invalid');
  });

  it('the quickstart journey: start, suspend at a boundary, export, inspect, resume, answer, complete', () => {
    const root = tempRoot();
    const started = loopx(['run', 'start', '--agent', AGENT, '--input', 'Add 2 and 40', '--suspend-after-turns', '2', '--root', root, '--json']);
    expect(started.status).toBe(0);
    const s = started.json();
    expect(Object.keys(s)).toEqual(expect.arrayContaining(['run_id', 'status', 'completed_turns', 'last_sequence']));
    expect(s).toMatchObject({ status: 'suspended', completed_turns: 2 });

    const a = join(root, '..', 'a.snapshot');
    const b = join(root, '..', 'b.snapshot');
    const ea = loopx(['run', 'export', s.run_id, '--out', a, '--root', root, '--json']);
    const eb = loopx(['run', 'export', s.run_id, '--out', b, '--root', root, '--json']);
    expect(ea.status).toBe(0);
    expect(ea.json()).toMatchObject({ run_id: s.run_id, lifecycle: 'suspended', last_sequence: s.last_sequence });
    // Two processes, one run state: byte-identical payloads.
    expect(readFileSync(a).equals(readFileSync(b))).toBe(true);
    expect(eb.json().payload_sha256).toBe(ea.json().payload_sha256);

    // Evidence is never overwritten.
    const again = loopx(['run', 'export', s.run_id, '--out', a, '--root', root, '--json']);
    expect(again.status).toBe(4);
    expect(again.json().error.code).toBe('destination_occupied');

    const inspected = loopx(['run', 'inspect', a, '--json']).json();
    expect(inspected.snapshot).toMatchObject({ run_id: s.run_id, lifecycle: 'suspended', completed_turns: 2, last_sequence: s.last_sequence });
    expect(inspected.snapshot.plan_identity.compatibility_identity).toMatch(/^loopx\.builtin\//);

    const resumed = loopx(['run', 'resume', s.run_id, '--root', root, '--json']).json();
    expect(resumed).toMatchObject({ status: 'active', waiting_for: { kind: 'interaction', interaction_id: 'confirm-1' } });
    const events = loopx(['run', 'events', s.run_id, '--after', String(s.last_sequence), '--root', root, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(events[0]).toMatchObject({ sequence: s.last_sequence + 1, type: 'Resumed' });
    expect(events.map((e: { type: string }) => e.type)).not.toContain('RunStarted');

    const answered = loopx(['run', 'answer', s.run_id, 'confirm-1', 'yes', '--root', root, '--json']).json();
    expect(answered.status).toBe('completed');
    const reused = loopx(['run', 'answer', s.run_id, 'confirm-1', 'again', '--root', root, '--json']);
    expect(reused.status).toBe(3);
    expect(reused.json().error.code).toBe('interaction_id_reused');
  }, 60_000);

  it('loopx demo runs the main job on the embedded default store', () => {
    const root = tempRoot();
    const r = loopx(['demo', '--root', root, '--json']);
    expect(r.status).toBe(0);
    const d = r.json();
    expect(d.run.status).toBe('suspended');
    expect(d.snapshot.lifecycle).toBe('suspended');
    expect(d.inspected.messages.length).toBe(d.snapshot.messages);
    expect(loopx(['run', 'inspect', join(root, d.snapshot.file_in_root)]).status).toBe(0);
    expect(r.stdout).not.toContain(root);
  });
});
