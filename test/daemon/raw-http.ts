/**
 * Raw HTTP/1.1 over a socket, for what `inject` and `fetch` would normalise away (`//api`, `/./api`,
 * an absolute-form target) or never send (a body cut short). Answers are parsed just enough for
 * status and body; the socket's close is the end of the answer.
 */
import { connect, type Socket } from 'node:net';

export interface RawAnswer {
  /** 0 when the server closed without answering. */
  readonly status: number;
  readonly head: string;
  readonly body: string;
}

const parse = (text: string): RawAnswer => {
  const at = text.indexOf('\r\n\r\n');
  const head = at < 0 ? text : text.slice(0, at);
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
  return { status, head, body: at < 0 ? '' : text.slice(at + 4) };
};

/** Send `request` verbatim (it must ask for `Connection: close`), then read until the server closes. */
export function rawRequest(port: number, request: string | Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(request));
    let out = '';
    s.on('data', (b: Buffer) => (out += b.toString('latin1')));
    s.on('error', reject);
    s.on('close', () => resolve(parse(out)));
  });
}

/** Open a socket and send `head` (and a partial body); the caller decides what comes next. */
export function openRaw(port: number, first: string | Buffer): Promise<{ socket: Socket; closed: Promise<RawAnswer> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(first);
      resolve({ socket, closed });
    });
    let out = '';
    socket.on('data', (b: Buffer) => (out += b.toString('latin1')));
    socket.on('error', () => undefined); // a server that cuts the connection is what some tests wait for
    const closed = new Promise<RawAnswer>((r) => socket.on('close', () => r(parse(out))));
    socket.once('error', (e) => reject(e));
  });
}
