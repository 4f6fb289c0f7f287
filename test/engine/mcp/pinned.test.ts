/**
 * MCP executables are pinned (issue 38): a stdio server's command is resolved when the plan is
 * made — a path in the plan's base directory, a bare name on PATH — and the file's real path and
 * SHA-256 are in the plan identity; every launch runs that file, checked unchanged first. A file
 * swapped after the plan, or a resume from another directory, launches nothing else: it is refused.
 *
 * The servers are real processes: small executables in temporary directories that start the
 * record server of fixtures/. A swapped or decoy one writes a marker file before it starts, so
 * "nothing was spawned" is a file that does not exist.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import {
  builtinApplication,
  computePlanIdentity,
  defineAgent,
  openEngine,
  type AgentDefinition,
  type Engine,
} from '../../../src/engine/index.js';
import {
  mcpStaticTools,
  mcpToolPlan,
  type McpLaunchOptions,
  type McpServerDeclaration,
  type McpToolPlan,
} from '../../../src/engine/mcp/index.js';
import { LocalRunAuthority } from '../../../src/run-authority/index.js';
import { CLI, STATE_HOME, tempRoot } from '../../support/cli.js';
import { expectCode, expectThrowsCode, privateDir } from '../engine-support.js';
import { toolContext } from './support.js';

const RECORD_SERVER = pathToFileURL(join(import.meta.dirname, 'fixtures', 'record-server.mjs')).href;
const NOTE = { type: 'object', properties: { note: { type: 'string' } }, required: ['note'] };

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function dir(prefix = 'loopx-mcp-pin-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/**
 * An executable MCP server at `path`: it starts the record server. With `marker`, it first writes
 * that file — what a swapped or decoy executable would do had it been spawned.
 */
function writeServer(path: string, marker?: string): void {
  const start = `import(${JSON.stringify(RECORD_SERVER)})`;
  const body =
    marker === undefined
      ? `${start};\n`
      : `import('node:fs').then((fs) => { fs.writeFileSync(${JSON.stringify(marker)}, 'spawned'); return ${start}; });\n`;
  writeFileSync(path, `#!${process.execPath}\n${body}`);
  chmodSync(path, 0o755);
}

const rec = (command: string): McpServerDeclaration => ({
  name: 'rec',
  transport: { type: 'stdio', command },
  tools: [{ name: 'record', input_schema: NOTE, mutating: false }],
});

const fingerprint = (decls: readonly McpServerDeclaration[], options: McpLaunchOptions): string => {
  const tools = mcpStaticTools(decls, options);
  return computePlanIdentity({
    components: tools.map((t) => t.identity),
    toolPlanId: 'p',
    compatibilityIdentity: 'c',
    tools: tools.map((t) => t.definition),
  }).fingerprint;
};

function plan(decls: readonly McpServerDeclaration[], options: McpLaunchOptions): McpToolPlan {
  const p = mcpToolPlan('mcp.pinned', decls, options);
  cleanups.push(() => p.close());
  return p;
}

const record = (p: McpToolPlan, note: string) => p.plan.tools[0]!.execute({ note }, toolContext(`r/t1/${note}`));

