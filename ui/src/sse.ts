/**
 * Server-Sent Events over fetch. EventSource cannot send an Authorization header, so the stream
 * is read with fetch + ReadableStream and its `event:` / `data:` / `id:` lines are parsed here
 * (the WHATWG event-stream rules: any line ending, `:` comments, multi-line data, a blank line
 * dispatches).
 */
import { ApiError, apiFetch, isAbort } from './api';

export interface SseMessage {
  readonly event: string;
  readonly data: string;
  /** The last `id:` seen so far (the SSE "last event ID"), or null. */
  readonly id: string | null;
}

/** An incremental parser: feed it text, it calls `onMessage` for each complete event. */
export class SseParser {
  private buffer = '';
  private data: string[] = [];
  private event = '';
  private lastId: string | null;
  private started = false;

  constructor(
    private readonly onMessage: (m: SseMessage) => void,
    lastId: string | null = null,
  ) {
    this.lastId = lastId;
  }

  push(text: string): void {
    this.buffer += text;
    if (!this.started && this.buffer.length > 0) {
      this.started = true;
      if (this.buffer.charCodeAt(0) === 0xfeff) this.buffer = this.buffer.slice(1);
    }
    this.drain(false);
  }

  /** The stream ended: a trailing line is processed, an unterminated event is dropped (as the spec says). */
  end(): void {
    this.drain(true);
    if (this.buffer.length > 0) this.line(this.buffer);
    this.buffer = '';
  }

  private drain(final: boolean): void {
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      if (!m) return;
      // A lone "\r" at the end may be the first half of "\r\n": wait for the next chunk.
      if (!final && m[0] === '\r' && m.index === this.buffer.length - 1) return;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === '') {
      if (this.data.length > 0)
        this.onMessage({ event: this.event || 'message', data: this.data.join('\n'), id: this.lastId });
      this.data = [];
      this.event = '';
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.event = value;
        break;
      case 'data':
        this.data.push(value);
        break;
      case 'id':
        if (!value.includes('\0')) this.lastId = value;
        break;
      default:
        // `retry:` and unknown fields are ignored: reconnection is the caller's.
        break;
    }
  }
}

export interface ReadSseOptions {
  readonly signal: AbortSignal;
  readonly onMessage: (m: SseMessage) => void;
  /** Sent as `Last-Event-ID` when set. */
  readonly lastEventId?: string | null;
}

/**
 * GET an event stream and deliver its events until the server ends it. Resolves when the stream
 * ends (or is aborted through `signal`); rejects with the typed error if the request is refused.
 */
export async function readSse(path: string, options: ReadSseOptions): Promise<void> {
  const headers: Record<string, string> = { Accept: 'text/event-stream' };
  if (options.lastEventId != null) headers['Last-Event-ID'] = options.lastEventId;
  let res: Response;
  try {
    res = await apiFetch(path, { headers, signal: options.signal });
  } catch (e) {
    if (isAbort(e)) return;
    throw e;
  }
  if (!res.body) return;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new SseParser(options.onMessage, options.lastEventId ?? null);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.push(value);
    }
    parser.end();
  } catch (e) {
    if (isAbort(e) || options.signal.aborted) return;
    throw new ApiError(0, {
      code: 'ui_stream_interrupted',
      message: 'The event stream from the daemon was interrupted.',
      next_action: 'check that `loopx daemon` is still running, then try again',
    });
  } finally {
    reader.releaseLock();
  }
}
