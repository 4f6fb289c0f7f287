#!/usr/bin/env node
// Writes docs/schemas/state-backup-manifest-v1.schema.json from the v0 schema: the v1 manifest is
// the v0 manifest plus its components, Goal closures and set capture facts, so the shared parts are
// derived (never copied by hand). `node scripts/manifest-v1-schema.mjs --check` fails when the
// committed schema differs from what this script writes (test/backup/manifest-v1.test.ts runs it).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const docs = join(import.meta.dirname, '..', 'docs', 'schemas');
const v0 = JSON.parse(readFileSync(join(docs, 'state-backup-manifest-v0.schema.json'), 'utf8'));
const s = structuredClone(v0);
const d = s.$defs;
const nullable = (ref) => ({ oneOf: [{ type: 'null' }, ref] });
const PROFILE = { enum: ['online', 'quiescent', 'crash_consistent'] };
const DOWNGRADE = {
  enum: [
    'capture_writers_not_drained',
    'capture_component_moved',
    'capture_effect_in_flight',
    'capture_component_unreadable',
    'capture_component_missing',
    'capture_profile_downgraded',
  ],
};
const COMPONENT_ID = {
  type: 'string',
  pattern: '^[a-z][a-z0-9_]{0,31}(-[0-9a-f]{12})?$',
  description: 'Stable within the set; keyed per backup, never a Goal id.',
};
const SCOPE = { type: 'string', pattern: '^(machine|goal:[0-9a-f]{12})$' };
const obj = (props, required = Object.keys(props)) => ({
  type: 'object',
  additionalProperties: false,
  required,
  properties: props,
});
/** `obj` whose `optional` properties may be left out. */
const withOptional = (props, optional) => obj({ ...props, ...optional }, Object.keys(props));
const DIGITS = { type: 'string', pattern: '^[0-9]{1,20}$' };

s.$id = 'https://loopx.dev/schemas/state-backup-manifest-v1.json';
s.title = 'loopx_state_backup_v1 manifest';
s.description =
  'The external (and, with the archive-dependent fields null, the embedded) manifest of a backup that declares its components — one per owner boundary, each captured through its owner with its revision interval — and the capture profile each component and the set achieved. A superset of loopx_state_backup_v0.';
s.properties.schema_version = { const: 'loopx_state_backup_v1' };
s.properties.capture = { $ref: '#/$defs/set_capture' };
s.properties.components = { type: 'array', items: { $ref: '#/$defs/component' } };
s.properties.goal_closures = { type: 'array', items: { $ref: '#/$defs/goal_closure' } };
s.required = [...s.required, 'components', 'goal_closures'];
d.archive_path = {
  ...d.archive_path,
  pattern:
    '^(runtime-root(/.+)?|component-exports(/[a-z0-9_-]+\\.jsonl)?|failure-observation(/[0-9]{6}\\.bin)?|configuration-backup\\.json|manifest\\.json)$',
};
// Members: owner exports are files (and one directory) of their own origin.
const [file, dir, ...rest] = s.properties.members.items.oneOf;
file.properties.origin = { enum: [...file.properties.origin.enum, 'owner_export', 'failure_observation'] };
dir.properties.origin = { enum: ['runtime_root', 'owner_export', 'failure_observation'] };
s.properties.members.items.oneOf = [file, dir, ...rest];
delete d.capture;

