/**
 * Streamed request bodies over a real socket: a part counts only when its body ended normally with
 * its declared length (or a chunked body's terminating chunk); a cut-off one leaves nothing, so the
 * same PUT may be sent again. Slow clients are cut off by the server's header, request and
 * body-pause limits — the tests wait for the server to close the socket, never on a clock.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens, type DaemonApp } from '../../src/daemon/index.js';
import { loopxAsync, tempRoot } from '../support/cli.js';
import { openRaw, rawRequest } from './raw-http.js';

const TOKEN = 'upload-test-token-0123456789';
let root: string;
let d: DaemonApp;
let port = 0;

beforeAll(async () => {
  root = tempRoot('loopx-daemon-uploads-');
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  // Short limits so a slow client is cut off soon; nothing here waits for them but the server's close.
  d = await buildApp({
    root,
    token: TOKEN,
    loginTokens: new LoginTokens(),
    port: () => port,
    logger: false,
    timeouts: { headersMs: 1500, requestMs: 3000, bodyIdleMs: 500 },
  });
  await d.app.listen({ host: '127.0.0.1', port: 0 });
  port = (d.app.server.address() as { port: number }).port;
}, 60_000);

// At most four uploads wait at once: each test's goes when it ends.
afterEach(async () => {
  for (const u of (await d.app.inject({ method: 'GET', url: '/api/backups/uploads', headers: headers() })).json()
    .uploads as { upload_id: string }[]) {
    await d.app.inject({ method: 'DELETE', url: `/api/backups/uploads/${u.upload_id}`, headers: headers() });
  }
});

afterAll(async () => {
  await d?.backups.close();
  await d?.app.close();
});

const headers = () => ({ host: `127.0.0.1:${port}`, authorization: `Bearer ${TOKEN}` });
const newUpload = async (): Promise<string> =>
  (await d.app.inject({ method: 'POST', url: '/api/backups/uploads', headers: headers() })).json().upload_id as string;
const putHead = (id: string, extra: string) =>
  `PUT /api/backups/uploads/${id}/manifest HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/octet-stream\r\n${extra}\r\n`;
const uploadOf = async (id: string) =>
  (
    (await d.app.inject({ method: 'GET', url: '/api/backups/uploads', headers: headers() })).json().uploads as {
      upload_id: string;
      manifest_bytes: number | null;
    }[]
  ).find((u) => u.upload_id === id);
const partFile = (id: string) => join(root, 'daemon', 'uploads', id, 'backup.manifest.json');

/** The daemon runs in this process: yield to it until the refused part's file is gone (bounded, not timed). */
async function partSettled(id: string): Promise<void> {
  for (let i = 0; i < 10_000 && existsSync(partFile(id)); i++) await new Promise((r) => setImmediate(r));
}

