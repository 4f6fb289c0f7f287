/**
 * A pass over the wire bytes before they are parsed into objects, driven by the generated
 * descriptors. It refuses, without allocating per field:
 * - unknown fields at any depth (the same notion of "unknown" as the parser's: a field number
 *   the descriptor does not define), and
 * - repeated fields whose count exceeds their SNAPSHOT_LIMITS bound (messages, parts,
 *   components, used interaction ids).
 * Why: a 16 MiB payload of two-byte empty sub-messages or unknown fields would otherwise become
 * millions of objects before any bound is checked. Wire-level errors are reported as malformed;
 * the full parse after this pass remains the authority on everything else.
 */
import type { DescField, DescMessage } from '@bufbuild/protobuf';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import { isLoopxError } from '../core/index.js';
import { SNAPSHOT_ERRORS, snapshotError } from './errors.js';
import { MessageSchema, PlanIdentitySchema, RunSnapshotSchema } from './gen/loopx/snapshot/v1alpha2/snapshot_pb.js';
import { SNAPSHOT_LIMITS, type SnapshotBound } from './limits.js';

/** Repeated fields with a count bound, keyed by `<message type>.<field number>`. */
const COUNT_BOUNDS: ReadonlyMap<string, SnapshotBound> = new Map<string, SnapshotBound>([
  [`${RunSnapshotSchema.typeName}.${RunSnapshotSchema.field.messages!.number}`, 'maxMessages'],
  [`${RunSnapshotSchema.typeName}.${RunSnapshotSchema.field.usedInteractionIds!.number}`, 'maxInteractionIds'],
  [`${MessageSchema.typeName}.${MessageSchema.field.parts!.number}`, 'maxPartsPerMessage'],
  [`${PlanIdentitySchema.typeName}.${PlanIdentitySchema.field.components!.number}`, 'maxComponents'],
]);

interface Plan {
  readonly fields: ReadonlyMap<number, DescField>;
  /** Field number → bound, for the counted repeated fields of this message. */
  readonly bounds: ReadonlyMap<number, SnapshotBound>;
}

const plans = new WeakMap<DescMessage, Plan>();

function planOf(desc: DescMessage): Plan {
  let plan = plans.get(desc);
  if (plan === undefined) {
    const bounds = new Map<number, SnapshotBound>();
    for (const f of desc.fields) {
      const bound = COUNT_BOUNDS.get(`${desc.typeName}.${f.number}`);
      if (bound !== undefined) bounds.set(f.number, bound);
    }
    plan = { fields: new Map(desc.fields.map((f) => [f.number, f])), bounds };
    plans.set(desc, plan);
  }
  return plan;
}

/** The message type a field holds (singular, oneof member or repeated), if any. */
function childMessage(field: DescField): DescMessage | undefined {
  if (field.fieldKind === 'message') return field.message;
  if (field.fieldKind === 'list' && field.listKind === 'message') return field.message;
  return undefined;
}

/** A wire-level inconsistency (length past its end, trailing bytes): reported as malformed. */
class Malformed extends Error {}

/** Throws snapshot_unknown_field, snapshot_oversized or snapshot_malformed; returns if the walk is clean. */
export function prescanSnapshot(bytes: Uint8Array): void {
  const reader = new BinaryReader(bytes);
  const path: Array<string | number> = [];

  const walk = (desc: DescMessage, end: number): void => {
    const plan = planOf(desc);
    const counts = plan.bounds.size > 0 ? new Map<number, number>() : undefined;
    while (reader.pos < end) {
      const [no, wireType] = reader.tag();
      const field = plan.fields.get(no);
      if (field === undefined) {
        throw snapshotError(
          SNAPSHOT_ERRORS.unknownField,
          'The snapshot payload has a field this version does not define.',
          {
            path: renderPath(path),
            fieldNumber: no,
          },
        );
      }
      const bound = plan.bounds.get(no);
      let index = 0;
      if (bound !== undefined && counts !== undefined) {
        index = counts.get(no) ?? 0;
        counts.set(no, index + 1);
        if (index + 1 > SNAPSHOT_LIMITS[bound]) {
          throw snapshotError(
            SNAPSHOT_ERRORS.oversized,
            `Snapshot exceeds its ${bound} bound (${SNAPSHOT_LIMITS[bound]}).`,
            {
              ...(path.length > 0 ? { path: renderPath(path) } : {}),
              bound,
              limit: SNAPSHOT_LIMITS[bound],
              // Reading stops at the first entry past the bound.
              actual: index + 1,
            },
          );
        }
      }
      const child = childMessage(field);
      if (child !== undefined && wireType === WireType.LengthDelimited) {
        const length = reader.uint32();
        const childEnd = reader.pos + length;
        if (childEnd > end) throw new Malformed();
        path.push(field.name);
        if (field.fieldKind === 'list') path.push(index);
        walk(child, childEnd);
        if (field.fieldKind === 'list') path.pop();
        path.pop();
        if (reader.pos !== childEnd) throw new Malformed();
      } else if (wireType === WireType.LengthDelimited) {
        // Inline rather than reader.skip(), which allocates a view per field.
        const length = reader.uint32();
        reader.pos += length;
        if (reader.pos > end) throw new Malformed();
      } else {
        reader.skip(wireType, no);
        if (reader.pos > end) throw new Malformed();
      }
    }
  };

  try {
    walk(RunSnapshotSchema, bytes.byteLength);
  } catch (e) {
    if (isLoopxError(e)) throw e;
    throw snapshotError(
      SNAPSHOT_ERRORS.malformed,
      'The snapshot payload is not a valid protobuf RunSnapshot.',
      undefined,
      e,
    );
  }
}

export const renderPath = (path: ReadonlyArray<string | number>): string =>
  path.reduce<string>((out, s) => (typeof s === 'number' ? `${out}[${s}]` : out ? `${out}.${s}` : s), '') || '.';
