/**
 * The executable of a stdio MCP server, pinned when a plan is made: found, its symlinks resolved,
 * its bytes hashed; checked again right before the server is launched.
 *
 * Rules it keeps:
 * - A command containing `/` names a path, resolved against the plan's base directory (absolute
 *   stays absolute); a bare name is looked up on the host's `PATH` as execvp does — the first
 *   entry holding an executable regular file wins (a relative or empty entry is taken in the
 *   base directory; without a `PATH` nothing is found). The process's current directory at launch
 *   plays no part.
 * - What is pinned is that file's real path and the SHA-256 of its bytes. A server is launched
 *   from the real path only, never by looking its command up again; a file there that is gone or
 *   has other bytes is refused before anything is spawned (`mcp_executable_changed`).
 * - The pin covers that one file. An interpreter named in its `#!` line, a script passed to it as
 *   an argument and the packages it loads are not pinned: pinning `node` does not pin the script
 *   it runs (docs/agent-definition.md says how to pin a script).
 * - A check is a point in time: a file replaced between the check and the spawn is not seen.
 * - Refusals carry the server's name and a reason code, never the command or a path.
 */
import { createHash } from 'node:crypto';
import { accessSync, closeSync, constants, openSync, readSync, realpathSync, statSync } from 'node:fs';
import { delimiter, resolve } from 'node:path';
import { executableChanged, executableNotFound, type ExecutableFault } from './errors.js';

/** A stdio server's executable as a plan pinned it. */
export interface McpExecutable {
  /** The file's real path (every symlink resolved): what is launched. */
  readonly realPath: string;
  /** Lowercase hex SHA-256 of the file's bytes when the plan was made. */
  readonly sha256: string;
}

/** Where a command is looked for: the plan's base directory and the host's `PATH` (undefined when unset). */
export interface ExecutableSearch {
  readonly baseDir: string;
  readonly path: string | undefined;
}

/** Find, resolve and hash the executable `command` names; throws `mcp_executable_not_found`. */
export function pinExecutable(server: string, command: string, search: ExecutableSearch): McpExecutable {
  const found = command.includes('/') ? candidate(resolve(search.baseDir, command)) : onPath(command, search);
  if (typeof found !== 'string') throw executableNotFound(server, found.fault);
  let realPath: string;
  let sha256: string;
  try {
    realPath = realpathSync(found);
    sha256 = sha256Of(realPath);
  } catch (e) {
    throw executableNotFound(server, faultOf(e), e);
  }
  return Object.freeze({ realPath, sha256 });
}

/** The pinned file, unchanged: throws `mcp_executable_changed` when it is gone or its bytes differ. */
export function checkExecutable(server: string, pinned: McpExecutable): void {
  let sha256: string;
  try {
    sha256 = sha256Of(pinned.realPath);
  } catch (e) {
    throw executableChanged(server, 'missing', e);
  }
  if (sha256 !== pinned.sha256) throw executableChanged(server, 'changed');
}

type Miss = { readonly fault: ExecutableFault };

/** The path when it is an executable regular file (statSync follows symlinks), else why not. */
function candidate(path: string): string | Miss {
  try {
    if (!statSync(path).isFile()) return { fault: 'not_a_file' };
  } catch (e) {
    return { fault: faultOf(e) };
  }
  try {
    accessSync(path, constants.X_OK);
  } catch {
    return { fault: 'not_executable' };
  }
  return path;
}

/** execvp's search: the first executable regular file; when none, the most telling miss (a file that is there over nothing). */
function onPath(name: string, search: ExecutableSearch): string | Miss {
  let miss: Miss = { fault: 'missing' };
  // No PATH, no search: an empty split would look in the base directory.
  for (const dir of search.path ? search.path.split(delimiter) : []) {
    const found = candidate(resolve(search.baseDir, dir, name));
    if (typeof found === 'string') return found;
    if (found.fault !== 'missing') miss = found;
  }
  return miss;
}

function faultOf(e: unknown): ExecutableFault {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return 'missing';
  if (code === 'EISDIR') return 'not_a_file';
  return 'unreadable';
}

/** SHA-256 of a file, read in chunks (an interpreter's binary is tens of megabytes). */
function sha256Of(path: string): string {
  const fd = openSync(path, 'r');
  try {
    const hash = createHash('sha256');
    const chunk = Buffer.allocUnsafe(1 << 20);
    for (let n = readSync(fd, chunk); n > 0; n = readSync(fd, chunk)) hash.update(chunk.subarray(0, n));
    return hash.digest('hex');
  } finally {
    closeSync(fd);
  }
}
