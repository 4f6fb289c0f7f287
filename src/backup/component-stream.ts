/**
 * The order a `loopx_state_backup_v1` archive is written in while its set is captured on the capture
 * thread (capture-thread.ts): first every planned directory and absence witness; then, component by
 * component in the set's capture order and as soon as each is captured, its export and its members
 * from the owner's copies (a component's export always precedes its databases, so verification
 * reads them together), with the members no owner keeps filling every wait for the next component
 * (the archive never idles while an owner captures) and whatever of them is left after the last.
 * So the owners' databases come as early as their capture allows, and the verifier, which checks
 * each database as soon as it is extracted, has the rest of the archive to finish them in;
 * last, the crash-consistent observed bytes no component archived as its member (a database with its
 * journal). The set's end re-check finishes on the thread meanwhile; the caller writes the manifest
 * once it is done.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { ARCHIVE_EXPORTS } from './components.js';
import type { CaptureStep } from './create.js';
import { archivePathOf } from './paths.js';
import type { SetCaptureThread } from './capture-thread.js';
import { ARCHIVE_OBSERVATION, type CapturedSet, type ComponentReady, type PlannedComponent } from './set-capture.js';

/** What the archive run offers the component stream. */
export interface ComponentSink {
  /** Archives one planned (or captured-only) step, from the owner's copy where `route` registered one. */
  step(step: CaptureStep): Promise<void>;
  /** Archives a file or an in-memory member of an origin of its own. */
  extra(
    archivePath: string,
    content: { readonly file: string } | { readonly bytes: Uint8Array },
    origin: 'owner_export' | 'failure_observation',
  ): Promise<void>;
  directory(archivePath: string, origin: 'owner_export' | 'failure_observation'): Promise<void>;
  /** Registers a captured component's copies, databases and withheld members before its steps run. */
  route(ready: ComponentReady): void;
}

const byArchivePath = (a: CaptureStep, b: CaptureStep): number =>
  a.archive_path < b.archive_path ? -1 : a.archive_path > b.archive_path ? 1 : 0;

/** The component whose owner keeps `path`: the most specific of the planned components' paths. */
function ownerOf(planned: readonly PlannedComponent[], path: string): string | undefined {
  let best: { id: string; length: number } | undefined;
  for (const c of planned)
    for (const p of c.paths)
      if ((path === p || path.startsWith(`${p}/`)) && (best === undefined || p.length > best.length))
        best = { id: c.component_id, length: p.length };
  return best?.id;
}

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');

/** Owner-captured members the plan did not list (created after planning), with any directory above them it did not list either. */
export function capturedOnlySteps(planned: Set<string>, files: readonly (readonly [string, string])[]): CaptureStep[] {
  const steps: CaptureStep[] = [];
  for (const [rel, abs] of files) {
    if (planned.has(rel)) continue;
    const parts = rel.split('/');
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join('/');
      if (!planned.has(dir)) {
        planned.add(dir);
        steps.push({ path: dir, archive_path: archivePathOf(dir), kind: 'directory' });
      }
    }
    planned.add(rel);
    const head = Buffer.alloc(16);
    const fd = openSync(abs, 'r');
    try {
      readSync(fd, head, 0, 16, 0);
    } finally {
      closeSync(fd);
    }
    steps.push({ path: rel, archive_path: archivePathOf(rel), kind: head.equals(SQLITE_MAGIC) ? 'sqlite' : 'file' });
  }
  return steps;
}

/** Streams `steps` (the plan's, sorted) and every component as the thread captures it; returns the captured set. */
export async function streamComponents(
  thread: SetCaptureThread,
  steps: readonly CaptureStep[],
  plannedPaths: Set<string>,
  sink: ComponentSink,
): Promise<CapturedSet> {
  const planned = await thread.plan.promise;
  const own = new Map<string, CaptureStep[]>(planned.map((c) => [c.component_id, []]));
  const unowned: CaptureStep[] = [];
  for (const s of steps) {
    const id = s.kind === 'directory' || s.kind === 'absence_witness' ? undefined : ownerOf(planned, s.path);
    if (id === undefined) unowned.push(s);
    else own.get(id)!.push(s);
  }
  const fill = unowned.filter((s) => s.kind !== 'directory' && s.kind !== 'absence_witness');
  for (const s of unowned) if (s.kind === 'directory' || s.kind === 'absence_witness') await sink.step(s);

  let exportsDir = false;
  for (const c of planned) {
    const next = thread.component(c.component_id);
    let captured = false;
    next.then(
      () => (captured = true),
      () => undefined,
    );
    // While the owner captures, the archive carries what no owner keeps.
    while (!captured && fill.length > 0) await sink.step(fill.shift()!);
    const ready = await next;
    sink.route(ready);
    if (ready.export !== null) {
      if (!exportsDir) await sink.directory(ARCHIVE_EXPORTS, 'owner_export');
      exportsDir = true;
      await sink.extra(ready.export.archive_path, { bytes: ready.export.bytes }, 'owner_export');
    }
    for (const s of [...own.get(c.component_id)!, ...capturedOnlySteps(plannedPaths, ready.files)].sort(byArchivePath))
      await sink.step(s);
  }
  for (const s of fill) await sink.step(s);
  const set = await thread.done.promise;
  if (set.observed.length > 0) {
    await sink.directory(ARCHIVE_OBSERVATION, 'failure_observation');
    for (const o of set.observed) await sink.extra(o.archive_path, { file: o.file }, 'failure_observation');
  }
  return set;
}
