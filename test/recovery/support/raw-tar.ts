/**
 * A hand-rolled tar byte builder for the verifier's malicious-archive corpus. Unlike tar-stream
 * (which refuses to write most hostile headers), it writes exactly the bytes it is told: ustar
 * headers with any type flag, correct or corrupt checksums, malformed or base-256 numeric fields,
 * foreign magic, raw (non-UTF-8, control-character) names and prefixes, PAX `x`/`g` records with
 * any keys and sizes, GNU long names (`L`/`K`), sparse headers, arbitrary end-of-archive blocks
 * and trailing bytes; and a gzip layer with optional trailing bytes and concatenated members.
 *
 * By default it writes byte for byte what the loopx producer writes (src/backup/tar-writer.ts
 * through tar-stream's encoder): POSIX ustar (magic "ustar\0", version "00"), numbers as
 * zero-padded octal followed by a space, uid/gid 0, empty uname/gname, mode 0600 for files and
 * 0700 for directories, one mtime; a name ustar cannot hold (non-ASCII, or too long to split into
 * prefix/name) goes into a PAX `path` record, the PAX header and the member header both named
 * "PaxHeader"; and two zero blocks at the end (no record padding).
 */
import { gzipSync } from 'node:zlib';

export const BLOCK = 512;

/** A text field: a string is written as UTF-8, a Buffer as raw bytes. */
export type Field = string | Buffer;

export type NumericField = 'mode' | 'uid' | 'gid' | 'size' | 'mtime' | 'devmajor' | 'devminor';

/** The ustar header layout: [offset, width]. */
export const USTAR = {
  name: [0, 100],
  mode: [100, 8],
  uid: [108, 8],
  gid: [116, 8],
  size: [124, 12],
  mtime: [136, 12],
  chksum: [148, 8],
  typeflag: [156, 1],
  linkname: [157, 100],
  magic: [257, 6],
  version: [263, 2],
  uname: [265, 32],
  gname: [297, 32],
  devmajor: [329, 8],
  devminor: [337, 8],
  prefix: [345, 155],
} as const;

export interface HeaderSpec {
  /** The name field (truncated to 100 bytes; use `prefix` or a PAX `path` for longer names). */
  name: Field;
  prefix?: Field;
  /** Type flag, one character: '0' file, '5' directory, '2' symlink, '1' hard link, 'x', 'g', 'L', 'K', 'S', '3', '4', '6', '7', 'Z', … */
  typeflag?: string;
  mode?: number;
  uid?: number;
  gid?: number;
  size?: number;
  /** Seconds since the epoch. */
  mtime?: number;
  linkname?: Field;
  /** 6 bytes; default "ustar\0". */
  magic?: Field;
  /** 2 bytes; default "00". */
  version?: Field;
  uname?: Field;
  gname?: Field;
  devmajor?: number;
  devminor?: number;
  /** Raw bytes for a numeric field, written as-is (base-256, malformed octal, …). */
  raw?: Partial<Record<NumericField, Buffer>>;
  /** 'valid' (default), 'corrupt' (the right sum plus one) or an explicit stored value. */
  checksum?: 'valid' | 'corrupt' | number;
}

/** The producer's modes: directories 0700, everything else 0600 (a symlink, which it never writes, 0777). */
const defaultMode = (typeflag: string): number => (typeflag === '5' ? 0o700 : typeflag === '2' ? 0o777 : 0o600);

const bytesOf = (f: Field): Buffer => (typeof f === 'string' ? Buffer.from(f, 'utf8') : f);

/** Octal digits tar-stream writes per numeric field (then a space; an 8-byte field keeps a final NUL). */
const OCTAL_DIGITS: Record<NumericField, number> = {
  mode: 6,
  uid: 6,
  gid: 6,
  size: 11,
  mtime: 11,
  devmajor: 6,
  devminor: 6,
};

/** An octal number field as tar-stream writes it: `digits` zero-padded octal digits then a space. */
export function octalField(value: number, digits: number): Buffer {
  const text = Math.trunc(value).toString(8);
  if (text.length > digits) throw new Error(`octal ${value} does not fit ${digits} digits`);
  return Buffer.from(`${text.padStart(digits, '0')} `, 'latin1');
}

