/**
 * Latches on `LOOPX_TEST_FAULT=stop:<point>`: a child that SIGSTOPs itself at a named point is seen
 * stopped here (its state in /proc), and resumed at every later stop until it ends — a stop point
 * fires each time it is reached.
 */
import { readFileSync } from 'node:fs';

/** Whether process `pid` is stopped (state T in /proc). */
export function stopped(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.startsWith('T');
  } catch {
    return false;
  }
}

/** Resume `child` whenever it stops, until `ended` settles. */
export function resumeUntilEnded(
  child: { readonly pid?: number | undefined; kill(signal: NodeJS.Signals): boolean },
  ended: Promise<unknown>,
): void {
  const resume = setInterval(() => stopped(child.pid!) && child.kill('SIGCONT'), 20);
  void ended.finally(() => clearInterval(resume));
}