describe('MCP executables are pinned', () => {
  it('the plan identity binds the executable\u2019s real path and SHA-256: other bytes, or the same bytes elsewhere, are another identity', () => {
    const a = dir();
    const b = dir();
    writeServer(join(a, 'server'));
    writeServer(join(b, 'server'));
    const decls = [rec('./server')];
    const pinned = fingerprint(decls, { baseDir: a });

    expect(fingerprint(decls, { baseDir: b })).not.toBe(pinned);
    writeServer(join(a, 'server'), join(a, 'marker'));
    expect(fingerprint(decls, { baseDir: a })).not.toBe(pinned);
    writeServer(join(a, 'server'));
    expect(fingerprint(decls, { baseDir: a })).toBe(pinned);
    // The real path is inside the digest, never in clear.
    expect(JSON.stringify(mcpStaticTools(decls, { baseDir: a }))).not.toContain(a);
  });

  it('a relative command is resolved against the plan\u2019s base directory, never the current directory, when planned and when launched', async () => {
    const home = dir();
    const [planned, launched] = [dir(), dir()];
    writeServer(join(home, 'server'));
    for (const d of [planned, launched]) writeServer(join(d, 'server'), join(d, 'marker'));
    const cwd = process.cwd();
    cleanups.push(() => process.chdir(cwd));

    process.chdir(planned);
    const p = plan([rec('./server')], { baseDir: home });
    process.chdir(launched);

    expect(await record(p, 'hello')).toMatchObject({ content: [{ type: 'text', text: 'hello' }] });
    expect(existsSync(join(planned, 'marker'))).toBe(false);
    expect(existsSync(join(launched, 'marker'))).toBe(false);
  });

  it('a bare command is found on PATH when the plan is made: the first executable regular file, launched from there', async () => {
    const [notExecutable, directory, executable] = [dir(), dir(), dir()];
    writeFileSync(join(notExecutable, 'loopx-pinned-server'), 'not a program\n', { mode: 0o644 });
    mkdirSync(join(directory, 'loopx-pinned-server'));
    writeServer(join(executable, 'loopx-pinned-server'), join(executable, 'marker'));
    const environment = { PATH: [notExecutable, directory, executable].join(delimiter) };

    const p = plan([rec('loopx-pinned-server')], { environment });
    expect(await record(p, 'found')).toMatchObject({ content: [{ type: 'text', text: 'found' }] });
    expect(existsSync(join(executable, 'marker'))).toBe(true);

    const refused = (over: McpLaunchOptions, command = 'loopx-pinned-server') =>
      expectThrowsCode(() => mcpStaticTools([rec(command)], over), 'mcp_executable_not_found');
    expect(refused({ environment: { PATH: notExecutable } }).details).toEqual({
      server: 'rec',
      reason: 'not_executable',
    });
    expect(refused({ environment: { PATH: directory } }).details).toEqual({ server: 'rec', reason: 'not_a_file' });
    // Without a PATH nothing is found, not even in the base directory.
    const missing = refused({ environment: {}, baseDir: executable });
    expect(missing.details).toEqual({ server: 'rec', reason: 'missing' });
    expect(missing.kind).toBe('rejected');
    expect(missing.nextAction).toBeTruthy();
    expect(JSON.stringify(missing.toJSON())).not.toContain('loopx-pinned-server');
    expect(refused({ baseDir: directory }, './loopx-pinned-server').details).toEqual({
      server: 'rec',
      reason: 'not_a_file',
    });
  });

  it('an executable swapped or removed after the plan was made is refused before launch, and nothing is spawned', async () => {
    const home = dir();
    const server = join(home, 'server');
    const marker = join(home, 'marker');
    writeServer(server);
    const original = readFileSync(server);
    const started: number[] = [];
    const p = plan([rec(server)], { onServerStarted: (_s, pid) => started.push(pid) });

    writeServer(server, marker);
    const changed = await expectCode(p.session(), 'mcp_executable_changed');
    expect(changed.details).toEqual({ server: 'rec', reason: 'changed' });
    expect(changed.kind).toBe('conflict');
    expect(changed.nextAction).toBeTruthy();
    await expectCode(Promise.resolve(record(p, 'x')), 'mcp_executable_changed');
    rmSync(server);
    expect((await expectCode(p.session(), 'mcp_executable_changed')).details).toEqual({
      server: 'rec',
      reason: 'missing',
    });
    expect(existsSync(marker)).toBe(false);
    expect(started).toEqual([]);

    // The pinned bytes back at the pinned path: the plan launches them.
    writeFileSync(server, original, { mode: 0o755 });
    expect(await record(p, 'back')).toMatchObject({ content: [{ type: 'text', text: 'back' }] });
    expect(started).toHaveLength(1);
  });
});

