#!/usr/bin/env node
// Run by `npm run proto` after `buf generate`: a cheap offline guard that the committed bindings
// exist, describe the schema the codec expects, and that the frozen wire numbers of the
// Lifecycle enum (an input of the run-authority MAC) have not moved. Exits 1 with one line per
// problem; prints nothing else on success but a one-line summary.
import { readFileSync, existsSync } from 'node:fs';

const PROTO = 'proto/loopx/snapshot/v1alpha2/snapshot.proto';
const GEN = 'src/snapshot/gen/loopx/snapshot/v1alpha2/snapshot_pb.ts';

const problems = [];
if (!existsSync(GEN)) problems.push(`${GEN} is missing: run buf generate`);
const proto = readFileSync(PROTO, 'utf8');
const gen = existsSync(GEN) ? readFileSync(GEN, 'utf8') : '';

for (const name of [
  'RunSnapshotSchema',
  'LifecycleSchema',
  'RoleSchema',
  'ToolResultStatusSchema',
  'ComponentKindSchema',
]) {
  if (gen && !gen.includes(`export const ${name}`)) problems.push(`${GEN} does not export ${name}`);
}

// Frozen: these numbers are signed into run-authority MACs. Never renumber.
const FROZEN_LIFECYCLE = {
  LIFECYCLE_UNSPECIFIED: 0,
  LIFECYCLE_ACTIVE: 1,
  LIFECYCLE_SUSPENDED: 2,
  LIFECYCLE_COMPLETED: 3,
  LIFECYCLE_FAILED: 4,
  LIFECYCLE_CANCELLED: 5,
};
const lifecycleBody = /enum Lifecycle \{([^}]*)\}/.exec(proto)?.[1] ?? '';
const declared = Object.fromEntries(
  [...lifecycleBody.matchAll(/(\w+)\s*=\s*(\d+)\s*;/g)].map((m) => [m[1], Number(m[2])]),
);
if (JSON.stringify(declared) !== JSON.stringify(FROZEN_LIFECYCLE)) {
  problems.push(`enum Lifecycle in ${PROTO} differs from the frozen wire numbers ${JSON.stringify(FROZEN_LIFECYCLE)}`);
}

// The payload carries run state only (RFC 0007): no imports of timestamps, Any, Struct, etc.
if (/^\s*import\s/m.test(proto))
  problems.push(`${PROTO} imports another file; the payload schema must be self-contained`);

if (problems.length > 0) {
  for (const p of problems) process.stderr.write(`check-proto: ${p}\n`);
  process.exit(1);
}
process.stdout.write('check-proto: ok\n');
