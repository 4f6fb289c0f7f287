/**
 * The config owner's adoption step (`rebind`): the recovered machine configuration's namespaces —
 * references only (an endpoint, the name of an environment variable; never a secret: credentials
 * are references by design) — applied to the destination's configuration in one transaction whose
 * id is the step's idempotency key. A retry finds that transaction's receipt and applies nothing.
 * The source's store choice (`store`: its own database and schema) is never adopted: the
 * destination keeps its Goal state where the recovery plan put it, and must never write the
 * source's database.
 */
import { rejected } from '../../core/index.js';
import { stepReceipt, type OwnerAdoptionStep } from '../adoption-contract.js';
import { STORE_CONFIG_NAMESPACE } from './contract.js';
import { openFileConfigStore } from './file.js';
import { readHistoricalCopy } from './historical.js';

const rebind: OwnerAdoptionStep = {
  action: 'config:rebind',
  disposition: 'rebind',
  describes:
    "the machine configuration's references (endpoints, names of environment variables) in the new root; no credential is copied",
  async apply(ctx) {
    const source = readHistoricalCopy(ctx.workspace_root).configuration;
    if (source === null) {
      throw rejected(
        'recovery_config_unreadable',
        'The recovered machine configuration cannot be read from the workspace.',
        {
          nextAction: 'verify the backup again into a new workspace and plan the recovery from it',
        },
      );
    }
    const { [STORE_CONFIG_NAMESPACE]: sourceStore, ...namespaces } = source.value?.namespaces ?? {};
    const store = openFileConfigStore(ctx.destination);
    const transactionId = ctx.key(rebind.action);
    let receipt = store.receipt(transactionId);
    const result = receipt === undefined ? 'applied' : 'already';
    if (receipt === undefined && Object.keys(namespaces).length > 0) {
      ctx.fault(`recover.${rebind.action}.before`);
      receipt = store.apply({ expectedRevision: store.read().revision, transactionId, changes: namespaces });
      ctx.fault(`recover.${rebind.action}.after`);
    }
    const now = store.read();
    return stepReceipt(rebind, 'config', ctx, result, {
      revision: now.revision,
      namespaces: Object.keys(now.value.namespaces).sort(),
      transaction: receipt?.transaction_id ?? null,
      not_adopted: sourceStore === undefined ? [] : [STORE_CONFIG_NAMESPACE],
    });
  },
};

export const adoptionSteps: readonly OwnerAdoptionStep[] = [rebind];
