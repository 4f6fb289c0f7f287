/**
 * Commands are loaded on use (src/cli/main.ts): building the program — `--version`, `--help` of
 * any command, a usage error — loads commander, core and the CLI's own modules, never the runtime,
 * a driver or an SDK. Counted, not timed: each case runs the built CLI module by module
 * (dist/src/cli/main.js, as bin/loopx.js runs it when no bundle is newer) in a real child process
 * whose module loader records every module it loads — the ES modules through a `load` hook
 * (module.register), the CommonJS ones from the require cache at exit. The installed entry,
 * bin/loopx.js, runs the bundle of the same modules (dist/cli/, scripts/bundle-cli.mjs): its chunks
 * keep the same laziness, which the last cases count.
 * `npm run bench -- cold-start` measures the time the same cases take.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import * as facts from '../../src/cli/runtime-facts.js';
import {
  DEFAULT_CLUSTER_SCHEMA,
  MAX_TODOS_PER_UPDATE,
  parseProfile,
  storeChoices,
  takesServiceOptions,
  TODO_STATUSES,
} from '../../src/runtime/index.js';
import { DATA_HOME, loopx, REPO, STATE_HOME, tempRoot } from '../support/cli.js';

/** The most ES modules building the program may load (50 when this test was written; 418 before commands were loaded on use). */
const MAX_ES_MODULES = 80;
/**
 * The most ES modules `run show <id>` may load: 407 measured when this ceiling was set (408
 * before), with ~15% headroom. It is high because the runtime's public module still re-exports
 * backup, recovery, the drill and the cluster statically.
 */
const MAX_RUN_SHOW_ES_MODULES = 470;
/**
 * Packages only a feature `run show` does not use brings in: the AI SDK, the MCP SDK, the daemon's
 * server, and Ajv (a tool's argument schema is compiled on its first call, never by a read).
 */
const NOT_FOR_RUN_SHOW = ['@ai-sdk/', '@modelcontextprotocol/', 'fastify', 'ajv', '@aws-sdk/'];
/** Packages only a feature uses: building the program loads none of them. */
const FEATURE_PACKAGES = [
  'pg',
  'ai',
  '@ai-sdk/',
  '@modelcontextprotocol/',
  'fastify',
  'better-sqlite3',
  '@aws-sdk/',
  '@smithy/',
];

const HOOKS = mkdtempSync(join(tmpdir(), 'loopx-cold-start-'));
afterAll(() => rmSync(HOOKS, { recursive: true, force: true }));
/** The built CLI module by module, exactly as bin/loopx.js runs it when there is no newer bundle. */
const UNBUNDLED = join(HOOKS, 'unbundled.mjs');
writeFileSync(
  UNBUNDLED,
  `import { main } from ${JSON.stringify(pathToFileURL(join(REPO, 'dist/src/cli/main.js')).href)};\nprocess.exitCode = await main(process.argv.slice(2));\n`,
);
/** The installed entry: the bundle (test/support/cli-build.ts made it newer than the build). */
const INSTALLED = join(REPO, 'bin/loopx.js');
// The loader hooks run on their own thread: each module is appended to the log before it is evaluated.
writeFileSync(
  join(HOOKS, 'hooks.mjs'),
  `import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function load(url, context, next) {
  if (url.startsWith('file:')) appendFileSync(log, 'esm ' + url + '\\n');
  return next(url, context);
}
`,
);
writeFileSync(
  join(HOOKS, 'count.mjs'),
  `import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
const log = process.env.LOOPX_MODULE_LOG;
register(${JSON.stringify(pathToFileURL(join(HOOKS, 'hooks.mjs')).href)}, { data: { log } });
const cache = createRequire(import.meta.url).cache;
process.on('exit', () => appendFileSync(log, Object.keys(cache).map((f) => 'cjs ' + pathToFileURL(f).href + '\\n').join('')));
`,
);

interface Loaded {
  readonly status: number | null;
  readonly stdout: string;
  readonly esm: readonly string[];
  readonly cjs: readonly string[];
}

