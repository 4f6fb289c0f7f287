/**
 * Start a Goal work run from the Goal page (POST /api/goals/:id/work-runs): one of the agents the
 * daemon offers (GET /api/agents), optionally a turn limit and the external system's deliveries
 * endpoint. The run page follows it once the daemon has admitted it; disabled while the Goal
 * takes no work — not active, or a lifetime a recovery superseded — saying why.
 */
import { useState, type FormEvent } from 'react';
import { supersededWhy, type GoalDetailDoc } from './goalTypes';
import { useApiJson } from './hooks';

interface Agent {
  readonly id: string;
  readonly version: string;
  readonly turn_limit: number;
  readonly model: string;
}

export function StartRun({
  goal,
  busy,
  onStart,
}: {
  goal: GoalDetailDoc;
  busy: boolean;
  onStart: (body: unknown) => Promise<void>;
}) {
  const { data } = useApiJson<{ agents: Agent[] }>('/api/agents');
  const [agent, setAgent] = useState('');
  const [turns, setTurns] = useState('');
  const [sink, setSink] = useState('');
  const chosen = agent || data?.agents[0]?.id || '';
  const why =
    supersededWhy(goal) ??
    (goal.lifecycle !== 'active'
      ? `The Goal is ${goal.lifecycle}: only an active Goal takes a run.`
      : data && data.agents.length === 0
        ? 'The daemon offers no Goal work agent.'
        : null);
  async function submit(ev: FormEvent) {
    ev.preventDefault();
    await onStart({
      agent: chosen,
      ...(turns !== '' ? { turns: Number(turns) } : {}),
      ...(sink !== '' ? { sink_url: sink } : {}),
    });
  }
  return (
    <section aria-labelledby="start-run-heading" className="card">
      <h2 id="start-run-heading">Work on this Goal</h2>
      <form className="start-run" onSubmit={(ev) => void submit(ev)}>
        <label htmlFor="run-agent">Agent</label>
        <select
          id="run-agent"
          value={chosen}
          onChange={(ev) => setAgent(ev.target.value)}
          disabled={!data || data.agents.length === 0}
        >
          {data?.agents.map((a) => (
            <option key={a.id} value={a.id}>
              {a.id} {a.version} ({a.model}, up to {a.turn_limit} turns)
            </option>
          ))}
        </select>
        <label htmlFor="run-turns">Suspend after (turns, optional)</label>
        <input
          id="run-turns"
          type="number"
          min={1}
          inputMode="numeric"
          value={turns}
          onChange={(ev) => setTurns(ev.target.value)}
        />
        <label htmlFor="run-sink">Deliveries endpoint (optional; kept for later runs)</label>
        <input
          id="run-sink"
          type="url"
          value={sink}
          onChange={(ev) => setSink(ev.target.value)}
          placeholder="http://127.0.0.1:8080/deliveries"
        />
        <button
          type="submit"
          disabled={busy || why !== null || chosen === ''}
          aria-describedby={why ? 'start-run-why' : undefined}
        >
          Start a work run
        </button>
      </form>
      {why ? (
        <p className="muted" id="start-run-why" data-testid="start-run-why">
          {why}
        </p>
      ) : null}
    </section>
  );
}
