/**
 * The fast path of decodeSnapshot: ONE pass over the wire bytes that decodes a RunSnapshot
 * straight into a RunSnapshotState while it checks everything the definition path (pre-scan,
 * protobuf-es parse, unknown-field walk, framing, fromProto, wire-canonical check) checks before
 * and after semantic validation. Semantic validation itself is not here: the caller runs
 * validateSnapshotState on the result, exactly as the definition path does.
 *
 * Sound, never complete (the pattern of canonical-json-check.ts): it returns a state only for a
 * payload that is the canonical encoding (wire-canonical.ts rules: fields in field-number order,
 * repeated fields contiguous, one oneof member, no explicit zero values, minimal varints, valid
 * UTF-8), has no unknown field, keeps every count bound, carries this format and version, has
 * every sub-message, known enum values, 32-byte digests and last_sequence ≤ 2^53 − 1 — and the
 * state it returns is the one the definition path builds from those bytes. For anything else it
 * returns `undefined`, and the definition path decides, so every refusal keeps its code, details
 * and precedence. `test/snapshot/wire-decode.test.ts` checks both properties against it.
 *
 * Hand-written rather than protobuf-es `fromBinary`: the library materialises generic message
 * objects (and a view plus a non-fatal UTF-8 decode per string) that are then walked three more
 * times (unknown fields, mapping, canonical check); on a 1 MiB history that was most of decode's
 * cost. The schema is small and frozen per version (a new schema is a new version and a new
 * decoder), and any field this decoder does not know makes it answer "not sure".
 */
import { toHex } from '../core/index.js';
import { KIND_FROM_PB, LIFECYCLE_FROM_PB, ROLE_FROM_PB, STATUS_FROM_PB } from './enums.js';
import { SNAPSHOT_DIGEST_BYTES, SNAPSHOT_FORMAT, SNAPSHOT_LIMITS, SNAPSHOT_VERSION } from './limits.js';
import type { ComponentIdentity, Lifecycle, Message, Part, RunSnapshotState } from './state.js';

/** Thrown (one shared instance, never escapes this module) when the payload is not one this path is sure of. */
const NOT_SURE = new Error('snapshot fast decode: not sure');
const notSure = (): never => {
  throw NOT_SURE;
};

/** Strings at most this long are checked and decoded byte by byte when ASCII (cheaper than a native call). */
const SHORT_STRING = 48;
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

class Cursor {
  pos = 0;
  private readonly buf: Buffer;

  constructor(readonly bytes: Uint8Array) {
    this.buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** The next tag: one byte (every field number here is < 16, so a longer tag is not minimal or unknown). */
  tag(): number {
    const t = this.bytes[this.pos++]!;
    return t < 0x80 ? t : notSure();
  }

  /** A minimal varint of at most 8 bytes (< 2^56), as a number; the caller bounds its value. */
  varint(end: number): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      if (this.pos >= end) notSure();
      const b = this.bytes[this.pos++]!;
      value += (b & 0x7f) * scale;
      if (b < 0x80) return i > 0 && b === 0 ? notSure() : value;
      scale *= 128;
    }
    return notSure();
  }

  /** A non-zero uint32 (an implicit-presence scalar is written only when non-zero). */
  uint32(end: number): number {
    const v = this.varint(end);
    return v === 0 || v > 0xffff_ffff ? notSure() : v;
  }

  /** A single-byte enum number that names a value of `table` (so never 0, never unknown). */
  enumValue<K>(table: ReadonlyMap<number, K>, end: number): K {
    if (this.pos >= end) notSure();
    return table.get(this.bytes[this.pos++]!) ?? notSure();
  }

  /** Start and end of a length-delimited field inside `end`. */
  span(end: number): number {
    const length = this.varint(end);
    const e = this.pos + length;
    return e > end ? notSure() : e;
  }

  /** A UTF-8 string field; `implicit`: outside a oneof or list, so written only when non-empty. */
  string(end: number, implicit: boolean): string {
    const e = this.span(end);
    const s = this.pos;
    this.pos = e;
    if (e - s <= SHORT_STRING) {
      if (e === s) return implicit ? notSure() : '';
      let ascii = true;
      for (let i = s; i < e; i++) if (this.bytes[i]! >= 0x80) ascii = false;
      if (ascii) return this.buf.toString('latin1', s, e);
    }
    try {
      return utf8.decode(this.bytes.subarray(s, e));
    } catch {
      return notSure(); // not valid UTF-8
    }
  }

  /** A SHA-256 bytes field, as lowercase hex. */
  digest(end: number): string {
    const e = this.span(end);
    if (e - this.pos !== SNAPSHOT_DIGEST_BYTES) notSure();
    const hex = toHex(this.bytes.subarray(this.pos, e));
    this.pos = e;
    return hex;
  }
}