const point = obj({
  revision: { type: ['string', 'null'] },
  cursor: { type: ['integer', 'null'] },
  at: { $ref: '#/$defs/timestamp' },
});
d.point = point;
d.downgrade = obj({
  code: DOWNGRADE,
  component_id: { oneOf: [{ type: 'null' }, COMPONENT_ID] },
  severity: { enum: ['hold', 'warning'] },
  next_action: { type: 'string' },
});
d.component = withOptional(
  {
    component_id: COMPONENT_ID,
    owner_kind: { type: 'string', pattern: '^[a-z][a-z0-9_]{0,31}$' },
    logical_scope: SCOPE,
    goal_id: { type: ['string', 'null'] },
    archive_members: { type: 'array', items: { $ref: '#/$defs/archive_path' } },
    export_member: nullable({ $ref: '#/$defs/archive_path' }),
    export_items: {
      enum: ['in_export', 'from_copy', null],
      description:
        "Where the export's records are: in_export — the export member holds the header, every record and the seal; from_copy — the records are the owner's reading of its archived members, the member holds only the header and the seal, and verification rebuilds the records from the copy. Null without an export.",
    },
    required: { type: 'boolean' },
    state: { enum: ['captured', 'absent', 'missing', 'unreadable'] },
    schema_version: { type: ['string', 'null'] },
    producer_version: { type: 'string' },
    capture_profile: PROFILE,
    requested_profile: PROFILE,
    achieved_profile: PROFILE,
    source_identity: { type: ['string', 'null'] },
    source_revision: { type: ['string', 'null'] },
    cursor: { type: ['integer', 'null'], minimum: 0 },
    content_digest: nullable({ $ref: '#/$defs/sha256' }),
    record_count: { type: ['integer', 'null'], minimum: 0 },
    dependency_ids: { type: 'array', items: COMPONENT_ID },
    verification_profile: { type: 'string' },
    capture_interval: obj({ start: nullable({ $ref: '#/$defs/point' }), end: nullable({ $ref: '#/$defs/point' }) }),
    in_flight: { type: 'integer', minimum: 0 },
    skew: obj({
      moved_during_capture: { type: 'boolean' },
      moved_before_set_end: { type: 'boolean' },
      set_end: nullable({ $ref: '#/$defs/point' }),
      cursor_delta: { type: ['integer', 'null'] },
    }),
    downgrades: { type: 'array', items: DOWNGRADE },
  },
  {
    provider: {
      const: 'postgresql',
      description:
        "Set when the component's state was read from a database service (the root's, or the one its Goal's work lives in), not its files: its export holds every record and it has no member.",
    },
  },
);
d.service_reference = obj({
  provider: { const: 'postgresql' },
  schema: { type: 'string', pattern: '^[a-z_][a-z0-9_]{0,62}$' },
  server: obj({
    system_identifier: DIGITS,
    timeline: { type: 'integer', minimum: 1 },
    database_oid: { type: 'integer', minimum: 1 },
  }),
  installation: nullable(
    obj({
      store_identity: { type: 'string', pattern: '^postgresql:[0-9a-f]{32}$' },
      restore_generation: { type: 'integer', minimum: 0 },
      state: { enum: ['active', 'restored_pending_rotation', 'rotating', 'superseded'] },
    }),
  ),
  snapshot: obj({
    isolation: { const: 'repeatable_read' },
    read_only: { const: true },
    xmin: DIGITS,
    xmax: DIGITS,
    taken_at: { $ref: '#/$defs/timestamp' },
    released_at: nullable({ $ref: '#/$defs/timestamp' }),
  }),
});
d.service_reference.description =
  'The database service a root keeps its Goal state in: a reference (provider, schema, server identity, the installation — store identity and restore generation — and the one snapshot every served component was read in) — never a URL or a credential.';
d.goal_service_reference = obj({
  goal_ids: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string' } },
  ...d.service_reference.properties,
});
d.goal_service_reference.description =
  "A database service Goals' work was read from apart from the root's store (`goal create --work-provider postgresql`): the same reference as the root's service, with the Goals read in its one snapshot.";
d.goal_closure = obj({
  goal_id: { type: 'string' },
  logical_scope: SCOPE,
  required_component_ids: { type: 'array', items: COMPONENT_ID },
});
d.set_capture = withOptional(
  {
    profile: PROFILE,
    requested_profile: PROFILE,
    achieved_profile: PROFILE,
    cross_owner_point_in_time: { type: 'boolean' },
    sqlite: { const: 'owner_capture_online_snapshot' },
    files: { const: 'owner_capture_with_traversal_remainder' },
    interval: obj({ start: { $ref: '#/$defs/timestamp' }, end: { $ref: '#/$defs/timestamp' } }),
    quiescence: nullable(
      obj({ epoch: { type: 'string' }, drained: { type: 'boolean' }, waited_ms: { type: 'integer', minimum: 0 } }),
    ),
    failure_observation: nullable(
      obj({
        observed_at: { $ref: '#/$defs/timestamp' },
        proof: obj({ root_locks_free: { type: 'integer', minimum: 0 }, other_processes_with_open_files: { const: 0 } }),
        files: {
          type: 'array',
          items: obj({
            path: { $ref: '#/$defs/relative_path' },
            size_bytes: { type: 'integer', minimum: 0 },
            sha256: { $ref: '#/$defs/sha256' },
            archive_member: { $ref: '#/$defs/archive_path' },
          }),
        },
        component_files: {
          type: 'object',
          propertyNames: COMPONENT_ID,
          additionalProperties: { type: 'array', items: { $ref: '#/$defs/relative_path' } },
        },
      }),
    ),
    skew_inventory: {
      type: 'array',
      items: obj({
        component_id: COMPONENT_ID,
        moved: { type: 'boolean' },
        cursor_delta: { type: ['integer', 'null'] },
      }),
    },
    downgrades: { type: 'array', items: { $ref: '#/$defs/downgrade' } },
  },
  {
    service: { $ref: '#/$defs/service_reference' },
    goal_services: { type: 'array', minItems: 1, items: { $ref: '#/$defs/goal_service_reference' } },
  },
);

const out = `${JSON.stringify(s, null, 2)}\n`;
const target = join(docs, 'state-backup-manifest-v1.schema.json');
if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(target, 'utf8');
  } catch {
    current = '';
  }
  if (current !== out) {
    console.error(
      'docs/schemas/state-backup-manifest-v1.schema.json is out of date: run node scripts/manifest-v1-schema.mjs',
    );
    process.exit(1);
  }
} else writeFileSync(target, out);
