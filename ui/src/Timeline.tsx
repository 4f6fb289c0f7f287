/**
 * The pictures of a recovery, shared by the recovery page and the recovery-drill page: time as
 * bars on one axis with the recovery-time target (RTO) marked, and the recovery point (RPO) as
 * what the captured checkpoint holds beside what came after it — lost, known only to an external
 * system, or unknown — drawing only what is counted. Every picture is decoration over text that
 * says the same (its labels, its legend and its caption): a screen reader or a narrow screen loses
 * nothing.
 */
import type { ReactNode } from 'react';
import type { Recovery } from './types';

/** The budget the recovery drill holds a whole recovery to (verify, plan, apply and the first turn), as its definition freezes it. */
export const RTO_TARGET_MS = 60_000;

export interface Span {
  readonly key: string;
  /** The text of the row: what it is and its figure. */
  readonly label: ReactNode;
  readonly startMs: number;
  readonly ms: number;
  /** Drawn as missed (past its target). */
  readonly missed?: boolean;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Bars on one time axis from 0, scaled to the later of the last end and the target, the target marked on every track. */
export function TimeBars({ spans, targetMs, testId }: { spans: readonly Span[]; targetMs: number; testId?: string }) {
  const scale = Math.max(targetMs, ...spans.map((s) => s.startMs + s.ms));
  const pct = (ms: number) => `${((ms / scale) * 100).toFixed(2)}%`;
  return (
    <ol className="timeline" data-testid={testId}>
      {spans.map((s) => (
        <li key={s.key}>
          <span className="timeline-label">{s.label}</span>
          <span className="timeline-track" aria-hidden="true">
            <span
              className={s.missed ? 'timeline-bar timeline-missed' : 'timeline-bar'}
              style={{ marginLeft: pct(s.startMs), width: `max(2px, ${pct(s.ms)})` }}
            />
            <span className="timeline-target" style={{ left: pct(targetMs) }} />
          </span>
        </li>
      ))}
      <li className="timeline-axis" aria-hidden="true">
        <span className="timeline-track timeline-scale">
          <span className="timeline-tick">0 s</span>
          <span className="timeline-target-label" style={{ left: pct(targetMs) }}>
            target {seconds(targetMs).replace('.0 s', ' s')}
          </span>
        </span>
      </li>
    </ol>
  );
}

type Receipt = Recovery['status']['receipts'][number];

/** A real recovery's apply: each step as a bar on one time axis against the recovery-time target. */
export function RecoveryTimeline({ receipts }: { receipts: readonly Receipt[] }) {
  const t0 = Math.min(...receipts.map((x) => Date.parse(x.started_at)));
  const total = Math.max(...receipts.map((x) => Date.parse(x.done_at))) - t0;
  const spans = receipts.map((x) => {
    const ms = Date.parse(x.done_at) - Date.parse(x.started_at);
    return {
      key: x.action,
      label: `${x.action} — ${x.owner}: ${x.result}, ${ms} ms`,
      startMs: Date.parse(x.started_at) - t0,
      ms,
    };
  });
  return (
    <section aria-labelledby="receipts-heading" className="card">
      <h2 id="receipts-heading">Steps, their owners and their time</h2>
      <p data-testid="recovery-elapsed">
        The apply took {(total / 1000).toFixed(1)} s of the {RTO_TARGET_MS / 1000} s a whole recovery may take (verify,
        plan, apply and the first turn).
      </p>
      <TimeBars spans={spans} targetMs={RTO_TARGET_MS} testId="recovery-receipts" />
    </section>
  );
}

export interface RecoveryPoint {
  /** The captured checkpoint: its work transactions (null: not known yet), when its capture ended, its profile. */
  readonly captured: {
    readonly transactions: number | null;
    readonly endedAt: string | null;
    readonly profile: string;
  };
  /** Work the source committed after the checkpoint: lost with it (null: not countable — the source is gone). */
  readonly lostLocally: number | null;
  /** Deliveries an external system holds that the capture does not: known, kept, never sent again. */
  readonly committedAfter: number;
  /** Open holds: an outcome (or a receiver's confirmation) still awaited. */
  readonly unknown: number;
  /** Work claimed beyond the checkpoint (the drill measures it; 0 meets the target). */
  readonly claimedBeyond?: number;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const clock = (iso: string | null) =>
  iso === null ? 'at an unknown time' : `at ${new Date(iso).toISOString().slice(11, 19)} UTC`;

interface RpoPart {
  readonly key: string;
  readonly className: string;
  /** Its count: the length of its segment. Null: not counted — no segment is drawn for it. */
  readonly count: number | null;
  /** Its line of the legend (a counted part), or what it is that is not counted (an uncounted one). */
  readonly text: string;
}

/** The parts of the recovery point: each counted one a segment of the bar (when it has any) and a line of the legend. */
function rpoParts(p: RecoveryPoint): RpoPart[] {
  const t = p.captured.transactions;
  const capture = `(${p.captured.profile} capture, ended ${clock(p.captured.endedAt)})`;
  const parts: RpoPart[] = [
    {
      key: 'captured',
      className: 'rpo-captured',
      count: t,
      text:
        t === null
          ? `the work transactions the checkpoint holds ${capture}: recovered, but their number is not known here`
          : `Captured: ${plural(t, 'work transaction')} up to the checkpoint ${capture} — recovered`,
    },
    {
      key: 'lost',
      className: 'rpo-lost',
      count: p.lostLocally,
      text:
        p.lostLocally === null
          ? 'the work the lost source did after the capture (the source is gone)'
          : `Lost: ${plural(p.lostLocally, 'work item')} the source committed after the checkpoint`,
    },
    {
      key: 'external',
      className: 'rpo-external',
      count: p.committedAfter,
      text: `Committed after the capture, known to its receiver: ${plural(p.committedAfter, 'delivery', 'deliveries')} — kept, never sent again`,
    },
    {
      key: 'unknown',
      className: 'rpo-unknown',
      count: p.unknown,
      text: `Unknown: ${plural(p.unknown, 'open hold')} — an outcome still awaited`,
    },
  ];
  if (p.claimedBeyond !== undefined && p.claimedBeyond > 0) {
    parts.push({
      key: 'claimed',
      className: 'rpo-claimed',
      count: p.claimedBeyond,
      text: `Claimed beyond the checkpoint: ${plural(p.claimedBeyond, 'work transaction')} — MISSED`,
    });
  }
  return parts;
}

/**
 * The recovery point: the captured checkpoint beside what came after it, as one bar and its
 * legend. Only what is counted is drawn, each segment as long as its count; what is not counted
 * has no segment (a made-up length would read as a count) and is said in words under the legend.
 */
export function RpoPicture({ point, testId, caption }: { point: RecoveryPoint; testId?: string; caption: ReactNode }) {
  const parts = rpoParts(point);
  const counted = parts.filter((x): x is RpoPart & { count: number } => x.count !== null);
  const uncounted = parts.filter((x) => x.count === null);
  const drawn = counted.filter((x) => x.count > 0);
  const total = drawn.reduce((n, x) => n + x.count, 0);
  // The checkpoint is the end of the captured segment: marked only when that segment is drawn.
  const captured = drawn[0]?.key === 'captured' ? drawn[0] : undefined;
  // Its label starts at the boundary when it is in the left half of the bar, else ends there.
  const leftHalf = (captured?.count ?? 0) <= total / 2;
  return (
    <figure className="rpo" data-testid={testId}>
      {drawn.length > 0 ? (
        <>
          <div className="rpo-bar" aria-hidden="true">
            {drawn.map((x) => (
              <span key={x.key} className={`rpo-seg ${x.className}`} style={{ flexGrow: x.count }} />
            ))}
          </div>
          {/* The same segments, empty, so the label sits under the checkpoint: the end of the captured segment. */}
          <div className="rpo-scale" aria-hidden="true">
            {drawn.map((x) => (
              <span key={x.key} className="rpo-seg" style={{ flexGrow: x.count }}>
                {x === captured ? (
                  <span className={leftHalf ? 'rpo-mark rpo-mark-after' : 'rpo-mark rpo-mark-before'}>
                    {leftHalf ? '↑ captured checkpoint' : 'captured checkpoint ↑'}
                  </span>
                ) : null}
              </span>
            ))}
          </div>
        </>
      ) : null}
      <ul className="rpo-legend">
        {counted.map((x) => (
          <li key={x.key}>
            <span className={`rpo-swatch ${x.className}`} aria-hidden="true" /> {x.text}
          </li>
        ))}
      </ul>
      {uncounted.length > 0 ? (
        <ul className="rpo-not-counted" data-testid="rpo-not-counted">
          {uncounted.map((x) => (
            <li key={x.key}>Not counted: {x.text} — no segment is drawn for it.</li>
          ))}
        </ul>
      ) : null}
      <figcaption>{caption}</figcaption>
    </figure>
  );
}

/** A real recovery's point, from its state: the checkpoint it imported, the deliveries its receivers reported after it, its open holds. */
export function RecoveryRpo({ status }: { status: Recovery['status'] }) {
  const readback = (action: string) => status.receipts.find((r) => r.action === action)?.readback;
  const work = readback('work:import_inert');
  if (work === undefined) return null;
  const after = readback('effect:reconcile')?.['committed_after_capture'];
  const imported = work['imported_transactions'];
  const point: RecoveryPoint = {
    captured: {
      transactions: typeof imported === 'number' ? imported : null,
      endedAt: status.capture?.captured_at_end ?? null,
      profile: status.capture?.achieved_profile ?? 'unknown',
    },
    lostLocally: null,
    committedAfter: Array.isArray(after) ? after.length : 0,
    unknown: status.holds.length,
  };
  return (
    <section aria-labelledby="rpo-heading" className="card">
      <h2 id="rpo-heading">Recovery point</h2>
      <RpoPicture
        point={point}
        testId="recovery-rpo"
        caption="The new lifetime holds exactly the captured checkpoint: nothing after it is claimed as recovered. What an external system reported after it is kept under its original identity, never sent again."
      />
    </section>
  );
}