/** A GNU base-256 number field: high bit set in the first byte, then big-endian two's complement. */
export function base256Field(value: number | bigint, width: number): Buffer {
  const out = Buffer.alloc(width);
  let v = BigInt(value);
  for (let i = width - 1; i >= 1; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  out[0] = 0x80;
  return out;
}

function put(block: Buffer, field: keyof typeof USTAR, value: Buffer): void {
  const [offset, width] = USTAR[field];
  value.copy(block, offset, 0, Math.min(width, value.length));
}

/** The ustar checksum of `block` (its checksum field counted as spaces). */
export function checksumOf(block: Buffer): number {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i]!;
  return sum;
}

/** One 512-byte header block. */
export function header(spec: HeaderSpec): Buffer {
  const block = Buffer.alloc(BLOCK);
  const typeflag = spec.typeflag ?? '0';
  put(block, 'name', bytesOf(spec.name));
  const numbers: Record<NumericField, number> = {
    mode: spec.mode ?? defaultMode(typeflag),
    uid: spec.uid ?? 0,
    gid: spec.gid ?? 0,
    size: spec.size ?? 0,
    mtime: spec.mtime ?? 0,
    devmajor: spec.devmajor ?? 0,
    devminor: spec.devminor ?? 0,
  };
  for (const key of Object.keys(numbers) as NumericField[])
    put(block, key, spec.raw?.[key] ?? octalField(numbers[key], OCTAL_DIGITS[key]));
  put(block, 'typeflag', Buffer.from(typeflag, 'latin1'));
  if (spec.linkname !== undefined) put(block, 'linkname', bytesOf(spec.linkname));
  put(block, 'magic', bytesOf(spec.magic ?? 'ustar\0'));
  put(block, 'version', bytesOf(spec.version ?? '00'));
  if (spec.uname !== undefined) put(block, 'uname', bytesOf(spec.uname));
  if (spec.gname !== undefined) put(block, 'gname', bytesOf(spec.gname));
  if (spec.prefix !== undefined) put(block, 'prefix', bytesOf(spec.prefix));
  const sum = checksumOf(block);
  const stored =
    spec.checksum === undefined || spec.checksum === 'valid'
      ? sum
      : spec.checksum === 'corrupt'
        ? sum + 1
        : spec.checksum;
  put(block, 'chksum', octalField(stored, 6));
  return block;
}

/** One PAX record, "<len> <key>=<value>\n", its length counting itself. */
export function paxRecord(key: string, value: Field): Buffer {
  const body = Buffer.concat([Buffer.from(` ${key}=`, 'utf8'), bytesOf(value), Buffer.from('\n')]);
  let len = body.length + 1;
  while (String(len).length + body.length !== len) len = String(len).length + body.length;
  return Buffer.concat([Buffer.from(String(len), 'latin1'), body]);
}

export type PaxRecords = ReadonlyArray<readonly [string, Field]>;

export const paxData = (records: PaxRecords): Buffer => Buffer.concat(records.map(([k, v]) => paxRecord(k, v)));

const padding = (n: number): Buffer => Buffer.alloc((BLOCK - (n % BLOCK)) % BLOCK);

/**
 * Split a name the way tar-stream does (leading components move into the prefix until the name
 * fits 100 bytes; the prefix must fit 155); undefined when ustar cannot hold it — a non-ASCII
 * name included, which tar-stream always puts in a PAX record.
 */
export function ustarSplit(name: string): { prefix: string; name: string } | undefined {
  if (Buffer.byteLength(name) !== name.length) return undefined;
  let rest = name;
  let prefix = '';
  while (rest.length > 100) {
    const i = rest.indexOf('/');
    if (i === -1) return undefined;
    prefix += prefix ? `/${rest.slice(0, i)}` : rest.slice(0, i);
    rest = rest.slice(i + 1);
  }
  if (prefix.length > 155) return undefined;
  return { prefix, name: rest };
}

/** Options of a convenience member: header overrides and PAX records written before it. */
export interface MemberOptions extends Partial<HeaderSpec> {
  pax?: PaxRecords;
}

export class RawTar {
  private readonly parts: Buffer[] = [];
  private size = 0;

  constructor(readonly defaults: { mtime?: number } = {}) {}

  get length(): number {
    return this.size;
  }

  /** Append raw bytes (no padding): trailing garbage, partial blocks, … */
  raw(bytes: Buffer): this {
    this.parts.push(bytes);
    this.size += bytes.length;
    return this;
  }

