/**
 * The recovery plan's preview names each owner's state that stays history by its owner's row of
 * HISTORICAL_PREVIEW (src/owners/adoption.ts), never by an `=== '<owner>'` in the coordinator: the
 * session owner's line leads and stands for its component, the effect journal counts the Goal's
 * effects by outcome, quota and scheduler have their own words, every other owner the default.
 */
import { describe, expect, it } from 'vitest';
import {
  HISTORICAL_PREVIEW,
  OWNERS,
  historicalPreviewOf,
  type effect,
  type PreviewFacts,
} from '../../src/owners/index.js';

const effectOf = (outcome: string) => ({ outcome }) as unknown as effect.EffectRecord;
const facts = (sessions: number, outcomes: string[]): PreviewFacts => ({ sessions, effects: outcomes.map(effectOf) });

describe('the preview words of an owner’s historical state', () => {
  it('has a row for every owner of the OWNERS table and no other', () => {
    expect(Object.keys(HISTORICAL_PREVIEW)).toEqual(Object.keys(OWNERS));
  });

  it('leads with the sessions and their turn journals, counted', () => {
    expect(HISTORICAL_PREVIEW.session.lead?.(facts(1, []))).toBe('1 session and their turn journals');
    expect(HISTORICAL_PREVIEW.session.lead?.(facts(2, []))).toBe('2 sessions and their turn journals');
    expect(
      Object.entries(HISTORICAL_PREVIEW)
        .filter(([, row]) => row.lead !== undefined)
        .map(([name]) => name),
    ).toEqual(['session']);
  });

  it("counts the Goal's effects by outcome, never to be sent again", () => {
    expect(HISTORICAL_PREVIEW.effect.words?.(facts(0, ['committed', 'unknown', 'committed']))).toBe(
      'the effect journal: 3 effects of this Goal (2 committed, 1 unknown), never sent again',
    );
    expect(HISTORICAL_PREVIEW.effect.words?.(facts(0, ['absent']))).toBe(
      'the effect journal: 1 effect of this Goal (1 absent), never sent again',
    );
    expect(HISTORICAL_PREVIEW.effect.words?.(facts(0, []))).toBe(
      'the effect journal: 0 effects of this Goal, never sent again',
    );
  });

  it('names quota and scheduler state in their own words, and leaves every other owner to the default', () => {
    expect(HISTORICAL_PREVIEW.quota.words?.(facts(0, []))).toBe('quota usage as counted at the capture');
    expect(HISTORICAL_PREVIEW.scheduler.words?.(facts(0, []))).toBe(
      'the scheduler’s state as captured (nothing in it is scheduled again)',
    );
    for (const name of ['registry', 'config', 'goal', 'work'] as const)
      expect(HISTORICAL_PREVIEW[name], name).toEqual({});
  });

  it('gives an owner it does not know (from an audit) no row, whatever its name', () => {
    expect(historicalPreviewOf('nokv')).toEqual({});
    expect(historicalPreviewOf('constructor')).toEqual({});
    expect(historicalPreviewOf('effect')).toBe(HISTORICAL_PREVIEW.effect);
  });
});
