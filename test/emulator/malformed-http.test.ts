import { once } from 'node:events';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';

// Requests that Node itself would answer (bare, without a request id or a body) or drop: the emulator
// answers every one of them in the spec's format, with a request id.

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator();
});
afterAll(() => emulator.close());

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** Sends bytes as they are; `halfClose` then ends the client's side, as a client that sent all it had. */
async function exchange(bytes: string, { halfClose = false } = {}): Promise<RawAnswer> {
  const socket = connect(emulator.port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.write(bytes);
  if (halfClose) socket.end();
  await once(socket, 'close');
  const text = Buffer.concat(chunks).toString('utf8');
  const split = text.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = text.slice(0, split).split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
  const body = text.slice(split + 4);
  return {
    status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1]),
    headers,
    body: body === '' ? undefined : (JSON.parse(body) as unknown),
  };
}

function expectCompatError(answer: RawAnswer, status: number): void {
  expect(answer.status).toBe(status);
  expect(answer.headers['x-request-id']).toMatch(/^req_[0-9a-f]+$/);
  expect(answer.headers['content-type']).toBe('application/json');
  expect(answer.body).toEqual({
    error: { message: expect.any(String), type: 'gateway_api_error', param: null, code: 'invalid_request_error' },
  });
}

function expectNativeError(answer: RawAnswer, status: number): void {
  expect(answer.status).toBe(status);
  expect(answer.headers['x-request-id']).toMatch(/^req_[0-9a-f]+$/);
  expect(answer.headers['content-type']).toBe('application/json');
  expect(answer.body).toMatchObject({ code: 'invalid_request_error', error: expect.any(String) });
}

async function stillServes(): Promise<void> {
  const response = await fetch(`${emulator.baseUrl}/v1/models`, { headers: { authorization: 'Bearer emulator-key' } });
  expect(response.status).toBe(200);
}

describe('a request Node cannot parse is answered in the compatibility envelope (no path was read)', () => {
  it.each([
    ['a request line that is not one', 'GARBAGE\r\n\r\n'],
    ['an unknown method', 'BREW /v1/models HTTP/1.1\r\nHost: e\r\n\r\n'],
    ['a header without a colon', 'GET /native/v1/videos/x HTTP/1.1\r\nHost: e\r\nBad Header\r\n\r\n'],
    [
      'two different Content-Lengths',
      'POST /v1/videos/generations HTTP/1.1\r\nHost: e\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}',
    ],
    [
      'Content-Length together with chunked',
      'POST /v1/videos/generations HTTP/1.1\r\nHost: e\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}',
    ],
    ['a control byte in the target', 'GET /v1/\x01models HTTP/1.1\r\nHost: e\r\n\r\n'],
    ['an HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'],
  ])('%s: 400 with a request id', async (_label, bytes) => {
    expectCompatError(await exchange(bytes, { halfClose: true }), 400);
    await stillServes();
  });

  it('headers over the limit: 431, even on a native path', async () => {
    const answer = await exchange(
      `GET /native/v1/videos/x HTTP/1.1\r\nHost: e\r\nX-Junk: ${'j'.repeat(64 * 1024)}\r\nConnection: close\r\n\r\n`,
    );
    expectCompatError(answer, 431);
    await stillServes();
  });

  it('a request cut short when the client stops sending: 400', async () => {
    expectCompatError(await exchange('GET /v1/models HTTP/1.1\r\nHost: e\r\nAuthoriz', { halfClose: true }), 400);
  });
});

describe('requests Node would answer bare, answered in the layer of their path', () => {
  it.each([
    ['/v1/models', expectCompatError],
    ['/native/v1/videos/x', expectNativeError],
  ])('an HTTP/1.1 request without Host (%s): 400', async (path, expectError) => {
    expectError(await exchange(`GET ${path} HTTP/1.1\r\nAuthorization: Bearer emulator-key\r\nConnection: close\r\n\r\n`), 400);
  });

  it('an HTTP/1.0 request needs no Host', async () => {
    const answer = await exchange('GET /v1/models HTTP/1.0\r\nAuthorization: Bearer emulator-key\r\n\r\n');
    expect(answer.status).toBe(200);
  });

  it.each([
    ['/v1/videos/generations', expectCompatError],
    ['/native/v1/videos/generations', expectNativeError],
  ])('an expectation other than 100-continue (%s): 417', async (path, expectError) => {
    const answer = await exchange(`POST ${path} HTTP/1.1\r\nHost: e\r\nExpect: teapot\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`);
    expectError(answer, 417);
  });

  it('CONNECT: 405 and the connection closed (the gateway is no proxy)', async () => {
    expectCompatError(await exchange('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'), 405);
    expect(emulator.requests.at(-1)).toMatchObject({ method: 'CONNECT', status: 405 });
    await stillServes();
  });

  it('a body that breaks off (a bad chunk) after the headers were read: 400 in the name of that request', async () => {
    const answer = await exchange(
      'POST /native/v1/videos/generations HTTP/1.1\r\nHost: e\r\nAuthorization: Bearer emulator-key\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{"\r\nzz\r\n',
    );
    expectNativeError(answer, 400);
    const entry = await emulator.waitForRequest((candidate) => candidate.requestId === answer.headers['x-request-id']);
    expect(entry).toMatchObject({ method: 'POST', path: '/native/v1/videos/generations', status: 400 });
  });
});

describe('websocket handshakes ws cannot accept, on the realtime path', () => {
  const UPGRADE =
    'GET /native/v1/realtime?model=svc-voice-latest HTTP/1.1\r\nHost: e\r\nAuthorization: Bearer emulator-key\r\nConnection: Upgrade\r\n';
  it.each([
    ['no Sec-WebSocket-Key', `${UPGRADE}Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\r\n`, 400],
    [
      'an unsupported version',
      `${UPGRADE}Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 99\r\n\r\n`,
      400,
    ],
    [
      'an upgrade to another protocol',
      `${UPGRADE}Upgrade: h2c\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      400,
    ],
    [
      'a POST',
      `${UPGRADE.replace('GET', 'POST')}Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      405,
    ],
  ])('%s: refused like every other upgrade, with a request id and a native body', async (_label, bytes, status) => {
    const answer = await exchange(bytes);
    expect(answer.status).toBe(status);
    expect(answer.headers['x-request-id']).toMatch(/^req_/);
    expect(answer.body).toEqual({ code: 'invalid_request_error', error: expect.any(String), usage: { cost_in_usd_ticks: 0 } });
  });
});
