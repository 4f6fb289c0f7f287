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
import { expect } from 'vitest';
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
    this.child = spawn(process.execPath, ['--import', 'tsx', 'test/support/pg-writer.ts', root, goal], { cwd: REPO, env: { ...process.env, ...env } });
    this.answers = createInterface({ input: this.child.stdout })[Symbol.asyncIterator]();
  }
  async next(): Promise<Record<string, unknown>> {
    const r = await this.answers.next();
    if (r.done) throw new Error('the writer process ended');
    return JSON.parse(r.value) as Record<string, unknown>;
  }
  async add(title: string): Promise<Record<string, unknown>> {
    this.child.stdin.write(`add ${title}\n`);
    return this.next();
  }
  stop(): void {
    this.child.kill('SIGKILL');
  }
}
