/**
 * A loopback TCP proxy in front of the real PostgreSQL, for what only a lost connection shows: a
 * statement the server ran and committed whose answer never reaches the client. Armed with a
 * marker (bytes the client sends — a prepared statement's name appears in every Bind of it), the
 * proxy forwards the client's message carrying it, then, at the server's first answer after it,
 * drops that answer and cuts both sides: the server has finished the statement (it answers only
 * then), the client never learns it. `refuse` makes every later connection close at once (the
 * server unreachable); `forward` restores it.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface PgProxy {
  readonly port: number;
  /** The URL of the proxied database (the user and database of `target`). */
  url(target: string): string;
  /** Cut the connection at the server's answer to the next client message containing `marker`; then, with `thenRefuse`, refuse every new connection. */
  dropAnswerTo(marker: string, options?: { readonly thenRefuse?: boolean }): Promise<void>;
  forward(): void;
  close(): Promise<void>;
}

export async function startPgProxy(targetPort = 5432): Promise<PgProxy> {
  let armed: { marker: Buffer; thenRefuse: boolean; done: () => void } | undefined;
  let refusing = false;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    if (refusing) return void client.destroy();
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    let cutAtAnswer = false;
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (b: Buffer) => {
      if (armed !== undefined && b.includes(armed.marker)) cutAtAnswer = true;
      upstream.write(b);
    });
    upstream.on('data', (b: Buffer) => {
      if (cutAtAnswer && armed !== undefined) {
        const a = armed;
        armed = undefined;
        if (a.thenRefuse) refusing = true;
        cut();
        a.done();
        return;
      }
      client.write(b);
    });
    for (const s of [client, upstream]) {
      s.on('error', cut);
      s.on('close', () => {
        sockets.delete(s);
        cut();
      });
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: (target) => {
      const u = new URL(target);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    dropAnswerTo: (marker, options = {}) =>
      new Promise<void>((done) => {
        armed = { marker: Buffer.from(marker), thenRefuse: options.thenRefuse === true, done };
      }),
    forward: () => {
      refusing = false;
      armed = undefined;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
