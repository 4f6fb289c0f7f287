/**
 * Column checks for row decoders. A decoder checks every column of a row it reads; a column it
 * cannot prove well-formed throws `RowInvalid` naming the column, and the owner refuses the row
 * (live read) or reports it as a finding (historical read) — never guesses.
 */

/** Thrown by column checks and decoders; the field is public-safe (a column name). */
export class RowInvalid extends Error {
  constructor(readonly field: string) {
    super(`column ${field} is not well-formed`);
  }
}

/** A non-empty string. */
export const textColumn = (v: unknown, field: string): string => {
  if (typeof v !== 'string' || v.length === 0) throw new RowInvalid(field);
  return v;
};

export const textOrNullColumn = (v: unknown, field: string): string | null =>
  v === null ? null : textColumn(v, field);

/** A safe integer (a bigint is converted) of at least `min`. */
export const intColumn = (v: unknown, field: string, min: number): number => {
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min) throw new RowInvalid(field);
  return n;
};

export const oneOfColumn = <T extends string>(v: unknown, field: string, allowed: readonly T[]): T => {
  if (!(allowed as readonly unknown[]).includes(v)) throw new RowInvalid(field);
  return v as T;
};

/** A non-empty string `Date.parse` accepts. */
export const instantColumn = (v: unknown, field: string): string => {
  const s = textColumn(v, field);
  if (Number.isNaN(Date.parse(s))) throw new RowInvalid(field);
  return s;
};

export const instantOrNullColumn = (v: unknown, field: string): string | null =>
  v === null ? null : instantColumn(v, field);

/** A non-empty string holding JSON; the parsed value is returned as `T` (unchecked). */
export const jsonColumn = <T = unknown>(v: unknown, field: string): T => {
  try {
    return JSON.parse(textColumn(v, field)) as T;
  } catch {
    throw new RowInvalid(field);
  }
};

export const jsonOrNullColumn = <T = unknown>(v: unknown, field: string): T | null =>
  v === null ? null : jsonColumn<T>(v, field);

/** A lowercase hex SHA-256 digest. */
export const sha256Column = (v: unknown, field: string): string => {
  const digest = textColumn(v, field);
  if (!/^[0-9a-f]{64}$/.test(digest)) throw new RowInvalid(field);
  return digest;
};
