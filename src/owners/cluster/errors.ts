/** The cluster owner's one refusal of its own, built only here (every provider calls it). */
import { conflict, type LoopxError } from '../../core/index.js';

/** An instance id joins once: ids are fresh per daemon start, so a second join is a bug or a copy, never a restart. */
export const instanceExists = (instanceId: string): LoopxError =>
  conflict(
    'cluster_instance_exists',
    `Instance ${instanceId} has already joined this cluster; a daemon joins under a new instance id.`,
    {
      nextAction: 'start the daemon again: every start joins under a new instance id',
      details: { instance_id: instanceId },
    },
  );
