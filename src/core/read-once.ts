/**
 * Reading a small state file exactly once, without following a link at its final component and
 * within a size bound. A link, a non-regular file or an oversized file is unreadable, never
 * absent: only a confirmed ENOENT reads as `null`.
 */
import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
import { rejected } from './errors.js';

export interface ReadOnceOptions {
  /**
   * The error thrown for an unreadable path, from a short phrase of why ("it is a symbolic link",
   * "it is not a regular file", an errno code, …). Default: a `file_unreadable` rejection.
   */
  readonly unreadable?: (what: string) => Error;
  /** The phrase for a file over `maxBytes` (default "it exceeds its size bound"). */
  readonly tooLarge?: string;
}

const fileUnreadable = (what: string): Error =>
  rejected('file_unreadable', `A file cannot be read: ${what}.`, {
    nextAction: 'replace the path with a regular file (restore it from a backup)',
  });

/**
 * The bytes of the regular file at `path`, read once through one descriptor opened with
 * O_NOFOLLOW; `null` only when the path does not exist. Refuses (through `options.unreadable`) a
 * path that cannot be opened, is not a regular file, or holds more than `maxBytes`. Failures while
 * reading an opened file are thrown as they are.
 */
export function readRegularFileOnce(path: string, maxBytes: number, options: ReadOnceOptions = {}): Uint8Array | null {
  const unreadable = options.unreadable ?? fileUnreadable;
  const tooLarge = options.tooLarge ?? 'it exceeds its size bound';
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO put in the file's place must not block the open (it is refused below).
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    throw unreadable(code === 'ELOOP' ? 'it is a symbolic link' : (code ?? 'I/O error'));
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw unreadable('it is not a regular file');
    if (st.size > maxBytes) throw unreadable(tooLarge);
    const bytes = readFileSync(fd);
    if (bytes.byteLength > maxBytes) throw unreadable(tooLarge);
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  } finally {
    closeSync(fd);
  }
}
