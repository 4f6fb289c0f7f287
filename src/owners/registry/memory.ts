/**
 * In-memory reference registry: the same contract over one byte buffer, so revisions, exact
 * reads and conflicts behave exactly as on disk. `initialBytes` seeds arbitrary (even invalid)
 * content for tests; nothing is shared with the caller.
 */
import { checkRevision, encodeRegistry, exactRead, toRead, withGoal, withGoalStatus, withProject } from './codec.js';
import type { Registry, RegistryDocument, RegistryRead } from './contract.js';

export function memoryRegistry(initialBytes: Uint8Array | null = null): Registry {
  let stored: Uint8Array | null = initialBytes === null ? null : new Uint8Array(initialBytes);
  const readExact = () => exactRead(stored);

  const mutate = (expectedRevision: string, change: (doc: RegistryDocument) => RegistryDocument): RegistryRead => {
    const current = readExact();
    checkRevision(current.revision, expectedRevision);
    const bytes = encodeRegistry(change(current.value));
    if (current.bytes !== null && Buffer.from(bytes).equals(current.bytes)) return toRead(current);
    stored = bytes;
    return toRead(exactRead(bytes));
  };

  return {
    read: () => toRead(readExact()),
    readExact,
    addProject: (project, expectedRevision) => mutate(expectedRevision, (doc) => withProject(doc, project)),
    registerGoal: (goal, expectedRevision) => mutate(expectedRevision, (doc) => withGoal(doc, goal)),
    updateGoalStatus: (update, expectedRevision) => mutate(expectedRevision, (doc) => withGoalStatus(doc, update)),
  } satisfies Registry;
}
