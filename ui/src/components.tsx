import { useEffect, useRef, type ReactNode } from 'react';
import type { ApiError } from './api';
import { hasNavigated } from './router';
import type { Classification } from './types';

/** A typed error: its code (monospace), its message and "Next action: …", announced as an alert. */
export function ErrorBox({ error, title, testId }: { error: ApiError; title?: string; testId?: string }) {
  return (
    <div className="error-box" role="alert">
      <p className="error-title">{title ?? 'Refused'}</p>
      <p>
        <span className="visually-hidden">Error code: </span>
        <code className="error-code" data-testid={testId ?? 'api-error-code'}>
          {error.code}
        </code>
      </p>
      {error.message ? <p className="error-message">{error.message}</p> : null}
      {error.nextAction ? (
        <p className="error-next">
          <strong>Next action:</strong> {error.nextAction}
        </p>
      ) : null}
    </div>
  );
}

/** The page's h1; focused when the user navigated here (so the new page is announced). */
export function PageHeading({ children }: { children: ReactNode }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    if (hasNavigated()) ref.current?.focus();
  }, []);
  return (
    <h1 ref={ref} tabIndex={-1} className="page-title">
      {children}
    </h1>
  );
}

export const EXECUTION_STATEMENT =
  'Verification checks bytes and structure only. It never grants execution authority: nothing restored here can run, and no Goal, lease, session or effect is resumed.';

export const WORKSPACE_STATEMENT =
  'This workspace is inert evidence, read back without changing it. It grants no execution authority: no Goal, Todo, session, run or effect shown here can start, resume or be delivered again.';

/** The permanent statement of the Backup & recovery pages (or, inside a recovery workspace's readback, its own): always shown, never dismissible. */
export function ExecutionStatement({
  text = EXECUTION_STATEMENT,
  label = 'What verification means',
}: {
  text?: string;
  label?: string;
}) {
  return (
    <aside className="statement" aria-label={label}>
      <p>{text}</p>
    </aside>
  );
}

export const CLASSIFICATION_WORDS: Record<Classification, string> = {
  recovered_readable: 'recovered and readable',
  historical_only: 'historical only',
  unknown_unrecoverable: 'unknown or unrecoverable',
};

export function ClassificationBadge({ value }: { value: Classification }) {
  return <span className={`badge class-${value}`}>{CLASSIFICATION_WORDS[value] ?? value}</span>;
}

/** A table that may be wider than a narrow screen: its own labelled, keyboard-scrollable region. */
export function TableRegion({ label, children }: { label: string; children: ReactNode }) {
  return (
    // tabIndex 0: a scrollable region must be reachable by keyboard.
    <div className="table-region" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}

export function abbreviate(id: string, length = 12): string {
  return id.length > length ? `${id.slice(0, length)}…` : id;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" role="status">
      Loading {what}…
    </p>
  );
}
