/**
 * The phase journal of an adoption (`<destination>/recovery/journal.jsonl`, owner-only): the
 * coordinator's own durable record, one JSON line per event, appended and fsynced before the
 * coordinator goes on. An `intent` is written before an owner is called, `done` with the owner's
 * receipt after the owner's readback; `resolved` records a hold settled through its owner;
 * `abandoned` ends a recovery that never changed a live owner. Nothing is rewritten. A last line
 * cut short by a crash is not an event (its step simply runs again: every step is idempotent);
 * any other malformed line refuses the journal.
 */
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, truncateSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { faultPoint, fsyncDir } from '../core/index.js';
import type { AdoptionStepReceipt } from '../owners/index.js';
import { RECOVER_REFUSALS as R } from './adopt-codes.js';
import { RECOVERY_DIR } from './adopt-files.js';

export const JOURNAL_FILE = 'journal.jsonl';

export type JournalEvent =
  | { readonly event: 'intent'; readonly action: string; readonly idempotency_key: string; readonly at: string }
  | {
      readonly event: 'done';
      readonly action: string;
      readonly idempotency_key: string;
      readonly receipt: AdoptionStepReceipt | HostReceipt;
      readonly at: string;
    }
  | {
      readonly event: 'resolved';
      readonly hold_id: string;
      readonly receipt: Readonly<Record<string, unknown>>;
      readonly at: string;
    }
  | { readonly event: 'abandoned'; readonly at: string; readonly receipt?: AbandonedReceipt };

/**
 * Why a recovery ended abandoned when it did not end by the operator's abort: another recovery
 * superseded the same Goal lifetime first (the race for it lost). The lifetime this recovery had
 * minted in its destination is retired through the goal owner (compensation).
 */
export interface AbandonedReceipt {
  readonly reason: 'superseded_elsewhere';
  readonly winner_recovery_id: string;
  readonly winner_root: string | null;
  /** The lifetime this recovery minted and then retired; null when it had minted none. */
  readonly retired_instance_id: string | null;
}

/** A receipt of the coordinator's own steps (the new root, the run authority's supersession). */
export interface HostReceipt {
  readonly owner: string;
  readonly action: string;
  readonly disposition: 'bind';
  readonly idempotency_key: string;
  readonly result: 'applied' | 'already';
  readonly readback: Readonly<Record<string, unknown>>;
  readonly holds: readonly [];
  readonly execution_authority_granted: false;
}

export type Entry = JournalEvent & { readonly seq: number };

const journalPath = (destination: string): string => join(destination, RECOVERY_DIR, JOURNAL_FILE);

export function readJournal(destination: string): Entry[] {
  const path = journalPath(destination);
  if (!existsSync(path)) return [];
  const lines = readFileSync(path, 'utf8').split('\n');
  const out: Entry[] = [];
  lines.forEach((text, i) => {
    if (text === '') return;
    let e: Entry;
    try {
      e = JSON.parse(text) as Entry;
    } catch {
      if (i === lines.length - 1) return; // cut short by a crash: never an event
      throw R.journalInvalid(i + 1);
    }
    if (typeof e !== 'object' || e === null || e.seq !== out.length + 1) throw R.journalInvalid(i + 1);
    out.push(e);
  });
  return out;
}

/**
 * The journal as one writer holds it, under the recovery's lock (adopt-lock.ts): read once when
 * opened, a line cut short by a crash dropped then, and every append numbered from what it holds
 * — never read again and then appended to, which is what lets two writers collide.
 */
export class JournalWriter {
  readonly #destination: string;
  readonly #entries: Entry[];

  private constructor(destination: string, entries: Entry[]) {
    this.#destination = destination;
    this.#entries = entries;
  }

  static open(destination: string): JournalWriter {
    const path = journalPath(destination);
    if (existsSync(path)) {
      const text = readFileSync(path, 'utf8');
      if (text.length > 0 && !text.endsWith('\n'))
        truncateSync(path, Buffer.byteLength(text.slice(0, text.lastIndexOf('\n') + 1)));
    }
    return new JournalWriter(destination, readJournal(destination));
  }

  get entries(): readonly Entry[] {
    return this.#entries;
  }

  /** Append one event durably (fsynced before it returns). */
  append(event: JournalEvent): Entry {
    const path = journalPath(this.#destination);
    const created = !existsSync(path);
    const entry = { seq: this.#entries.length + 1, ...event } as Entry;
    faultPoint('recover.journal.before-append');
    const fd = openSync(path, 'a', 0o600);
    try {
      const line = Buffer.from(`${JSON.stringify(entry)}\n`);
      for (let off = 0; off < line.byteLength;) off += writeSync(fd, line, off, line.byteLength - off);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    if (created) fsyncDir(join(this.#destination, RECOVERY_DIR));
    this.#entries.push(entry);
    return entry;
  }
}

/** Append one event durably, for a caller that holds the recovery's lock and appends once. */
export function appendJournal(destination: string, event: JournalEvent): Entry {
  return JournalWriter.open(destination).append(event);
}

/** The journal folded: the done receipts by action, what began, the resolved holds, abandonment. */
export function foldJournal(entries: readonly Entry[]) {
  const done = new Map<string, { receipt: AdoptionStepReceipt | HostReceipt; at: string; seq: number }>();
  const began = new Set<string>();
  /** When each action's first intent was recorded (a retried step keeps its first start). */
  const startedAt = new Map<string, string>();
  const resolved = new Map<string, Readonly<Record<string, unknown>>>();
  /** When each action was first done (a step re-run to settle a hold keeps its first time here). */
  const firstDoneAt = new Map<string, string>();
  /** When the journal last recorded a settlement: a hold resolved, or a step done again. */
  let settledAt: string | undefined;
  let abandoned = false;
  let abandonedBy: AbandonedReceipt | undefined;
  for (const e of entries) {
    if (e.event === 'intent') {
      began.add(e.action);
      if (!startedAt.has(e.action)) startedAt.set(e.action, e.at);
    }
    if (e.event === 'done') {
      if (firstDoneAt.has(e.action)) settledAt = e.at;
      else firstDoneAt.set(e.action, e.at);
      done.set(e.action, { receipt: e.receipt, at: e.at, seq: e.seq });
    }
    if (e.event === 'resolved') {
      resolved.set(e.hold_id, e.receipt);
      settledAt = e.at;
    }
    if (e.event === 'abandoned') {
      abandoned = true;
      abandonedBy = e.receipt;
    }
  }
  const last = [...done.values()].sort((a, b) => b.seq - a.seq)[0];
  return { done, began, startedAt, firstDoneAt, settledAt, resolved, abandoned, abandonedBy, last };
}