describe('a suspended MCP run with a swapped executable', () => {
  const agent = (command: string): AgentDefinition =>
    defineAgent({
      id: 'test.mcp-pinned',
      version: '1.0.0',
      model: { provider: 'scripted', modelId: 'scripted-v1' },
      turnLimit: 4,
      toolPlan: 'loopx.builtin.v1',
      mcpServers: [rec(command)],
      script: [
        { text: 'one', toolCalls: [{ name: 'rec.record', arguments: { note: 'one' } }] },
        { text: 'two', toolCalls: [{ name: 'rec.record', arguments: { note: 'two' } }] },
        { text: 'done' },
      ],
    });

  it('is refused at resume in the process that made the plan (mcp_executable_changed), and stays suspended', async () => {
    const home = dir();
    const server = join(home, 'server');
    const marker = join(home, 'marker');
    writeServer(server);
    const original = readFileSync(server);
    const base = privateDir('loopx-mcp-pinned-');
    const authority = LocalRunAuthority.open({ dir: join(base, 'authority'), create: true });
    const engine: Engine = openEngine({
      root: join(base, 'root'),
      application: builtinApplication(join(base, 'root')),
      authority,
    });
    cleanups.push(async () => {
      engine.close();
      await authority.close();
    });
    const def = agent(server);
    expect(await engine.start(def, { runId: 'run-pinned', suspendAfterTurns: 1 })).toMatchObject({
      status: 'suspended',
      completed_turns: 1,
    });

    writeServer(server, marker);
    await expectCode(engine.resume('run-pinned'), 'mcp_executable_changed');
    expect(existsSync(marker)).toBe(false);
    expect(await engine.show('run-pinned')).toMatchObject({ status: 'suspended', completed_turns: 1 });

    writeFileSync(server, original);
    expect(await engine.resume('run-pinned')).toMatchObject({ status: 'completed', completed_turns: 3 });
  });

  it('is refused by `loopx run resume` (plan_identity_changed), as is a resume from another directory, and the run stays suspended', () => {
    const home = dir();
    const elsewhere = dir();
    writeServer(join(home, 'server'));
    writeServer(join(elsewhere, 'server'), join(elsewhere, 'marker'));
    const original = readFileSync(join(home, 'server'));
    writeFileSync(join(home, 'agent.json'), JSON.stringify({ ...agentFile(), mcp_servers: [rec('./server')] }));
    const root = tempRoot();
    const loopxIn = (cwd: string, args: string[]) => {
      const r = spawnSync(process.execPath, [...CLI, ...args, '--root', root, '--json'], {
        cwd,
        env: { ...process.env, XDG_STATE_HOME: STATE_HOME },
        encoding: 'utf8',
        timeout: 60_000,
      });
      return { status: r.status, stderr: r.stderr, json: () => JSON.parse(r.stdout) as { [k: string]: unknown } };
    };

    const started = loopxIn(home, ['run', 'start', '--agent', 'agent.json', '--suspend-after-turns', '1']);
    expect(started.status, started.stderr).toBe(0);
    expect(started.json()).toMatchObject({ status: 'suspended', completed_turns: 1 });
    const runId = String(started.json().run_id);

    // From another directory, `./server` is another file: refused, and that file never ran.
    const fromElsewhere = loopxIn(elsewhere, ['run', 'resume', runId]);
    expect(fromElsewhere.status).toBe(3);
    expect(fromElsewhere.json()).toMatchObject({ error: { code: 'plan_identity_changed' } });
    expect(existsSync(join(elsewhere, 'marker'))).toBe(false);

    writeServer(join(home, 'server'), join(home, 'marker'));
    const swapped = loopxIn(home, ['run', 'resume', runId]);
    expect(swapped.status).toBe(3);
    expect(swapped.json()).toMatchObject({ error: { code: 'plan_identity_changed' } });
    expect(existsSync(join(home, 'marker'))).toBe(false);
    expect(loopxIn(home, ['run', 'show', runId]).json()).toMatchObject({ status: 'suspended', completed_turns: 1 });

    writeFileSync(join(home, 'server'), original);
    const resumed = loopxIn(home, ['run', 'resume', runId]);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.json()).toMatchObject({ status: 'completed', completed_turns: 3 });
  }, 120_000); // five CLI processes in a row
});

/** The run's agent in its file form, without its servers. */
function agentFile(): { [k: string]: unknown } {
  return {
    id: 'test.mcp-pinned-cli',
    version: '1.0.0',
    model: { provider: 'scripted', model_id: 'scripted-v1' },
    turn_limit: 4,
    tool_plan: 'loopx.builtin.v1',
    script: [
      { text: 'one', tool_calls: [{ name: 'rec.record', arguments: { note: 'one' } }] },
      { text: 'two', tool_calls: [{ name: 'rec.record', arguments: { note: 'two' } }] },
      { text: 'done' },
    ],
  };
}