let runs = 0;
/** `loopx …args` in a child process, and the modules it loaded. */
function modulesOf(args: readonly string[], entry = UNBUNDLED): Loaded {
  const log = join(HOOKS, `modules-${++runs}.log`);
  writeFileSync(log, '');
  const r = spawnSync(process.execPath, ['--import', pathToFileURL(join(HOOKS, 'count.mjs')).href, entry, ...args], {
    cwd: REPO,
    env: { ...process.env, XDG_STATE_HOME: STATE_HOME, XDG_DATA_HOME: DATA_HOME, LOOPX_MODULE_LOG: log },
    encoding: 'utf8',
    timeout: 60_000,
  });
  const lines = readFileSync(log, 'utf8').split('\n');
  const of = (kind: string) => lines.filter((l) => l.startsWith(`${kind} `)).map((l) => l.slice(kind.length + 1));
  return { status: r.status, stdout: r.stdout, esm: of('esm'), cjs: of('cjs') };
}

/** The packages among `urls`, by name (`@scope/name` or `name`). */
const packagesOf = (urls: readonly string[]): Set<string> =>
  new Set(
    urls.flatMap((u) => {
      const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u);
      return m ? [m[1]!] : [];
    }),
  );
const feature = (pkgs: Set<string>): string[] =>
  [...pkgs].filter((p) => FEATURE_PACKAGES.some((f) => (f.endsWith('/') ? p.startsWith(f) : p === f)));