/** The whole part, sent normally: it must be accepted (the retry after a cut-off one). */
async function putWhole(id: string, bytes: Buffer): Promise<void> {
  const r = await rawRequest(
    port,
    Buffer.concat([Buffer.from(putHead(id, `Content-Length: ${bytes.length}\r\nConnection: close\r\n`)), bytes]),
  );
  expect(r.status, r.body).toBe(200);
  expect(JSON.parse(r.body)).toEqual({ bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
}

describe('a cut-off upload is not a complete part', () => {
  const whole = Buffer.alloc(1000, 0x61);

  it('a PUT that declares 1000 bytes, sends 100 and closes keeps nothing, and the same PUT may be sent again', async () => {
    const id = await newUpload();
    const { socket, closed } = await openRaw(
      port,
      Buffer.concat([Buffer.from(putHead(id, 'Content-Length: 1000\r\n')), whole.subarray(0, 100)]),
    );
    socket.end();
    await closed;
    await partSettled(id);
    expect(existsSync(partFile(id))).toBe(false);
    expect(await uploadOf(id)).toMatchObject({ manifest_bytes: null });
    await putWhole(id, whole);
    expect(await uploadOf(id)).toMatchObject({ manifest_bytes: 1000 });
  });

  it('a chunked PUT cut before its terminating chunk keeps nothing, and the same PUT may be sent again', async () => {
    const id = await newUpload();
    const { socket, closed } = await openRaw(
      port,
      `${putHead(id, 'Transfer-Encoding: chunked\r\n')}64\r\n${'a'.repeat(100)}\r\n`,
    );
    socket.end();
    await closed;
    await partSettled(id);
    expect(existsSync(partFile(id))).toBe(false);
    expect(await uploadOf(id)).toMatchObject({ manifest_bytes: null });
    await putWhole(id, whole);
  });

  it('a chunked PUT with its terminating chunk is a complete part', async () => {
    const id = await newUpload();
    const r = await rawRequest(
      port,
      `${putHead(id, 'Transfer-Encoding: chunked\r\nConnection: close\r\n')}64\r\n${'a'.repeat(100)}\r\n0\r\n\r\n`,
    );
    expect(r.status, r.body).toBe(200);
    expect(JSON.parse(r.body).bytes).toBe(100);
  });
});

describe('slow clients are cut off', () => {
  it('a body that pauses past the body limit is refused (408) and the connection closed; nothing is kept', async () => {
    const id = await newUpload();
    const { closed } = await openRaw(
      port,
      Buffer.concat([Buffer.from(putHead(id, 'Content-Length: 1000000\r\n')), Buffer.alloc(30, 0x61)]),
    );
    const answer = await closed; // the server closes it: no sleep here
    expect([0, 408]).toContain(answer.status);
    await partSettled(id);
    expect(existsSync(partFile(id))).toBe(false);
    await putWhole(id, Buffer.alloc(10, 0x62));
  });

  it('a body that trickles a byte at a time is cut off at the request limit', async () => {
    const id = await newUpload();
    const { socket, closed } = await openRaw(port, putHead(id, 'Content-Length: 1000000\r\n'));
    // Never silent for long enough to trip the body-pause limit: only the request limit can end it.
    const trickle = setInterval(() => socket.writable && socket.write('a'), 100);
    try {
      await closed;
    } finally {
      clearInterval(trickle);
    }
    await partSettled(id);
    expect(existsSync(partFile(id))).toBe(false);
  });

  it('headers that never end are cut off at the header limit', async () => {
    const { closed } = await openRaw(port, `GET /api/health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`);
    const answer = await closed;
    expect([0, 408]).toContain(answer.status);
  });
});

describe('JSON bodies are read like every other body', () => {
  const jsonHead = (extra: string) =>
    `POST /api/session HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n${extra}\r\n`;

  it('a JSON body cut short is daemon_body_incomplete, never a generic 400', async () => {
    const { socket, closed } = await openRaw(port, `${jsonHead('Transfer-Encoding: chunked\r\n')}a\r\n{"login_to\r\n`);
    socket.end();
    const answer = await closed;
    expect(answer.status, answer.head).toBe(400);
    expect(JSON.parse(answer.body).error.code).toBe('daemon_body_incomplete');
  });

  it('a JSON body that pauses past the body limit is answered 408 daemon_body_timeout and closed', async () => {
    const { closed } = await openRaw(port, `${jsonHead('Content-Length: 100\r\n')}{"login_token":`);
    const answer = await closed; // the server answers and closes: no sleep here
    expect(answer.status, answer.head).toBe(408);
    expect(JSON.parse(answer.body).error.code).toBe('daemon_body_timeout');
  });

  it('a body that is not JSON is daemon_body_invalid; a whole one is read', async () => {
    const bad = await rawRequest(port, `${jsonHead('Content-Length: 5\r\nConnection: close\r\n')}{nope`);
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).error.code).toBe('daemon_body_invalid');
    const body = '{"login_token":"not-a-token"}';
    const whole = await rawRequest(
      port,
      `${jsonHead(`Content-Length: ${body.length}\r\nConnection: close\r\n`)}${body}`,
    );
    expect(whole.status).toBe(401);
    expect(JSON.parse(whole.body).error.code).toBe('daemon_login_invalid');
  });

  it('a request with two Host headers is refused 400 daemon_host_invalid, whichever comes first', async () => {
    for (const hosts of [
      `Host: 127.0.0.1:${port}\r\nHost: evil.example\r\n`,
      `Host: evil.example\r\nHost: 127.0.0.1:${port}\r\n`,
    ]) {
      const r = await rawRequest(port, `GET /api/health HTTP/1.1\r\n${hosts}Connection: close\r\n\r\n`);
      expect(r.status, hosts).toBe(400);
      expect(JSON.parse(r.body).error.code).toBe('daemon_host_invalid');
    }
    const one = await rawRequest(
      port,
      `GET /api/health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${TOKEN}\r\nConnection: close\r\n\r\n`,
    );
    expect(one.status).toBe(200);
  });
});
