/**
 * A real short `loopx recover drill` with defects injected (the test-only LOOPX_TEST_DRILL_DEFECT,
 * src/runtime/drill/defects.ts): the new root is left without one captured work transaction, as an
 * import that dropped it would leave it, and the operator issues one command more than the
 * recovery needs. The drill must see both through its own readback and its own count — the RPO
 * and the human actions reported missed, every other figure still met — and exit 3 with the whole
 * receipt printed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { DRILL_TARGETS_SHA256 } from '../../src/runtime/drill/targets.js';
import { REPO, loopxAsync, type CliResult } from '../support/cli.js';
import type { Doc } from './support/adopt.js';

let run: CliResult;
let receipt: Doc;
beforeAll(async () => {
  run = await loopxAsync(['recover', 'drill', '--short', '--json'], {
    LOOPX_TEST_DRILL_DEFECT: 'drop-captured-transaction,extra-operator-command',
  });
  receipt = run.json();
}, 900_000);

describe('a real drill with a defect injected reports that figure missed', () => {
  it('exits 3 with a receipt the schema accepts, missing exactly the RPO and the human actions', () => {
    const schema = JSON.parse(readFileSync(join(REPO, 'docs/schemas/recover-drill.schema.json'), 'utf8'));
    const validate = new Ajv2020({ strict: true, allErrors: true }).compile(schema);
    expect(validate(receipt) ? [] : validate.errors).toEqual([]);
    expect(run.status).toBe(3);
    expect(receipt).toMatchObject({
      result: 'targets_missed',
      missed: ['rpo', 'human_actions'],
      targets_sha256: DRILL_TARGETS_SHA256,
      variant: 'same-host',
    });
    expect(receipt.cross_host).toBeUndefined();
  });

  it('an import that dropped one captured transaction: read back, the new root is older than its capture and lost one more', () => {
    // The recovery's import step still says it imported every captured transaction; the readback does not.
    expect(receipt.recovered).toMatchObject({
      imported_transactions: receipt.captured.work_cursor,
      source_transactions_held: receipt.captured.work_cursor - 1,
    });
    expect(receipt.rpo).toMatchObject({
      written_after_capture: 3,
      work_items_lost_locally: 4,
      work_items_lost_at_most: 3,
      claimed_beyond_checkpoint: 0,
      bounds: { nothing_claimed_beyond_checkpoint: true, within_capture_to_loss: false, within_work_items: false },
      met: false,
    });
    expect(receipt.rpo.seconds).toBeGreaterThan(receipt.rpo.capture_to_loss_seconds);
  });

  it('one extra operator command: counted as issued, over the limit', () => {
    expect(receipt.human_actions).toEqual({
      count: 4,
      visible_holds: 0,
      limit: 3,
      met: false,
      actions: ['loopx backup-state verify', 'loopx recover plan', 'loopx recover apply', 'loopx recover status'],
    });
  });

  it('every other figure is still met', () => {
    expect(receipt.rto.met).toBe(true);
    expect(receipt.protected_duplicates.met).toBe(true);
    expect(receipt.old_writers.met).toBe(true);
    expect(receipt.fault_injection.met).toBe(true);
    expect(receipt.cases.filter((c: { met: boolean }) => !c.met)).toEqual([]);
    expect(receipt.continued.met).toBe(true);
  });
});
