/**
 * The end of a test file's in-process daemon: its running applies, work-run drives and verify jobs
 * first, then the app, then whatever it talked to (a receiver) — in that order, each once.
 */
import type { DaemonApp } from '../../src/daemon/index.js';

export async function closeDaemon(
  d: DaemonApp | undefined,
  ...others: ({ close(): Promise<void> } | undefined)[]
): Promise<void> {
  await d?.adoptions.close();
  await d?.drives.close();
  await d?.backups.close();
  await d?.app.close();
  for (const o of others) await o?.close();
}