/** The fields of a message with fields `1..n`, each at most once, in order; returns the last field number read. */
function inOrder(last: number, tag: number): number {
  const no = tag >>> 3;
  return no > last ? no : notSure();
}

function pair(c: Cursor, end: number): [string, string] {
  let a = '';
  let b = '';
  for (let last = 0; c.pos < end;) {
    const tag = c.tag();
    last = inOrder(last, tag);
    if (tag === 0x0a) a = c.string(end, true);
    else if (tag === 0x12) b = c.string(end, true);
    else notSure();
  }
  return [a, b];
}

function part(c: Cursor, end: number): Part {
  if (c.pos >= end) notSure(); // no content (the oneof is unset)
  const tag = c.tag();
  let p: Part;
  if (tag === 0x0a) p = { type: 'text', text: c.string(end, false) };
  else if (tag === 0x12) p = toolCall(c, c.span(end));
  else if (tag === 0x1a) p = toolResult(c, c.span(end));
  else return notSure();
  // One member of the oneof, once.
  return c.pos === end ? p : notSure();
}

function toolCall(c: Cursor, end: number): Part {
  let callId = '';
  let toolName = '';
  let argumentsJson = '';
  for (let last = 0; c.pos < end;) {
    const tag = c.tag();
    last = inOrder(last, tag);
    if (tag === 0x0a) callId = c.string(end, true);
    else if (tag === 0x12) toolName = c.string(end, true);
    else if (tag === 0x1a) argumentsJson = c.string(end, true);
    else notSure();
  }
  return { type: 'tool_call', callId, toolName, argumentsJson };
}

function toolResult(c: Cursor, end: number): Part {
  let callId = '';
  let toolName = '';
  let status: (Part & { type: 'tool_result' })['status'] | undefined;
  let resultJson = '';
  for (let last = 0; c.pos < end;) {
    const tag = c.tag();
    last = inOrder(last, tag);
    if (tag === 0x0a) callId = c.string(end, true);
    else if (tag === 0x12) toolName = c.string(end, true);
    else if (tag === 0x18) status = c.enumValue(STATUS_FROM_PB, end);
    else if (tag === 0x22) resultJson = c.string(end, true);
    else notSure();
  }
  return { type: 'tool_result', callId, toolName, status: status ?? notSure(), resultJson };
}

function message(c: Cursor, end: number): Message {
  let id = '';
  let role: Message['role'] | undefined;
  const parts: Part[] = [];
  for (let last = 0; c.pos < end;) {
    const tag = c.tag();
    if (tag === 0x1a && last === 3) {
      if (parts.length >= SNAPSHOT_LIMITS.maxPartsPerMessage) notSure();
      parts.push(part(c, c.span(end)));
      continue;
    }
    last = inOrder(last, tag);
    if (tag === 0x0a) id = c.string(end, true);
    else if (tag === 0x10) role = c.enumValue(ROLE_FROM_PB, end);
    else if (tag === 0x1a) parts.push(part(c, c.span(end)));
    else notSure();
  }
  return { id, role: role ?? notSure(), parts };
}

function component(c: Cursor, end: number): ComponentIdentity {
  let kind: ComponentIdentity['kind'] | undefined;
  let name = '';
  let module = '';
  let version = '';
  let sourceSha256: string | undefined;
  for (let last = 0; c.pos < end;) {
    const tag = c.tag();
    last = inOrder(last, tag);
    if (tag === 0x08) kind = c.enumValue(KIND_FROM_PB, end);
    else if (tag === 0x12) name = c.string(end, true);
    else if (tag === 0x1a) module = c.string(end, true);
    else if (tag === 0x22) version = c.string(end, true);
    else if (tag === 0x2a) sourceSha256 = c.digest(end);
    else notSure();
  }
  return { kind: kind ?? notSure(), name, module, version, sourceSha256: sourceSha256 ?? notSure() };
}

