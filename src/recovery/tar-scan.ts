/**
 * A strict, streaming tar tokenizer for the verifier.
 *
 * Why not tar-stream (which the producer uses to WRITE archives): as a reader it interprets PAX
 * and GNU headers silently — it buffers a PAX header of any declared size before the caller sees
 * it (a memory bomb the §12 128 KiB/16 MiB limits must stop first), applies keys it recognizes
 * and drops the ones it does not (GNU.sparse.*, SCHILY.xattr.*, a `size` override), accepts
 * base-256 numbers, GNU long names and old-GNU magic, and stops at the end-of-archive marker
 * without looking at what follows. Each of those is a place where what a check sees and what is
 * written can disagree. This reader understands exactly the subset the loopx producer writes —
 * POSIX ustar headers, PAX `x` headers carrying path/linkpath (and timestamps/ownership, which it
 * ignores) — and refuses everything else with a typed code.
 *
 * It is a push parser: `push(chunk)` synchronously calls `onEntry` for each member header,
 * `onData` for its bytes and `onEntryEnd` after them; `finish()` checks the end-of-archive and
 * that the stream is whole 512-byte blocks.
 */
import { rejected, type LoopxError } from '../core/index.js';
import { FORMAT_CODES, MEMBER_CODES } from './codes.js';
import { capacityRefusal, memberRefusal } from './members.js';
import { RECOVERY_LIMITS } from './limits.js';

export type TarEntryType = 'file' | 'directory' | 'symlink' | 'hardlink';

export interface TarEntry {
  readonly name: string;
  readonly type: TarEntryType;
  readonly size: number;
  readonly linkName: string;
}

export interface TarHandler {
  onEntry(entry: TarEntry): void;
  onData(chunk: Buffer): void;
  onEntryEnd(): void;
}

const BLOCK = 512;
const PAX_KEYS = new Set(['path', 'linkpath', 'mtime', 'atime', 'ctime', 'uid', 'gid', 'uname', 'gname']);
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The tar stream's length is not whole 512-byte blocks. */
const framingRefusal = (): LoopxError =>
  rejected(FORMAT_CODES.framingInvalid, 'The tar stream is not a whole number of 512-byte blocks.', {
    nextAction: 'use an intact backup made by loopx backup-state',
  });

/**
 * The §12 bounds on the stream decompressed so far: at most 512 MiB expanded, and at most 2,000
 * expanded bytes per compressed byte read — applied from the first chunk, with no warm-up
 * threshold. (The compressed count is what was read, never less than what was inflated, so a
 * prefix of a conforming archive never trips it: deflate cannot exceed about 1,032 to 1.)
 */
export function checkExpansion(expandedBytes: number, compressedBytes: number): void {
  if (expandedBytes > RECOVERY_LIMITS.expandedBytes)
    throw capacityRefusal('expandedBytes', expandedBytes, RECOVERY_LIMITS.expandedBytes);
  if (expandedBytes > compressedBytes * RECOVERY_LIMITS.expansionRatio) {
    throw capacityRefusal(
      'expansionRatio',
      Math.ceil(expandedBytes / Math.max(1, compressedBytes)),
      RECOVERY_LIMITS.expansionRatio,
    );
  }
}

const invalid = (message: string): LoopxError =>
  rejected(FORMAT_CODES.headerInvalid, message, { nextAction: 'use an intact backup made by loopx backup-state' });
const unsupported = (message: string): LoopxError =>
  rejected(FORMAT_CODES.headerUnsupported, message, {
    nextAction: 'use a backup made by loopx backup-state; this tar feature is not accepted',
  });
/** Bytes after the end of a stream (the gzip member, or the tar end-of-archive marker). */
export const trailingData = (after: string): LoopxError =>
  rejected(FORMAT_CODES.trailingData, `The archive has data after ${after}.`, {
    nextAction: 'use an intact backup made by loopx backup-state',
  });

/** A NUL-terminated (or full-width) field as UTF-8; a non-UTF-8 name is a member path refusal. */
function text(block: Buffer, start: number, length: number, isName: boolean): string {
  let end = start;
  while (end < start + length && block[end] !== 0) end++;
  try {
    return utf8.decode(block.subarray(start, end));
  } catch {
    throw isName
      ? memberRefusal(MEMBER_CODES.invalid, 'An archive member name is not valid UTF-8.')
      : invalid('A tar header text field is not valid UTF-8.');
  }
}

