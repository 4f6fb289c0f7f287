/**
 * Recoveries under repetition (`npm run stress`), with the real CLI and a real loopback receiver:
 *
 * - Concurrent applies: four `recover apply` processes started together on one destination, in
 *   each of `LOOPX_STRESS_TRIALS × 4` trials (default 20). Exactly the lock's holder applies; every
 *   other is refused `recover_busy` or, started after it ended, answers the completed status; the
 *   journal holds one intent and one receipt per step; nothing is stranded.
 * - Racing destinations: two destinations of one workspace applied together, in each of
 *   `LOOPX_STRESS_TRIALS × 2` trials (default 10): one ends `complete`, the other `complete` never
 *   — it ends `abandoned` naming the winner (or is refused before it began), with its minted
 *   lifetime retired.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { loopxAsync } from '../support/cli.js';
import { ok, plan, sourceWithBackup, type Doc } from '../recovery/support/adopt.js';

const TRIALS = Number(process.env['LOOPX_STRESS_TRIALS'] ?? '5');

let sink: WebhookSink;
beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
});
afterAll(async () => {
  await sink.close();
});

const journal = (destination: string) =>
  readFileSync(`${destination}/recovery/journal.jsonl`, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { seq: number; event: string; action?: string });

describe('concurrent applies of one destination', () => {
  it(`in each of ${TRIALS * 4} trials one applies and nothing strands`, async () => {
    const tally = { applied: 0, busy: 0, answered: 0 };
    for (let trial = 0; trial < TRIALS * 4; trial++) {
      const s = await sourceWithBackup(sink, { afterCapture: false });
      const { destination, doc } = plan(s, `d${trial}`);
      const runs = await Promise.all(
        [0, 1, 2, 3].map(() =>
          loopxAsync([
            'recover',
            'apply',
            '--destination',
            destination,
            '--confirm',
            doc.plan_digest,
            '--authority-dir',
            s.authority,
            '--json',
          ]),
        ),
      );
      for (const r of runs) {
        const d = JSON.parse(r.stdout || '{}') as Doc;
        if (r.status === 0) tally[d.state === 'complete' ? 'applied' : 'answered']++;
        else {
          expect(d.error?.code, r.stdout + r.stderr).toBe('recover_busy');
          tally.busy++;
        }
      }
      expect(ok(s, ['recover', 'status', '--destination', destination]).state).toBe('complete');
      const lines = journal(destination);
      expect(lines.map((l) => l.seq)).toEqual(lines.map((_, i) => i + 1));
      for (const step of doc.steps as { action: string }[])
        expect(lines.filter((l) => l.event === 'done' && l.action === step.action)).toHaveLength(1);
    }
    console.log(
      `concurrent applies: ${TRIALS * 4} trials × 4 processes — completed ${tally.applied}, refused recover_busy ${tally.busy}, other ${tally.answered}; 0 stranded`,
    );
  });
});

describe('two destinations racing for one Goal', () => {
  it(`in each of ${TRIALS * 2} trials exactly one completes and the other ends`, async () => {
    const ends: Record<string, number> = {};
    for (let trial = 0; trial < TRIALS * 2; trial++) {
      const s = await sourceWithBackup(sink, { afterCapture: false });
      const ps = [plan(s, `a${trial}`), plan(s, `b${trial}`)];
      const runs = await Promise.all(
        ps.map((p) =>
          loopxAsync([
            'recover',
            'apply',
            '--destination',
            p.destination,
            '--confirm',
            p.doc.plan_digest,
            '--authority-dir',
            s.authority,
            '--json',
          ]),
        ),
      );
      const states = ps.map((p) => ok(s, ['recover', 'status', '--destination', p.destination]) as Doc);
      expect(states.filter((st) => st.state === 'complete')).toHaveLength(1);
      const loser = states.find((st) => st.state !== 'complete')!;
      const run = runs[states.indexOf(loser)]!;
      const how =
        loser.state === 'abandoned' ? 'abandoned' : `refused ${(JSON.parse(run.stdout || '{}') as Doc).error?.code}`;
      // Refused before it began (the winner superseded first): its plan is dead, never applying half-way.
      if (loser.state !== 'abandoned') {
        expect(loser.state).toBe('adoption_prepared');
        expect((JSON.parse(run.stdout || '{}') as Doc).error?.code).toBe('recover_lifetime_superseded_elsewhere');
      }
      ends[how] = (ends[how] ?? 0) + 1;
    }
    console.log(`racing destinations: ${TRIALS * 2} trials, one complete each; the other: ${JSON.stringify(ends)}`);
  });
});