function planIdentity(c: Cursor, end: number): RunSnapshotState['planIdentity'] {
  const components: ComponentIdentity[] = [];
  let toolPlanId = '';
  let compatibilityIdentity = '';
  let fingerprint: string | undefined;
  for (let last = 0; c.pos < end;) {
    const tag = c.tag();
    if (tag === 0x0a && last === 1) {
      if (components.length >= SNAPSHOT_LIMITS.maxComponents) notSure();
      components.push(component(c, c.span(end)));
      continue;
    }
    last = inOrder(last, tag);
    if (tag === 0x0a) components.push(component(c, c.span(end)));
    else if (tag === 0x12) toolPlanId = c.string(end, true);
    else if (tag === 0x1a) compatibilityIdentity = c.string(end, true);
    else if (tag === 0x22) fingerprint = c.digest(end);
    else notSure();
  }
  return { components, toolPlanId, compatibilityIdentity, fingerprint: fingerprint ?? notSure() };
}

/** The RunSnapshot fields, in field-number order; repeated fields 8 and 10 may repeat in place. */
interface Top {
  runId: string;
  definition?: [string, string];
  model?: [string, string];
  turnLimit: number;
  completedTurns: number;
  messages: Message[];
  planIdentity?: RunSnapshotState['planIdentity'];
  usedInteractionIds: string[];
  lastSequence: number;
  lifecycle?: Lifecycle;
}

function topField(c: Cursor, tag: number, top: Top, end: number): void {
  switch (tag) {
    case 0x0a:
      if (c.string(end, true) !== SNAPSHOT_FORMAT) notSure();
      return;
    case 0x12:
      if (c.string(end, true) !== SNAPSHOT_VERSION) notSure();
      return;
    case 0x1a:
      top.runId = c.string(end, true);
      return;
    case 0x22:
      top.definition = pair(c, c.span(end));
      return;
    case 0x2a:
      top.model = pair(c, c.span(end));
      return;
    case 0x30:
      top.turnLimit = c.uint32(end);
      return;
    case 0x38:
      top.completedTurns = c.uint32(end);
      return;
    case 0x42:
      top.messages.push(message(c, c.span(end)));
      return;
    case 0x4a:
      top.planIdentity = planIdentity(c, c.span(end));
      return;
    case 0x52:
      top.usedInteractionIds.push(c.string(end, false));
      return;
    case 0x58: {
      const v = c.varint(end);
      top.lastSequence = v === 0 || v > Number.MAX_SAFE_INTEGER ? notSure() : v;
      return;
    }
    case 0x60:
      top.lifecycle = c.enumValue(LIFECYCLE_FROM_PB, end);
      return;
    default:
      notSure();
  }
}

/**
 * Decode `bytes` if, and only if, they are a canonical v1alpha2 payload the definition path would
 * decode to the returned state (not yet semantically validated); otherwise `undefined`.
 */
export function decodeCanonicalSnapshot(bytes: Uint8Array): RunSnapshotState | undefined {
  const c = new Cursor(bytes);
  const end = bytes.byteLength;
  const top: Top = {
    runId: '',
    turnLimit: 0,
    completedTurns: 0,
    messages: [],
    usedInteractionIds: [],
    lastSequence: 0,
  };
  let format = false;
  let version = false;
  try {
    for (let last = 0; c.pos < end;) {
      const tag = c.tag();
      const repeat = (tag === 0x42 && last === 8) || (tag === 0x52 && last === 10);
      if (!repeat) last = inOrder(last, tag);
      if (tag === 0x42 && top.messages.length >= SNAPSHOT_LIMITS.maxMessages) notSure();
      if (tag === 0x52 && top.usedInteractionIds.length >= SNAPSHOT_LIMITS.maxInteractionIds) notSure();
      if (tag === 0x0a) format = true;
      if (tag === 0x12) version = true;
      topField(c, tag, top, end);
    }
  } catch (e) {
    if (e === NOT_SURE) return undefined;
    throw e;
  }
  if (!format || !version || !top.definition || !top.model || !top.planIdentity || !top.lifecycle) return undefined;
  return {
    runId: top.runId,
    definition: { id: top.definition[0], version: top.definition[1] },
    model: { provider: top.model[0], modelId: top.model[1] },
    turnLimit: top.turnLimit,
    completedTurns: top.completedTurns,
    messages: top.messages,
    planIdentity: top.planIdentity,
    usedInteractionIds: top.usedInteractionIds,
    lastSequence: top.lastSequence,
    lifecycle: top.lifecycle,
  };
}