/** Strict octal: optional leading spaces, octal digits, then NUL/space padding only. Base-256 is refused. */
function octal(block: Buffer, start: number, length: number): number {
  const field = block.subarray(start, start + length);
  if ((field[0]! & 0x80) !== 0) throw invalid('A tar header uses a base-256 number.');
  let i = 0;
  while (i < field.length && field[i] === 0x20) i++;
  let value = 0;
  let digits = 0;
  for (; i < field.length && field[i]! >= 0x30 && field[i]! <= 0x37; i++, digits++)
    value = value * 8 + (field[i]! - 0x30);
  for (; i < field.length; i++)
    if (field[i] !== 0 && field[i] !== 0x20) throw invalid('A tar header has a malformed number.');
  if (digits === 0) throw invalid('A tar header has an empty number.');
  if (!Number.isSafeInteger(value)) throw invalid('A tar header number is out of range.');
  return value;
}

function checksumOk(block: Buffer): boolean {
  const stored = octal(block, 148, 8);
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i]!;
  return sum === stored;
}

/** Parses PAX records strictly: "<len> <key>=<value>\n", lengths exact, keys known, no repeats. */
function parsePax(data: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    if (space < 0 || space === at || space - at > 10) throw invalid('A PAX record is malformed.');
    const lenText = data.subarray(at, space).toString('latin1');
    if (!/^[1-9][0-9]*$/.test(lenText)) throw invalid('A PAX record length is malformed.');
    const len = Number(lenText);
    const end = at + len;
    if (end > data.length || data[end - 1] !== 0x0a) throw invalid('A PAX record length does not match its data.');
    let record: string;
    try {
      record = utf8.decode(data.subarray(space + 1, end - 1));
    } catch {
      throw invalid('A PAX record is not valid UTF-8.');
    }
    const eq = record.indexOf('=');
    if (eq <= 0) throw invalid('A PAX record has no key.');
    const key = record.slice(0, eq);
    if (key.startsWith('GNU.sparse.')) {
      throw memberRefusal(MEMBER_CODES.sparse, 'A member is a sparse file.');
    }
    if (!PAX_KEYS.has(key)) throw unsupported('A PAX header carries a key this verifier does not interpret.');
    if (out.has(key)) throw unsupported('A PAX header repeats a key.');
    out.set(key, record.slice(eq + 1));
    at = end;
  }
  return out;
}

type State =
  | { readonly at: 'header' }
  | { at: 'data'; remaining: number; padding: number }
  | { at: 'pax'; remaining: number; padding: number; parts: Buffer[] }
  | { readonly at: 'end' };

export class TarScanner {
  private state: State = { at: 'header' };
  private pending: Buffer = Buffer.alloc(0);
  private zeroBlocks = 0;
  private pax: Map<string, string> | undefined;
  private paxTotal = 0;
  /** Bytes of the tar stream consumed so far. */
  bytes = 0;

  constructor(private readonly handler: TarHandler) {}

  get ended(): boolean {
    return this.state.at === 'end';
  }

  push(chunk: Buffer): void {
    this.bytes += chunk.length;
    const buf = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = Buffer.alloc(0);
    let off = 0;
    while (off < buf.length) {
      const s = this.state;
      if (s.at === 'end') {
        for (let i = off; i < buf.length; i++) {
          if (buf[i] !== 0) throw trailingData('the tar end-of-archive marker');
        }
        return;
      }
      if (s.at === 'data' || s.at === 'pax') {
        if (s.remaining > 0) {
          const n = Math.min(s.remaining, buf.length - off);
          const piece = buf.subarray(off, off + n);
          if (s.at === 'data') this.handler.onData(piece);
          else s.parts.push(Buffer.from(piece));
          s.remaining -= n;
          off += n;
          if (s.remaining > 0) continue;
        }
        const skip = Math.min(s.padding, buf.length - off);
        s.padding -= skip;
        off += skip;
        if (s.padding > 0) continue;
        if (s.at === 'data') this.handler.onEntryEnd();
        else this.pax = parsePax(Buffer.concat(s.parts));
        this.state = { at: 'header' };
        continue;
      }
      if (buf.length - off < BLOCK) {
        this.pending = Buffer.from(buf.subarray(off));
        return;
      }
      this.header(buf.subarray(off, off + BLOCK));
      off += BLOCK;
    }
  }

