/**
 * What the administrative-restore tests share: the URL of another database on the test server,
 * a schema copied into it with PostgreSQL's own tools (`pg_dump` / `pg_restore`), a long-lived
 * writer process (test/support/pg-writer.ts) whose pool — and so its admission — lives as long as
 * it does, and the published JSON Schemas to check `--json` output against.
 */
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { randomBytes } from 'node:crypto';
import { afterAll, expect } from 'vitest';
import { openGoalWork } from '../../src/owners/work/index.js';
import { openPostgres, type PgDatabase } from '../../src/store/index.js';
import { REPO } from './cli.js';
import { PG_URL } from './pg.js';

const ajv = new Ajv2020({ strict: true, allErrors: true });
const ids = new Map<string, string>();
for (const f of readdirSync(join(REPO, 'docs/schemas')).filter((n) => n.endsWith('.schema.json'))) {
  const schema = JSON.parse(readFileSync(join(REPO, 'docs/schemas', f), 'utf8')) as { $id: string };
  ajv.addSchema(schema);
  ids.set(f, schema.$id);
}

/** `doc` is valid against docs/schemas/<file>. */
export function expectSchemaValid(file: string, doc: unknown): void {
  const check = ajv.getSchema(ids.get(file)!)!;
  expect(check(doc), JSON.stringify(check.errors)).toBe(true);
}

/** The test server's URL with another database. */
export function pgUrlOf(database: string): string {
  const u = new URL(PG_URL);
  u.pathname = `/${database}`;
  return u.toString();
}

/** `schema` of the test database restored, with pg_dump and pg_restore, into the (existing, empty) database at `url`. */
export function restoreSchemaInto(schema: string, url: string): void {
  const dump = execFileSync('pg_dump', ['-d', PG_URL, '-n', schema, '-Fc'], { maxBuffer: 64 << 20 });
  execFileSync('pg_restore', ['-d', url, '--no-owner'], { input: dump });
}

/** A writer process with its own pool (and admission) for its whole life. */
export class PgWriter {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly answers: AsyncIterator<string>;
  constructor(root: string, goal: string, env: Record<string, string>) {
    this.child = spawn(process.execPath, ['--import', 'tsx', 'test/support/pg-writer.ts', root, goal], {
      cwd: REPO,
      env: { ...process.env, ...env },
    });
    this.answers = createInterface({ input: this.child.stdout })[Symbol.asyncIterator]();
  }
  async next(): Promise<Record<string, unknown>> {
    const r = await this.answers.next();
    if (r.done) throw new Error('the writer process ended');
    return JSON.parse(r.value) as Record<string, unknown>;
  }
  /** Sends a line without waiting for its answer (`next` reads the answers in order). */
  send(line: string): void {
    this.child.stdin.write(`${line}\n`);
  }
  async add(title: string): Promise<Record<string, unknown>> {
    this.child.stdin.write(`add ${title}\n`);
    return this.next();
  }
  stop(): void {
    this.child.kill('SIGKILL');
  }
}

/**
 * A database on the test server to restore into, and the writer processes a restore test starts:
 * both cleaned up after the file's tests (writers killed, the database dropped).
 */
export function restoreScene(prefix: string): {
  readonly url: string;
  restoreInto(schema: string): Promise<void>;
  writer(root: string, goal: string, env: Record<string, string>): Promise<PgWriter>;
} {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const writers: PgWriter[] = [];
  let admin: PgDatabase | undefined;
  afterAll(async () => {
    for (const w of writers) w.stop();
    await admin?.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
    await admin?.close();
  });
  const url = pgUrlOf(name);
  return {
    url,
    async restoreInto(schema) {
      admin ??= openPostgres({ url: pgUrlOf('postgres'), schema: 'public', max: 1 });
      await admin.query(`CREATE DATABASE "${name}"`);
      restoreSchemaInto(schema, url);
    },
    async writer(root, goal, env) {
      const w = new PgWriter(root, goal, env);
      writers.push(w);
      expect(await w.next()).toEqual({ ready: true });
      return w;
    },
  };
}

/** Todo t1 of `goal` under an active hard lease of an hour: authority a restore must not let stand. */
export async function holdLease(root: string, goal: string): Promise<void> {
  const work = await openGoalWork({ root, goal_id: goal });
  try {
    await work.setHandoffMode({ operation_id: 'mode-1', handoff_mode: 'hard_lease' });
    await work.acquireLease({
      operation_id: 'lease-1',
      todo_id: 't1',
      owner: 'worker-a',
      execution_key: 'exec-a',
      ttl_ms: 3_600_000,
      expected_version: 0,
    });
  } finally {
    work.close();
  }
}
