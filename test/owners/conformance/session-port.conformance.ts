/**
 * The conformance suite of the session storage port (src/owners/session/port.ts): snapshot reads,
 * conditional commits with their conflict reasons, not-found as absence, idempotent repeats, rows
 * that survive a restart, and the ambiguous-commit readback — each asserted by what is stored and
 * what comes back. Every provider runs it: `describeSessionPort('<provider>', factory)` in
 * test/owners/session/port.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  SESSION_MODE,
  sessionStore,
  turnKeyOf,
  type Session,
  type SessionPort,
  type SessionWrite,
  type TurnJournal,
  type TurnSettlement,
} from '../../../src/owners/session/index.js';
import type { CommitResult } from '../../../src/owners/port.js';
import { expectRegisteredProvider, rejectionOf, sha, type PortFactory } from './support.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (s: number): string => new Date(T0 + s * 1000).toISOString();

const sessionRow = (over: Partial<Session> = {}): Session => ({
  session_id: 'ses_1',
  goal_id: 'g1',
  goal_instance_id: 'gi_1',
  session_mode: SESSION_MODE,
  session_generation: 1,
  execution_generation: 1,
  run_id: 'run-1',
  status: 'active',
  created_at: at(0),
  updated_at: at(0),
  ...over,
});

const turnRow = (s: Session, index: number, over: Partial<TurnJournal> = {}): TurnJournal => ({
  turn_key: turnKeyOf(s.session_id, index),
  session_id: s.session_id,
  goal_id: s.goal_id,
  goal_instance_id: s.goal_instance_id,
  turn_index: index,
  execution_generation: s.execution_generation,
  run_id: 'run-1',
  status: 'in_progress',
  phases: [],
  created_at: at(1),
  updated_at: at(1),
  ...over,
});

const settlementRow = (t: TurnJournal, id: string, over: Partial<TurnSettlement> = {}): TurnSettlement => ({
  settlement_id: id,
  turn_key: t.turn_key,
  session_id: t.session_id,
  goal_id: t.goal_id,
  status: 'stopped',
  failed_phase: null,
  result_kind: null,
  phase_count: t.phases.length,
  request_digest: sha(7),
  settled_at: at(9),
  ...over,
});

const APPLIED = { status: 'applied' };
const conflict = (reason: string) => ({ status: 'conflict', reason });

/** Every method of `p`, forwarded (a test seam to override one of them). */
const forward = (p: SessionPort): SessionPort => ({
  provider: p.provider,
  read: (q) => p.read(q),
  listSessions: (g) => p.listSessions(g),
  listTurns: (s) => p.listTurns(s),
  commit: (w) => p.commit(w),
  close: () => p.close(),
});