  /**
   * The stream ended: it must have ended after the end-of-archive marker, and be whole 512-byte
   * blocks — only whole zero blocks (record padding) may follow the marker. Before the marker
   * every byte is consumed in blocks, so a partial block can only sit after it.
   */
  finish(): void {
    if (this.state.at !== 'end' || this.pending.length > 0) {
      throw rejected(FORMAT_CODES.truncated, 'The archive ends before its tar end-of-archive marker.', {
        nextAction: 'use a complete copy of the backup',
      });
    }
    if (this.bytes % BLOCK !== 0) throw framingRefusal();
  }

  private header(block: Buffer): void {
    if (block.every((b) => b === 0)) {
      if (this.pax !== undefined) throw invalid('A PAX header is not followed by a member.');
      if (++this.zeroBlocks === 2) this.state = { at: 'end' };
      return;
    }
    if (this.zeroBlocks > 0) throw invalid('A tar header follows a single end-of-archive block.');
    if (block.toString('latin1', 257, 263) !== 'ustar\0' || block.toString('latin1', 263, 265) !== '00') {
      throw invalid('A tar header is not a POSIX ustar header.');
    }
    if (!checksumOk(block)) throw invalid('A tar header checksum does not match.');
    const size = octal(block, 124, 12);
    octal(block, 100, 8); // mode, uid, gid, mtime: validated as numbers, never applied
    octal(block, 108, 8);
    octal(block, 116, 8);
    octal(block, 136, 12);
    const flag = String.fromCharCode(block[156]!);
    const padding = (BLOCK - (size % BLOCK)) % BLOCK;

    if (flag === 'x') {
      if (this.pax !== undefined) throw unsupported('Two PAX headers precede one member.');
      if (size > RECOVERY_LIMITS.paxHeaderBytes)
        throw capacityRefusal('paxHeaderBytes', size, RECOVERY_LIMITS.paxHeaderBytes);
      this.paxTotal += size;
      if (this.paxTotal > RECOVERY_LIMITS.paxTotalBytes)
        throw capacityRefusal('paxTotalBytes', this.paxTotal, RECOVERY_LIMITS.paxTotalBytes);
      this.state = { at: 'pax', remaining: size, padding, parts: [] };
      return;
    }
    if (flag === 'g' || flag === 'L' || flag === 'K' || flag === 'X')
      throw unsupported('A tar header type this verifier does not interpret (PAX global or GNU long name).');
    if (flag === 'S') throw memberRefusal(MEMBER_CODES.sparse, 'A member is a sparse file.');
    const type: TarEntryType | undefined =
      flag === '0' || flag === '\0'
        ? 'file'
        : flag === '5'
          ? 'directory'
          : flag === '2'
            ? 'symlink'
            : flag === '1'
              ? 'hardlink'
              : undefined;
    if (type === undefined) {
      throw memberRefusal(
        MEMBER_CODES.specialType,
        'An archive member is a device, FIFO, socket or of an unknown type.',
      );
    }
    if (type !== 'file' && size !== 0) throw invalid('A directory or link member declares data.');

    const prefix = text(block, 345, 155, true);
    const short = text(block, 0, 100, true);
    let name = prefix === '' ? short : `${prefix}/${short}`;
    let linkName = text(block, 157, 100, true);
    const pax = this.pax;
    this.pax = undefined;
    if (pax?.has('path')) name = pax.get('path')!;
    if (pax?.has('linkpath')) linkName = pax.get('linkpath')!;
    if (name.includes('\0') || linkName.includes('\0')) throw invalid('A member name contains NUL.');
    if ((type === 'file' || type === 'directory') && linkName !== '')
      throw invalid('A file or directory member carries a link name.');

    this.handler.onEntry({ name, type, size, linkName });
    if (type === 'file' && size + padding > 0) this.state = { at: 'data', remaining: size, padding };
    else this.handler.onEntryEnd();
  }
}
