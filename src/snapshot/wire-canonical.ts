/**
 * Is this RunSnapshot payload exactly the canonical encoding (what `toBinary` writes) of the
 * message it parses to? Decided on the wire bytes, without re-encoding. Runs only after the
 * payload parsed and its state validated, so enums hold known values and sizes are bounded.
 *
 * The canonical encoding of this schema (proto3, no maps, no packed or fixed-width fields), as
 * @bufbuild/protobuf writes it: fields in increasing field-number order; a singular field at most
 * once, the elements of a repeated field contiguous; at most one member of a oneof; implicit-
 * presence scalars (outside oneofs) only when non-zero (non-empty strings and bytes, non-zero
 * varints); every varint (tags, lengths, values) in its minimal form; strings valid UTF-8 (the
 * parser replaces invalid sequences, which would re-encode differently); no unknown fields
 * (refused earlier). `test/snapshot/wire-canonical.test.ts` checks this agrees with re-encoding.
 */
import { ScalarType, type DescField, type DescMessage } from '@bufbuild/protobuf';
import { isUtf8 } from 'node:buffer';
import { RunSnapshotSchema } from './gen/loopx/snapshot/v1alpha2/snapshot_pb.js';

const VARINT = 0;
const LEN = 2;

const sortedFields = new WeakMap<DescMessage, ReadonlyMap<number, DescField>>();
const fieldsOf = (desc: DescMessage): ReadonlyMap<number, DescField> => {
  let m = sortedFields.get(desc);
  if (!m) sortedFields.set(desc, (m = new Map(desc.fields.map((f) => [f.number, f]))));
  return m;
};

class NotCanonical extends Error {}
const fail = (): never => {
  throw new NotCanonical();
};

export function isCanonicalSnapshotWire(bytes: Uint8Array): boolean {
  let pos = 0;
  /** A minimal varint; its value as a number (values here are < 2^53, checked by validation). */
  const varint = (): number => {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (pos >= bytes.length) fail();
      const b = bytes[pos++]!;
      value += (b & 0x7f) * scale;
      scale *= 128;
      if ((b & 0x80) === 0) {
        if (i > 0 && b === 0) fail(); // a trailing zero group: not minimal
        return value;
      }
    }
    return fail();
  };

  const walk = (desc: DescMessage, end: number): void => {
    const fields = fieldsOf(desc);
    let last = 0;
    const oneofs = new Set<string>();
    while (pos < end) {
      const tag = varint();
      const no = Math.floor(tag / 8);
      const wireType = tag % 8;
      const field = fields.get(no) ?? fail();
      if (no < last || (no === last && field.fieldKind !== 'list')) fail();
      last = no;
      if (field.oneof) {
        if (oneofs.has(field.oneof.name)) fail(); // a second member (or the same one twice)
        oneofs.add(field.oneof.name);
      }
      const implicit = field.oneof === undefined && (field.fieldKind === 'scalar' || field.fieldKind === 'enum');
      const isMessage = field.fieldKind === 'message' || (field.fieldKind === 'list' && field.listKind === 'message');
      if (wireType === VARINT) {
        const lengthDelimitedKind =
          field.fieldKind === 'scalar'
            ? field.scalar
            : field.fieldKind === 'list' && field.listKind === 'scalar'
              ? field.scalar
              : undefined;
        if (isMessage || lengthDelimitedKind === ScalarType.STRING || lengthDelimitedKind === ScalarType.BYTES) fail();
        const value = varint();
        if (implicit && value === 0) fail();
        if (field.fieldKind === 'scalar' && field.scalar === ScalarType.UINT32 && value > 0xffff_ffff) fail();
      } else if (wireType === LEN) {
        const length = varint();
        const childEnd = pos + length;
        if (childEnd > end) fail();
        if (isMessage) {
          walk((field as { message: DescMessage }).message, childEnd);
          if (pos !== childEnd) fail();
        } else {
          const scalar =
            field.fieldKind === 'scalar' || (field.fieldKind === 'list' && field.listKind === 'scalar')
              ? (field as { scalar: number }).scalar
              : undefined;
          if (scalar !== ScalarType.STRING && scalar !== ScalarType.BYTES) fail(); // only strings and bytes are length-delimited here
          if (implicit && length === 0) fail();
          if (scalar === ScalarType.STRING && !isUtf8(bytes.subarray(pos, childEnd))) fail();
          pos = childEnd;
        }
      } else {
        fail(); // no fixed-width or group fields in this schema
      }
    }
  };

  try {
    walk(RunSnapshotSchema, bytes.length);
    return pos === bytes.length;
  } catch (e) {
    if (e instanceof NotCanonical) return false;
    throw e;
  }
}
