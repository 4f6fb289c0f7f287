/**
 * The daemon's disposable processes (a recovery drill, a repository backup or verification): a
 * module beside the caller's, run by the same Node in a process group of its own, handed one JSON
 * line on stdin, answering JSON lines on stdout — progress while it works, then one answer. Their
 * group is killed once they are reaped, so nothing they started (a drill's steps, a verification's
 * owner worker) outlives them.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * The entry `child` beside the module at `moduleUrl` (its `import.meta.url`): the built `.js`, or
 * under the sources (the CLI's tests) the `.ts` through tsx.
 */
export function siblingChild(moduleUrl: string, child: string): { path: string; loader: string[] } {
  const here = fileURLToPath(moduleUrl);
  const ext = here.endsWith('.ts') ? '.ts' : '.js';
  const path = here.replace(/[^/]+\.(ts|js)$/, `${child}${ext}`);
  if (ext === '.js') return { path, loader: [] };
  return { path, loader: ['--import', pathToFileURL(createRequire(moduleUrl).resolve('tsx')).href] };
}

export interface ChildRun {
  readonly entry: { readonly path: string; readonly loader: readonly string[] };
  /** Node options before the entry (a heap bound). */
  readonly nodeArgs?: readonly string[];
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  /** The one line written to its stdin. */
  readonly request: unknown;
  /** Longer answer lines are refused: the process is killed. */
  readonly maxLine: number;
  /** Whether a line is its answer (the last one counts); any other line with `progress` goes to `onProgress`. */
  readonly isAnswer: (doc: Record<string, unknown>) => boolean;
  readonly onProgress: (progress: unknown) => void;
  /** Aborted: the process is asked to stop (SIGTERM) and its group killed `graceMs` later; without `graceMs`, killed at once. */
  readonly stop: AbortSignal;
  readonly graceMs?: number;
}

/** Run the process until it answers and ends; resolves with its answer (undefined: none) once it is reaped and its group gone. */
export async function runChild(o: ChildRun): Promise<Record<string, unknown> | undefined> {
  const child = spawn(process.execPath, [...o.entry.loader, ...(o.nodeArgs ?? []), o.entry.path], {
    cwd: o.cwd,
    env: o.env,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  const killGroup = (): void => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // the group is gone already
    }
  };
  let grace: NodeJS.Timeout | undefined;
  const onStop = (): void => {
    if (o.graceMs === undefined) return killGroup();
    child.kill('SIGTERM');
    grace = setTimeout(killGroup, o.graceMs);
  };
  const exited = new Promise<void>((done) => {
    child.on('close', () => done());
    child.on('error', () => done());
  });
  child.stderr.resume();
  child.stdin.on('error', () => undefined);
  child.stdin.end(`${JSON.stringify(o.request)}\n`);
  o.stop.addEventListener('abort', onStop, { once: true });
  let answer: Record<string, unknown> | undefined;
  try {
    for await (const line of createInterface({ input: child.stdout, crlfDelay: Infinity })) {
      if (line.length > o.maxLine) {
        killGroup();
        break;
      }
      let doc: unknown;
      try {
        doc = JSON.parse(line);
      } catch {
        continue;
      }
      if (typeof doc !== 'object' || doc === null) continue;
      const d = doc as Record<string, unknown>;
      if (o.isAnswer(d)) answer = d;
      else if ('progress' in d) o.onProgress(d['progress']);
    }
  } finally {
    await exited;
    o.stop.removeEventListener('abort', onStop);
    clearTimeout(grace);
    // Whatever is left of its group (after a kill or a crash) goes.
    killGroup();
  }
  return answer;
}
