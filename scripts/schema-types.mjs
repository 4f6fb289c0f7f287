#!/usr/bin/env node
// `npm run schemas:types`: the UI's types of the audit documents it reads, generated from the
// published JSON Schemas in docs/schemas/ (json-schema-to-typescript) into ui/src/generated/.
// The generated files are committed; test/ui/schema-types.test.ts regenerates them into a scratch
// directory and fails when the committed ones differ. Cross-schema $refs name their schema by its
// `$id` (https://loopx.dev/schemas/<name>.json); they are read from docs/schemas/, never fetched.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile } from 'json-schema-to-typescript';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
const SCHEMAS = join(REPO, 'docs', 'schemas');
export const OUT_DIR = join(REPO, 'ui', 'src', 'generated');

/** Generated file → the schema it comes from (docs/schemas/<schema>.schema.json). */
export const TYPES = {
  'audit-public.d.ts': 'state-recovery-audit-public-v0',
  'audit-list.d.ts': 'daemon-audit-list',
  'audit-contents.d.ts': 'daemon-audit-contents',
  'job.d.ts': 'daemon-job',
  'recovery.d.ts': 'daemon-recovery',
  'workspace-ls.d.ts': 'backup-workspace-ls',
  'workspace-show.d.ts': 'backup-workspace-show',
  'drill-receipt.d.ts': 'recover-drill',
  'drill-job.d.ts': 'daemon-drill-job',
  'drill-list.d.ts': 'daemon-drill-list',
  'backup-run.d.ts': 'daemon-backup-run',
  'repository-backups.d.ts': 'daemon-repository-backups',
  'repository-job.d.ts': 'daemon-repository-job',
  'run.d.ts': 'daemon-run',
  'goal.d.ts': 'daemon-goal',
  'goal-activity.d.ts': 'daemon-goal-activity',
  'goal-history.d.ts': 'daemon-goal-history',
  'goal-progress.d.ts': 'daemon-goal-progress',
};

/**
 * An object the schema leaves open (no properties, no additionalProperties — a receipt's readback)
 * is a record of unknown values, not the `{}` the generator's closed default would make of it.
 */
function openObjects(node) {
  if (Array.isArray(node)) node.forEach(openObjects);
  else if (node && typeof node === 'object') {
    if (
      node.type === 'object' &&
      !('properties' in node) &&
      !('patternProperties' in node) &&
      !('additionalProperties' in node)
    )
      node.additionalProperties = true;
    Object.values(node).forEach(openObjects);
  }
  return node;
}
const readSchema = (name) => openObjects(JSON.parse(readFileSync(join(SCHEMAS, `${name}.schema.json`), 'utf8')));

const ID = /^https:\/\/loopx\.dev\/schemas\/([a-z0-9-]+)\.json$/;
const localSchemas = {
  order: 1,
  canRead: (file) => ID.test(file.url.split('#')[0]),
  read: (file) => JSON.stringify(readSchema(ID.exec(file.url.split('#')[0])[1])),
};

/** Write every generated file into `outDir` (created if missing); returns the names written. */
export async function generate(outDir = OUT_DIR) {
  mkdirSync(outDir, { recursive: true });
  for (const [file, schema] of Object.entries(TYPES)) {
    const doc = readSchema(schema);
    const ts = await compile(doc, schema, {
      cwd: SCHEMAS,
      bannerComment: `/* Generated from docs/schemas/${schema}.schema.json by \`npm run schemas:types\` (json-schema-to-typescript). Do not edit. */`,
      format: true,
      additionalProperties: false,
      ignoreMinAndMaxItems: true,
      $refOptions: { resolve: { http: false, loopx: localSchemas } },
    });
    writeFileSync(join(outDir, file), ts);
  }
  return Object.keys(TYPES);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const written = await generate();
  process.stdout.write(`schemas:types: ${written.length} files in ui/src/generated/\n`);
}