describe('cold start', () => {
  it(`--version, --help and a command's --help load at most ${MAX_ES_MODULES} ES modules, and no runtime`, () => {
    for (const args of [
      ['--version'],
      ['--help'],
      ['run', 'show', '--help'],
      ['todo', 'update', '--help'],
      ['backup-state', '--help'],
    ]) {
      const r = modulesOf(args);
      expect(r.status, args.join(' ')).toBe(0);
      expect(r.esm.length, `${args.join(' ')} loaded ${r.esm.length} ES modules`).toBeLessThanOrEqual(MAX_ES_MODULES);
      expect(r.esm.length, args.join(' ')).toBeGreaterThan(3); // the log is written: the entry, main and commander at least
      const below = r.esm.filter((u) => /\/dist\/src\/(?!cli\/|core\/)/.test(u));
      expect(below, `${args.join(' ')} loaded layers below the CLI`).toEqual([]);
    }
  });

  it('--version loads none of pg, the AI SDK, the MCP SDK, Fastify or better-sqlite3', () => {
    const r = modulesOf(['--version']);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(feature(packagesOf([...r.esm, ...r.cjs]))).toEqual([]);
    expect([...packagesOf([...r.esm, ...r.cjs])].sort()).toEqual(['canonicalize', 'commander']);
  });

  it('a usage error loads no runtime either, and still exits 2', () => {
    const r = modulesOf(['run', 'start']);
    expect(r.status).toBe(2);
    expect(r.esm.filter((u) => /\/dist\/src\/(?!cli\/|core\/)/.test(u))).toEqual([]);
  });

  it('run show loads the runtime it reads with, and no driver or SDK a run read does not use', () => {
    const root = tempRoot();
    const started = loopx(['run', 'start', '--agent', 'examples/agents/minimal.json', '--root', root, '--json']);
    expect(started.status, started.stderr).toBe(0);
    const r = modulesOf(['run', 'show', started.json<{ run_id: string }>().run_id, '--root', root]);
    expect(r.status).toBe(0);
    // Through the runtime's read entry, not the whole runtime: no engine, drill, repository or cluster code.
    expect(r.esm.some((u) => u.endsWith('/dist/src/runtime/read.js'))).toBe(true);
    expect(r.esm.filter((u) => u.endsWith('/dist/src/runtime/index.js'))).toEqual([]);
    expect(r.esm.filter((u) => /\/dist\/src\/runtime\/(drill|repository|cluster)/.test(u))).toEqual([]);
    // better-sqlite3 holds the root's runs.
    expect(feature(packagesOf([...r.esm, ...r.cjs])).filter((p) => p !== 'better-sqlite3')).toEqual([]);
    expect(r.esm.length, `run show loaded ${r.esm.length} ES modules`).toBeLessThanOrEqual(MAX_RUN_SHOW_ES_MODULES);
    const loaded = [...packagesOf([...r.esm, ...r.cjs])].filter((p) =>
      NOT_FOR_RUN_SHOW.some((f) => (f.endsWith('/') ? p.startsWith(f) : p === f)),
    );
    expect(loaded, 'run show loaded an SDK or the server').toEqual([]);
    // The backup manifest validators (1.4 MB of generated code) are a verification's alone.
    expect(r.esm.filter((u) => /\/recovery\/gen\//.test(u))).toEqual([]);
  });

  it('the installed entry runs the bundle: a few chunks instead of the modules, with the same laziness', () => {
    const dist = pathToFileURL(join(REPO, 'dist')).href + '/';
    const own = (r: Loaded) => r.esm.filter((u) => u.startsWith(dist));
    const version = modulesOf(['--version'], INSTALLED);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(
      own(version).filter((u) => !u.startsWith(`${dist}cli/`)),
      'the bundle loaded a module of the unbundled build',
    ).toEqual([]);
    // commander and canonicalize are inlined into the bundle (scripts/bundle-cli.mjs): no package is loaded.
    expect([...packagesOf([...version.esm, ...version.cjs])]).toEqual([]);
    const root = tempRoot();
    const started = loopx(['run', 'start', '--agent', 'examples/agents/minimal.json', '--root', root, '--json']);
    expect(started.status, started.stderr).toBe(0);
    const show = modulesOf(['run', 'show', started.json<{ run_id: string }>().run_id, '--root', root], INSTALLED);
    expect(show.status, show.stdout).toBe(0);
    expect(own(show).filter((u) => !u.startsWith(`${dist}cli/`))).toEqual([]);
    const unbundled = modulesOf(['run', 'show', started.json<{ run_id: string }>().run_id, '--root', root]);
    expect(own(show).length, `${own(show).length} chunks against ${own(unbundled).length} modules`).toBeLessThan(
      own(unbundled).length / 10,
    );
    expect(feature(packagesOf([...show.esm, ...show.cjs])).filter((p) => p !== 'better-sqlite3')).toEqual([]);
    // Inlined into the chunks (scripts/bundle-cli.mjs): not one module per file of the package.
    expect(show.esm.filter((u) => u.includes('/node_modules/@bufbuild/protobuf/'))).toEqual([]);
    expect(
      show.esm.filter((u) => /\/manifest-v\d/.test(u)),
      'run show loaded the manifest validators',
    ).toEqual([]);
  });
});

describe('what the help says of the runtime (src/cli/runtime-facts.ts)', () => {
  it("is the runtime's own: the cluster schema, the Todo statuses and batch size, the capture profiles", () => {
    expect(facts.DEFAULT_CLUSTER_SCHEMA).toBe(DEFAULT_CLUSTER_SCHEMA);
    expect([...facts.TODO_STATUSES]).toEqual([...TODO_STATUSES]);
    expect(facts.MAX_TODOS_PER_UPDATE).toBe(MAX_TODOS_PER_UPDATE);
    for (const word of [
      'online',
      'quiescent',
      'crash-consistent',
      'crash_consistent',
      'Online',
      'offline',
      '',
      'crash consistent',
      'quiescent-',
    ])
      expect(facts.parseCaptureProfile(word), word).toBe(parseProfile(word));
  });

  it("is the provider table's: the stores a root and a Goal's work can choose, and which of them take a service's options", () => {
    expect(facts.STORE_CHOICES).toEqual({ root: storeChoices('root'), goal_work: storeChoices('goal_work') });
    const named = [...new Set([...storeChoices('root'), ...storeChoices('goal_work')])];
    expect(facts.SERVICE_STORE_CHOICES).toEqual(named.filter((p) => takesServiceOptions(p)));
  });
});
