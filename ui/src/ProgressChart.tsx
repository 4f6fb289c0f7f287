/**
 * A Goal's progress over its committed history (GET /api/goals/:id/progress) as a stacked area
 * chart: Todos done, blocked, deferred and open after each committed transaction, on an axis of
 * transactions (evenly spaced, as the history is), with the first and last times named. The same
 * figures are in a table beside it for anyone who cannot see the picture.
 */
import { STATUSES, when, type ProgressDoc, type TodoStatus } from './goalTypes';

const W = 640;
const H = 180;
const PAD = { l: 36, r: 8, t: 8, b: 24 };
// Fill colours with at least 3:1 contrast against the white card (non-text contrast), distinct in greyscale too.
const FILL: Record<TodoStatus, string> = { done: '#1a7f37', blocked: '#9a6700', deferred: '#6e7781', open: '#0a58ca' };
const ORDER: readonly TodoStatus[] = ['done', 'blocked', 'deferred', 'open'];

export function ProgressChart({ progress }: { progress: ProgressDoc }) {
  const pts = progress.points;
  if (pts.length === 0) return <p className="muted">Nothing committed yet: the chart starts with the first Todo.</p>;
  const maxTotal = Math.max(1, ...pts.map((p) => STATUSES.reduce((n, s) => n + (p.counts[s] ?? 0), 0)));
  const first = pts[0]!.cursor;
  const span = Math.max(1, pts[pts.length - 1]!.cursor - first);
  const x = (cursor: number) => PAD.l + ((cursor - first) / span) * (W - PAD.l - PAD.r);
  const y = (v: number) => H - PAD.b - (v / maxTotal) * (H - PAD.t - PAD.b);
  const bands = ORDER.map((status, i) => {
    const below = (p: (typeof pts)[number]) => ORDER.slice(0, i).reduce((n, s) => n + (p.counts[s] ?? 0), 0);
    const top = pts.map((p) => `${x(p.cursor).toFixed(1)},${y(below(p) + (p.counts[status] ?? 0)).toFixed(1)}`);
    const bottom = [...pts].reverse().map((p) => `${x(p.cursor).toFixed(1)},${y(below(p)).toFixed(1)}`);
    return { status, d: `M${top.join('L')}L${bottom.join('L')}Z` };
  });
  const last = pts[pts.length - 1]!;
  return (
    <figure className="progress-chart" data-testid="goal-progress">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby="progress-caption" preserveAspectRatio="none">
        {bands.map((b) => (
          <path key={b.status} d={b.d} fill={FILL[b.status]} data-status={b.status} />
        ))}
        <line x1={PAD.l} x2={W - PAD.r} y1={H - PAD.b} y2={H - PAD.b} stroke="#1b1f24" />
        <text x={PAD.l - 4} y={y(maxTotal) + 10} textAnchor="end" fontSize="11" fill="#1b1f24">
          {maxTotal}
        </text>
        <text x={PAD.l - 4} y={H - PAD.b} textAnchor="end" fontSize="11" fill="#1b1f24">
          0
        </text>
      </svg>
      <figcaption id="progress-caption">
        Todos by status after each of {progress.head} committed transactions, from {when(pts[0]!.at)} to {when(last.at)}
        . Now: {ORDER.map((s) => `${last.counts[s] ?? 0} ${s}`).join(', ')}.
        <span className="legend">
          {ORDER.map((s) => (
            <span key={s} className="legend-item">
              <span className="swatch" style={{ background: FILL[s] }} aria-hidden="true" /> {s}
            </span>
          ))}
        </span>
      </figcaption>
    </figure>
  );
}
