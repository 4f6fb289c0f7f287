/** Settings ▸ Capability Center ▸ Runs: the runs of the root and importing a snapshot; one run's page is RunDetail.tsx. */
import { useId, useState, type FormEvent } from 'react';
import { ApiError, apiFetch, asApiError } from './api';
import { useApiJson } from './hooks';
import { ErrorBox, Loading, PageHeading, TableRegion } from './components';
import { ROUTES } from './router';
import { RunStatus } from './RunStatus';
import type { ImportReceipt, RunView } from './types';

export { RunDetail } from './RunDetail';

export function RunsPage() {
  const { data, error, reload: refresh } = useApiJson<{ runs: RunView[] }>('/api/runs');
  const runs = data?.runs ?? null;

  return (
    <>
      <PageHeading>Runs</PageHeading>
      <section aria-labelledby="runs-heading" className="card">
        <div className="section-head">
          <h2 id="runs-heading">Runs of this root</h2>
          <button type="button" onClick={refresh}>
            Refresh runs
          </button>
        </div>
        {error ? <ErrorBox error={error} title="Could not list the runs" /> : null}
        {runs === null && !error ? <Loading what="runs" /> : null}
        {runs !== null && runs.length === 0 ? (
          <p className="muted">
            No runs in this root yet. Start one with <code>loopx run start</code>, or import a snapshot below.
          </p>
        ) : null}
        {runs !== null && runs.length > 0 ? (
          <TableRegion label="Runs">
            <table>
              <caption className="visually-hidden">Runs, oldest first</caption>
              <thead>
                <tr>
                  <th scope="col">Run</th>
                  <th scope="col">Status</th>
                  <th scope="col">Turns</th>
                  <th scope="col">Last sequence</th>
                  <th scope="col">Definition</th>
                </tr>
              </thead>
              <tbody>
                {runs.map((r) => (
                  <tr key={r.run_id} data-testid="run-row">
                    <th scope="row">
                      <a href={ROUTES.run(r.run_id)}>
                        <code>{r.run_id}</code>
                      </a>
                    </th>
                    <td>
                      <RunStatus run={r} />
                    </td>
                    <td className="num">
                      {r.completed_turns} / {r.turn_limit}
                    </td>
                    <td className="num">{r.last_sequence}</td>
                    <td>
                      <code>
                        {r.definition.id}@{r.definition.version}
                      </code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableRegion>
        ) : null}
      </section>
      <ImportSnapshot onImported={refresh} />
    </>
  );
}

function ImportSnapshot({ onImported }: { onImported: () => void }) {
  const inputId = useId();
  const [file, setFile] = useState<File | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [result, setResult] = useState<ImportReceipt | null>(null);
  const [missing, setMissing] = useState(false);

  async function onSubmit(ev: FormEvent) {
    ev.preventDefault();
    if (busy) return;
    if (!file) {
      setMissing(true);
      return;
    }
    setMissing(false);
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      const res = await apiFetch('/api/runs/import', {
        method: 'POST',
        headers: { Accept: 'application/json', 'Content-Type': 'application/octet-stream' },
        body: file,
      });
      setResult((await res.json()) as ImportReceipt);
      onImported();
    } catch (e) {
      setError(asApiError(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <section aria-labelledby="import-heading" className="card">
      <h2 id="import-heading">Import a run</h2>
      <p className="muted">
        Take a suspended run’s signed snapshot (made by <code>loopx run export</code> or Export below) into this root,
        once. Both roots must share your run authority.
      </p>
      <form onSubmit={onSubmit} noValidate>
        <div className="field">
          <label htmlFor={inputId}>Snapshot file (.snapshot)</label>
          <input
            id={inputId}
            type="file"
            accept=".snapshot,application/octet-stream"
            disabled={busy}
            onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)}
          />
        </div>
        {missing ? (
          <p className="field-error" role="alert">
            Choose a snapshot file.
          </p>
        ) : null}
        <button type="submit" disabled={busy}>
          {busy ? 'Importing…' : 'Import'}
        </button>
      </form>
      <div aria-live="polite">
        {result ? (
          <p className="result-ok">
            Imported run <a href={ROUTES.run(result.run_id)}>{result.run_id}</a>: {result.status}, last sequence{' '}
            {result.last_sequence}.
          </p>
        ) : null}
      </div>
      {error ? <ErrorBox error={error} title="Import refused" /> : null}
    </section>
  );
}