  header(spec: HeaderSpec): this {
    return this.raw(header({ ...spec, mtime: spec.mtime ?? this.defaults.mtime }));
  }

  /** Member data followed by zero padding to the block size (unless `pad` is false). */
  data(bytes: Buffer, pad = true): this {
    this.raw(bytes);
    if (pad) this.raw(padding(bytes.length));
    return this;
  }

  /** A PAX extended header ('x', or 'g' for a global one) holding `records` (or `raw` data bytes). */
  pax(records: PaxRecords, options: { typeflag?: 'x' | 'g'; raw?: Buffer; name?: string; size?: number } = {}): this {
    const data = options.raw ?? paxData(records);
    this.header({
      name: options.name ?? 'PaxHeader',
      typeflag: options.typeflag ?? 'x',
      mode: 0o644,
      size: options.size ?? data.length,
    });
    return this.data(data);
  }

  /** A GNU long name ('L') or long link name ('K') pseudo-member. */
  gnuLong(typeflag: 'L' | 'K', value: string): this {
    const data = Buffer.from(`${value}\0`, 'utf8');
    this.header({ name: '././@LongLink', typeflag, mode: 0o644, size: data.length });
    return this.data(data);
  }

  /**
   * Any member: a header (the name split the ustar way, or carried by a PAX `path` record when
   * ustar cannot hold it) preceded by a PAX header when there are records, then the data. As in
   * tar-stream, the PAX header copies the member's mode, ids and mtime, and a member whose name
   * is in PAX is itself named "PaxHeader".
   */
  member(name: string, typeflag: string, data: Buffer | undefined, options: MemberOptions = {}): this {
    const { pax, ...spec } = options;
    const records: Array<readonly [string, Field]> = [...(pax ?? [])];
    let fields: { name: Field; prefix?: Field } = { name };
    if (spec.name === undefined && spec.prefix === undefined) {
      const split = ustarSplit(name);
      if (split) fields = split.prefix === '' ? { name: split.name } : split;
      else {
        if (!records.some(([k]) => k === 'path')) records.unshift(['path', name]);
        fields = { name: 'PaxHeader' };
      }
    }
    const spec0: HeaderSpec = { ...fields, typeflag, size: data?.length ?? 0, mode: defaultMode(typeflag), ...spec };
    if (records.length > 0) {
      const paxBytes = paxData(records);
      const linked = spec0.linkname !== undefined && bytesOf(spec0.linkname).length > 0;
      const { mode, uid, gid, mtime, uname, gname } = spec0;
      this.header({
        name: 'PaxHeader',
        typeflag: 'x',
        size: paxBytes.length,
        mode,
        uid,
        gid,
        mtime,
        uname,
        gname,
        ...(linked ? { linkname: 'PaxHeader' } : {}),
      });
      this.data(paxBytes);
    }
    this.header(spec0);
    if (data !== undefined && data.length > 0) this.data(data);
    return this;
  }

  file(name: string, data: Buffer, options: MemberOptions = {}): this {
    return this.member(name, '0', data, options);
  }

  /** A directory; its name is written with the trailing `/` the producer writes. */
  dir(name: string, options: MemberOptions = {}): this {
    return this.member(name.endsWith('/') ? name : `${name}/`, '5', undefined, options);
  }

  symlink(name: string, target: string, options: MemberOptions = {}): this {
    return this.member(name, '2', undefined, { linkname: target, ...options });
  }

  hardlink(name: string, target: string, options: MemberOptions = {}): this {
    return this.member(name, '1', undefined, { linkname: target, ...options });
  }

  /** The end-of-archive marker: `blocks` zero blocks (two in a well-formed archive). */
  end(blocks = 2): this {
    return this.raw(Buffer.alloc(BLOCK * blocks));
  }

  bytes(): Buffer {
    return Buffer.concat(this.parts, this.size);
  }
}

export interface GzipOptions {
  level?: number;
  /** Raw bytes after the gzip stream. */
  trailing?: Buffer;
  /** Further gzip members concatenated after the first, each compressing these bytes. */
  members?: readonly Buffer[];
}

/** A gzip layer over `tar`. */
export function gzip(tar: Buffer, options: GzipOptions = {}): Buffer {
  const level = options.level ?? 6;
  return Buffer.concat([
    gzipSync(tar, { level }),
    ...(options.members ?? []).map((m) => gzipSync(m, { level })),
    options.trailing ?? Buffer.alloc(0),
  ]);
}
