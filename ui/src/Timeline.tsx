/**
 * The pictures of a recovery, shared by the recovery page and the recovery-drill page: time as
 * bars on one axis with the recovery-time target (RTO) marked, and the recovery point (RPO) as
 * what the captured checkpoint holds beside what came after it — lost, known only to an external
 * system, or unknown. Every picture is decoration over text that says the same (its labels, its
 * legend and its caption): a screen reader or a narrow screen loses nothing.
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
            <span className={s.missed ? 'timeline-bar timeline-missed' : 'timeline-bar'} style={{ marginLeft: pct(s.startMs), width: `max(2px, ${pct(s.ms)})` }} />
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
        The apply took {(total / 1000).toFixed(1)} s of the {RTO_TARGET_MS / 1000} s a whole recovery may take (verify, plan, apply and the first turn).
      </p>
      <TimeBars spans={spans} targetMs={RTO_TARGET_MS} testId="recovery-receipts" />
    </section>
  );
}

export interface RecoveryPoint {
  /** The captured checkpoint: its work transactions (null: not known yet), when its capture ended, its profile. */
  readonly captured: { readonly transactions: number | null; readonly endedAt: string | null; readonly profile: string };
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
const clock = (iso: string | null) => (iso === null ? 'at an unknown time' : `at ${new Date(iso).toISOString().slice(11, 19)} UTC`);

/** The parts of the recovery point, each a segment of the bar (when it has any) and a line of the legend. */
function rpoParts(p: RecoveryPoint): { key: string; className: string; grow: number; text: string }[] {
  const t = p.captured.transactions;
  const parts = [
    {
      key: 'captured',
      className: 'rpo-captured',
      grow: t ?? 1,
      text: `Captured: ${t === null ? 'the Goal’s committed work' : plural(t, 'work transaction')} up to the checkpoint (${p.captured.profile} capture, ended ${clock(p.captured.endedAt)}) — recovered`,
    },
    {
      key: 'lost',
      className: p.lostLocally === null ? 'rpo-lost rpo-uncounted' : 'rpo-lost',
      grow: p.lostLocally ?? 1,
      text:
        p.lostLocally === null
          ? 'Lost: any work the source did after the checkpoint — not countable here, the source is gone'
          : `Lost: ${plural(p.lostLocally, 'work item')} the source committed after the checkpoint`,
    },
    {
      key: 'external',
      className: 'rpo-external',
      grow: p.committedAfter,
      text: `Committed after the capture, known to its receiver: ${plural(p.committedAfter, 'delivery', 'deliveries')} — kept, never sent again`,
    },
    { key: 'unknown', className: 'rpo-unknown', grow: p.unknown, text: `Unknown: ${plural(p.unknown, 'open hold')} — an outcome still awaited` },
  ];
  if (p.claimedBeyond !== undefined && p.claimedBeyond > 0) {
    parts.push({ key: 'claimed', className: 'rpo-claimed', grow: p.claimedBeyond, text: `Claimed beyond the checkpoint: ${plural(p.claimedBeyond, 'work transaction')} — MISSED` });
  }
  return parts;
}

/** The recovery point: the captured checkpoint beside what came after it, as one bar and its legend. */
export function RpoPicture({ point, testId, caption }: { point: RecoveryPoint; testId?: string; caption: ReactNode }) {
  const parts = rpoParts(point);
  const drawn = parts.filter((x) => x.grow > 0);
  const total = drawn.reduce((n, x) => n + x.grow, 0);
  // The checkpoint's label starts at the boundary when it is in the left half of the bar, else ends there.
  const leftHalf = (drawn[0]?.grow ?? 0) <= total / 2;
  return (
    <figure className="rpo" data-testid={testId}>
      <div className="rpo-bar" aria-hidden="true">
        {drawn.map((x) => (
          <span key={x.key} className={`rpo-seg ${x.className}`} style={{ flexGrow: x.grow }} />
        ))}
      </div>
      {/* The same segments, empty, so the label sits under the checkpoint: the end of the captured segment. */}
      <div className="rpo-scale" aria-hidden="true">
        {drawn.map((x, i) => (
          <span key={x.key} className="rpo-seg" style={{ flexGrow: x.grow }}>
            {i === 0 ? (
              <span className={leftHalf ? 'rpo-mark rpo-mark-after' : 'rpo-mark rpo-mark-before'}>{leftHalf ? '↑ captured checkpoint' : 'captured checkpoint ↑'}</span>
            ) : null}
          </span>
        ))}
      </div>
      <ul className="rpo-legend">
        {parts.map((x) => (
          <li key={x.key}>
            <span className={`rpo-swatch ${x.className}`} aria-hidden="true" /> {x.text}
          </li>
        ))}
      </ul>
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