export function describeSessionPort(name: string, make: PortFactory<SessionPort>): void {
  describe(`session port conformance: ${name}`, () => {
    /** A port holding session ses_1 at execution generation 1 and its in-progress turn 0. */
    async function withTurn() {
      const h = make();
      const p = h.open();
      const s = sessionRow();
      const t = turnRow(s, 0);
      expect(await p.commit({ op: 'create_session', session: s })).toEqual(APPLIED);
      expect(await p.commit({ op: 'begin_turn', expected_execution_generation: 1, turn: t })).toEqual(APPLIED);
      return { h, p, s, t };
    }

    it('names a registered provider', () => {
      expectRegisteredProvider(make().open().provider);
    });

    it('an empty store reads nothing: absent rows and empty lists, never an error', async () => {
      const p = make().open();
      expect(await p.read({ session_id: 'ses_x', turn_key: sha(1), settlement_id: 'st-x' })).toEqual({});
      expect(await p.read({})).toEqual({});
      expect(await p.listSessions()).toEqual([]);
      expect(await p.listTurns('ses_x')).toEqual([]);
    });

    it('a created session reads back field for field; creating it again is exists and changes nothing', async () => {
      const p = make().open();
      const s = sessionRow({ run_id: null });
      expect(await p.commit({ op: 'create_session', session: s })).toEqual(APPLIED);
      expect(await p.read({ session_id: s.session_id })).toEqual({ session: s });
      expect(await p.commit({ op: 'create_session', session: { ...s, goal_id: 'g2' } })).toEqual(conflict('exists'));
      expect(await p.listSessions()).toEqual([s]);
    });

    it('an update applies only at the expected execution generation: stale is changed, an unknown session missing, and nothing is written', async () => {
      const p = make().open();
      const s = sessionRow();
      await p.commit({ op: 'create_session', session: s });
      const next = { ...s, execution_generation: 2, run_id: 'run-2', updated_at: at(2) };
      expect(await p.commit({ op: 'update_session', expected_execution_generation: 1, session: next })).toEqual(
        APPLIED,
      );
      expect((await p.read({ session_id: s.session_id })).session).toEqual(next);
      // The same update again: its precondition no longer holds, so it cannot apply twice.
      expect(
        await p.commit({
          op: 'update_session',
          expected_execution_generation: 1,
          session: { ...next, execution_generation: 3 },
        }),
      ).toEqual(conflict('changed'));
      expect(
        await p.commit({
          op: 'update_session',
          expected_execution_generation: 1,
          session: sessionRow({ session_id: 'ses_none' }),
        }),
      ).toEqual(conflict('missing'));
      expect(await p.listSessions()).toEqual([next]);
    });

    it('a turn begins under its session generation; the same turn again is exists, a stale generation changed, an unknown session missing', async () => {
      const { p, s, t } = await withTurn();
      expect(await p.read({ turn_key: t.turn_key })).toEqual({ session: s, turn: t, last_turn: t });
      expect(await p.commit({ op: 'begin_turn', expected_execution_generation: 1, turn: t })).toEqual(
        conflict('exists'),
      );
      expect(
        await p.commit({ op: 'begin_turn', expected_execution_generation: 1, turn: { ...t, turn_key: sha(3) } }),
      ).toEqual(conflict('exists'));
      expect(await p.commit({ op: 'begin_turn', expected_execution_generation: 2, turn: turnRow(s, 1) })).toEqual(
        conflict('changed'),
      );
      expect(
        await p.commit({
          op: 'begin_turn',
          expected_execution_generation: 1,
          turn: turnRow(sessionRow({ session_id: 'ses_none' }), 0),
        }),
      ).toEqual(conflict('missing'));
      expect(await p.listTurns(s.session_id)).toEqual([t]);
    });

    it('a phase appends at exactly the next position: a repeat or a skip is changed, an unknown turn missing, a stale generation changed', async () => {
      const { p, s, t } = await withTurn();
      const phase = { phase: 'host_execute' as const, at: at(3), ref: 'eff_1#host_execute' };
      expect(
        await p.commit({
          op: 'append_phase',
          expected_execution_generation: 1,
          turn_key: t.turn_key,
          position: 0,
          phase,
        }),
      ).toEqual(APPLIED);
      const after = { ...t, phases: [phase], updated_at: at(3) };
      expect((await p.read({ turn_key: t.turn_key })).turn).toEqual(after);
      expect(
        await p.commit({
          op: 'append_phase',
          expected_execution_generation: 1,
          turn_key: t.turn_key,
          position: 0,
          phase,
        }),
      ).toEqual(conflict('changed'));
      const next = { phase: 'typed_result' as const, at: at(4), ref: null };
      expect(
        await p.commit({
          op: 'append_phase',
          expected_execution_generation: 1,
          turn_key: t.turn_key,
          position: 2,
          phase: next,
        }),
      ).toEqual(conflict('changed'));
      expect(
        await p.commit({
          op: 'append_phase',
          expected_execution_generation: 2,
          turn_key: t.turn_key,
          position: 1,
          phase: next,
        }),
      ).toEqual(conflict('changed'));
      expect(
        await p.commit({ op: 'append_phase', expected_execution_generation: 1, turn_key: sha(5), position: 0, phase }),
      ).toEqual(conflict('missing'));
      expect((await p.read({ session_id: s.session_id })).last_turn).toEqual(after);
    });

    it("a settlement lands with the turn's new status; a second one of the turn or a reused settlement id is exists; a moved phase count is changed", async () => {
      const { p, s, t } = await withTurn();
      const phase = { phase: 'host_execute' as const, at: at(3), ref: null };
      await p.commit({
        op: 'append_phase',
        expected_execution_generation: 1,
        turn_key: t.turn_key,
        position: 0,
        phase,
      });
      expect(
        await p.commit({
          op: 'settle_turn',
          expected_execution_generation: 1,
          phase_count: 0,
          settlement: settlementRow(t, 'st-1'),
        }),
      ).toEqual(conflict('changed'));
      const st = settlementRow(t, 'st-1', {
        phase_count: 1,
        status: 'failed',
        failed_phase: 'typed_result',
        result_kind: 'host_failure',
      });
      expect(
        await p.commit({ op: 'settle_turn', expected_execution_generation: 2, phase_count: 1, settlement: st }),
      ).toEqual(conflict('changed'));
      expect(
        await p.commit({ op: 'settle_turn', expected_execution_generation: 1, phase_count: 1, settlement: st }),
      ).toEqual(APPLIED);
      const settled = { ...t, phases: [phase], status: 'failed', updated_at: st.settled_at };
      expect(await p.read({ turn_key: t.turn_key, settlement_id: 'st-1' })).toEqual({
        session: s,
        turn: settled,
        last_turn: settled,
        settlement: st,
        settlement_by_id: st,
      });
      expect(
        await p.commit({ op: 'settle_turn', expected_execution_generation: 1, phase_count: 1, settlement: st }),
      ).toEqual(conflict('exists'));
      expect(
        await p.commit({
          op: 'settle_turn',
          expected_execution_generation: 1,
          phase_count: 1,
          settlement: { ...st, settlement_id: 'st-2' },
        }),
      ).toEqual(conflict('exists'));
      const t1 = turnRow(s, 1);
      await p.commit({ op: 'begin_turn', expected_execution_generation: 1, turn: t1 });
      expect(
        await p.commit({
          op: 'settle_turn',
          expected_execution_generation: 1,
          phase_count: 0,
          settlement: settlementRow(t1, 'st-1'),
        }),
      ).toEqual(conflict('exists'));
      expect(
        await p.commit({
          op: 'settle_turn',
          expected_execution_generation: 1,
          phase_count: 0,
          settlement: settlementRow(turnRow(sessionRow({ session_id: 'ses_none' }), 0), 'st-9'),
        }),
      ).toEqual(conflict('missing'));
      expect(
        await p.commit({
          op: 'append_phase',
          expected_execution_generation: 1,
          turn_key: t.turn_key,
          position: 1,
          phase: { phase: 'typed_result', at: at(10), ref: null },
        }),
      ).toEqual(conflict('changed'));
      expect((await p.read({ turn_key: t1.turn_key })).settlement).toBeUndefined();
    });

    it('sessions list in creation order, optionally of one Goal; turns in index order', async () => {
      const p = make().open();
      const a = sessionRow({ session_id: 'ses_b' });
      const b = sessionRow({ session_id: 'ses_a', goal_id: 'g2' });
      const c = sessionRow({ session_id: 'ses_c' });
      for (const s of [a, b, c]) await p.commit({ op: 'create_session', session: s });
      await p.commit({
        op: 'update_session',
        expected_execution_generation: 1,
        session: { ...a, execution_generation: 2 },
      });
      expect((await p.listSessions()).map((s) => s.session_id)).toEqual(['ses_b', 'ses_a', 'ses_c']);
      expect((await p.listSessions('g1')).map((s) => s.session_id)).toEqual(['ses_b', 'ses_c']);
      expect(await p.listSessions('g3')).toEqual([]);
      for (const i of [0, 1, 2])
        await p.commit({ op: 'begin_turn', expected_execution_generation: 1, turn: turnRow(c, i) });
      expect((await p.listTurns('ses_c')).map((t) => t.turn_index)).toEqual([0, 1, 2]);
      expect((await p.read({ session_id: 'ses_c' })).last_turn?.turn_index).toBe(2);
    });

    it('every row survives a restart', async () => {
      const { h, p, s, t } = await withTurn();
      const st = settlementRow(t, 'st-1');
      await p.commit({ op: 'settle_turn', expected_execution_generation: 1, phase_count: 0, settlement: st });
      const before = await p.read({ turn_key: t.turn_key, settlement_id: 'st-1' });
      p.close();
      const q = h.open();
      expect(await q.read({ turn_key: t.turn_key, settlement_id: 'st-1' })).toEqual(before);
      expect(await q.listSessions()).toEqual([s]);
      expect(
        await q.commit({ op: 'settle_turn', expected_execution_generation: 1, phase_count: 0, settlement: st }),
      ).toEqual(conflict('exists'));
    });

    it('rows come back as copies: changing one changes nothing stored', async () => {
      const { p, t } = await withTurn();
      const rows = await p.read({ turn_key: t.turn_key });
      (rows.turn!.phases as unknown[]).push({ phase: 'host_execute', at: at(3), ref: null });
      (rows.session as { status: string }).status = 'retired';
      expect(await p.read({ turn_key: t.turn_key })).toMatchObject({
        turn: { phases: [] },
        session: { status: 'active' },
      });
    });

    it('a closed port fails commits with provider_closed and rejects reads', async () => {
      const p = make().open();
      p.close();
      expect(await p.commit({ op: 'create_session', session: sessionRow() })).toEqual({
        status: 'failed',
        code: 'provider_closed',
      });
      expect((await rejectionOf(() => p.read({ session_id: 'ses_1' }))).code).toBe('provider_closed');
      expect((await rejectionOf(() => p.listSessions())).code).toBe('provider_closed');
    });

    it('an ambiguous commit resolves by readback: a landed write answers applied once; one that did not land is store_outcome_unproved and a retry applies once', async () => {
      const inner = make().open();
      const landed = sessionStore({
        ...forward(inner),
        commit: async (w) => (await inner.commit(w), { status: 'ambiguous' }),
      });
      const s = await landed.openSession({ goal_id: 'g1', goal_instance_id: 'gi_1' }, { session_id: 'ses_amb' });
      const bound = await landed.bindRun(s.session_id, 'run-1', 1);
      expect(bound).toMatchObject({ execution_generation: 2, run_id: 'run-1' });
      expect(await inner.listSessions()).toEqual([bound]);

      let lost = true;
      const unproved = sessionStore({
        ...forward(inner),
        commit: async (w): Promise<CommitResult> => (lost ? { status: 'ambiguous' } : inner.commit(w)),
      });
      const { turn } = await sessionStore(inner).beginTurn(s.session_id, 0, 2);
      const request = { settlement_id: 'st-amb', status: 'stopped' as const, expected_execution_generation: 2 };
      expect((await rejectionOf(() => unproved.settleTurn(turn.turn_key, request))).code).toBe(
        'store_outcome_unproved',
      );
      expect((await inner.read({ turn_key: turn.turn_key })).settlement).toBeUndefined();
      lost = false;
      const first = await unproved.settleTurn(turn.turn_key, request);
      expect(first.replayed).toBe(false);
      expect(await unproved.settleTurn(turn.turn_key, request)).toEqual({
        settlement: first.settlement,
        replayed: true,
      });
      expect((await inner.read({ turn_key: turn.turn_key })).settlement).toEqual(first.settlement);
    });

    it('a writer that lost the race re-reads and re-decides: a racing identical settlement becomes its readback, a racing bind a stale generation', async () => {
      const inner = make().open();
      const other = sessionStore(inner);
      const s = await other.openSession({ goal_id: 'g1', goal_instance_id: 'gi_1' });
      await other.bindRun(s.session_id, 'run-1', 1);
      const { turn } = await other.beginTurn(s.session_id, 0, 2);
      const request = { settlement_id: 'st-race', status: 'stopped' as const, expected_execution_generation: 2 };
      let race: (() => Promise<unknown>) | undefined = () => other.settleTurn(turn.turn_key, request);
      const racing = sessionStore({
        ...forward(inner),
        commit: async (w: SessionWrite) => {
          const r = race;
          race = undefined;
          if (r) await r(); // lands first
          return inner.commit(w);
        },
      });
      const settled = await racing.settleTurn(turn.turn_key, request);
      expect(settled.replayed).toBe(true);
      race = () => other.bindRun(s.session_id, 'run-other', 2);
      expect((await rejectionOf(() => racing.bindRun(s.session_id, 'run-mine', 2))).code).toBe(
        'session_generation_stale',
      );
      expect((await inner.read({ session_id: s.session_id })).session).toMatchObject({
        run_id: 'run-other',
        execution_generation: 3,
      });
    });
  });
}
