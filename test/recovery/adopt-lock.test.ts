/**
 * One apply, resolve or abort of a recovery at a time. An apply paused (SIGSTOP, the
 * `stop:recover.journal.before-append` point, at its first append) while it holds the recovery's lock makes every other
 * apply, resolve and abort of that destination refuse at once with `recover_busy` (exit 4),
 * appending nothing — and so is a second apply tried again before every later append of the first;
 * resumed, the first apply completes, and its journal holds exactly one intent
 * and one receipt per step, numbered without a gap. Real CLI children, a real loopback receiver.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { resumeUntilEnded, stopped } from '../support/stops.js';
import { CLI, STATE_HOME, loopxAsync } from '../support/cli.js';
import { planAsync, sourceWithBackup, type Doc, type Source } from './support/adopt.js';

let sink: WebhookSink;
let s: Source;

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  s = await sourceWithBackup(sink, { afterCapture: false });
}, 180_000);
afterAll(async () => {
  await sink.close();
});

const readJournalOrEmpty = (destination: string): string => {
  try {
    return readFileSync(join(destination, 'recovery', 'journal.jsonl'), 'utf8');
  } catch {
    return '';
  }
};

const journalLines = (destination: string) =>
  readFileSync(join(destination, 'recovery', 'journal.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { seq: number; event: string; action?: string });

describe('one writer of a recovery at a time', () => {
  it('while an apply holds the lock, another apply, a resolve and an abort are refused recover_busy and append nothing; the first then completes with one receipt per step', async () => {
    const { destination, doc } = await planAsync(s, 'locked');
    const first = spawn(
      process.execPath,
      [
        ...CLI,
        'recover',
        'apply',
        '--destination',
        destination,
        '--confirm',
        doc.plan_digest,
        '--authority-dir',
        s.authority,
        '--json',
      ],
      {
        env: { ...process.env, XDG_STATE_HOME: STATE_HOME, LOOPX_TEST_FAULT: 'stop:recover.journal.before-append' },
      },
    );
    let out = '';
    first.stdout.on('data', (d) => (out += d));
    let over = false;
    const ended = new Promise<number | null>((r) => first.on('close', (code) => r(code))).finally(() => (over = true));
    let interleaved = 0;
    try {
      await expect.poll(() => stopped(first.pid!), { timeout: 60_000 }).toBe(true);
      for (const args of [
        ['recover', 'apply', '--destination', destination, '--confirm', doc.plan_digest],
        ['recover', 'resolve', '--destination', destination, '--hold', 'receiver:webhook:127.0.0.1'],
        ['recover', 'abort', '--destination', destination],
      ]) {
        const r = await loopxAsync([...args, '--authority-dir', s.authority, '--json']);
        expect(r.status, `${args[1]}: ${r.stdout}${r.stderr}`).toBe(4);
        const err = (JSON.parse(r.stdout) as Doc).error;
        expect(err.code).toBe('recover_busy');
        expect(err.next_action).toMatch(
          /^wait for it to end, then see where it stands: loopx recover status --destination /,
        );
      }
      // Nothing was appended by the refused ones: the paused apply has not appended its first event yet.
      expect(() => journalLines(destination)).toThrow();
      // Then a second apply at every append of the first: refused each time, appending nothing.
      for (;;) {
        await expect.poll(() => over || stopped(first.pid!), { timeout: 60_000 }).toBe(true);
        if (over) break;
        const before = readJournalOrEmpty(destination);
        const r = await loopxAsync([
          'recover',
          'apply',
          '--destination',
          destination,
          '--confirm',
          doc.plan_digest,
          '--authority-dir',
          s.authority,
          '--json',
        ]);
        expect(r.status, r.stdout + r.stderr).toBe(4);
        expect((JSON.parse(r.stdout) as Doc).error.code).toBe('recover_busy');
        expect(readJournalOrEmpty(destination)).toBe(before);
        interleaved += 1;
        first.kill('SIGCONT');
        // Resumed, it makes the append it stopped before (and may stop at once before the next).
        await expect.poll(() => over || readJournalOrEmpty(destination) !== before, { timeout: 60_000 }).toBe(true);
      }
    } finally {
      // The point stops the apply before each of its appends: resumed at every one until it ends.
      resumeUntilEnded(first, ended);
    }
    expect(await ended).toBe(0);
    expect((JSON.parse(out) as Doc).state).toBe('complete');
    const lines = journalLines(destination);
    // One interleaved apply before each append of the first.
    expect(interleaved).toBe(lines.length);
    expect(lines.map((l) => l.seq)).toEqual(lines.map((_, i) => i + 1));
    const steps = doc.steps.map((st: { action: string }) => st.action) as string[];
    for (const action of steps) {
      expect(
        lines.filter((l) => l.event === 'intent' && l.action === action),
        action,
      ).toHaveLength(1);
      expect(
        lines.filter((l) => l.event === 'done' && l.action === action),
        action,
      ).toHaveLength(1);
    }
  }, 120_000);
});
