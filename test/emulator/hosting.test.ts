import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { get as httpsGet } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { generate } from 'selfsigned';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { isRecord, readString } from '../../src/lib/json.ts';
import { pollUntil, TEST_TIMEOUT_MS } from '../support/poll.ts';
import { rawHttp } from '../support/raw-http.ts';

// Where the emulator listens and how it names itself: HTTPS and WSS with a certificate made at start or
// one's own (clients that speak only wss:), the bind address, and the public URL in what it hands out.

const KEY = 'emulator-key';
const AUTH = { authorization: `Bearer ${KEY}` };
const FAST = { timing: { generation_ms: 50 }, limits: { rate_per_minute: 100_000, concurrent_tasks: 100 } };

/** A pool that trusts `ca` (and only it), as an in-process test of a TLS emulator needs. */
function trusting(ca: string): Agent {
  return new Agent({ connect: { ca } });
}

function altNames(pem: string): string[] {
  return (new X509Certificate(pem).subjectAltName ?? '').split(', ');
}

/** The certificate a TLS server presents, read from a handshake that trusts `ca`. */
async function presentedCertificate(url: string, ca: string): Promise<X509Certificate> {
  const request = httpsGet(url, { ca });
  const [response] = (await once(request, 'response')) as [IncomingMessage];
  const raw = (response.socket as TLSSocket).getPeerX509Certificate();
  response.resume();
  if (!raw) throw new Error('no peer certificate');
  return raw;
}

/** Submits a generation with storage and a public url, and polls it to its end through `dispatcher`. */
async function finishedTask(emulator: Emulator, dispatcher?: Agent): Promise<Record<string, unknown>> {
  const base = emulator.listenUrl;
  const submitted = await fetch(`${base}/v1/videos/generations`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'svc-imagine-video-1.5',
      prompt: 'a lighthouse',
      storage_options: { filename: 'lighthouse.mp4', public_url: true },
    }),
    ...(dispatcher ? { dispatcher } : {}),
  });
  const { task_id: id } = (await submitted.json()) as { task_id: string };
  return pollUntil({
    ask: async (): Promise<unknown> =>
      (await fetch(`${base}/v1/videos/${id}`, { headers: AUTH, ...(dispatcher ? { dispatcher } : {}) })).json(),
    found: (answer) => (isRecord(answer) && answer.status === 'succeeded' ? answer : undefined),
    intervalMs: 20,
    timeoutMs: TEST_TIMEOUT_MS,
    timeoutError: (last) => new Error(`task ${id} not succeeded: ${JSON.stringify(last)}`),
  });
}

function storedUrl(task: Record<string, unknown>): string | undefined {
  const video = task.video;
  return isRecord(video) && isRecord(video.file_output) ? readString(video.file_output, 'public_url') : undefined;
}

describe('the emulator with --tls (a certificate made at start)', () => {
  let emulator: Emulator;
  let agent: Agent;
  beforeAll(async () => {
    emulator = await startEmulator({ tls: true, config: FAST });
    agent = trusting(emulator.caCert ?? '');
  });
  afterAll(async () => {
    await agent.close();
    await emulator.close();
  });

  it('names itself with https: and wss:, and writes its certificate to the file it names', () => {
    expect(emulator.baseUrl).toBe(`https://127.0.0.1:${emulator.port}`);
    expect(emulator.wsUrl).toBe(`wss://127.0.0.1:${emulator.port}`);
    expect(emulator.caCertPath).toBeDefined();
    expect(readFileSync(emulator.caCertPath ?? '', 'utf8')).toBe(emulator.caCert);
    expect(altNames(emulator.caCert ?? '')).toEqual(expect.arrayContaining(['DNS:localhost', 'IP Address:127.0.0.1']));
  });

  it('answers HTTPS to a client that trusts its certificate, at 127.0.0.1 and at localhost', async () => {
    for (const base of [emulator.baseUrl, `https://localhost:${emulator.port}`]) {
      const response = await fetch(`${base}/v1/models`, { headers: AUTH, dispatcher: agent });
      expect(response.status).toBe(200);
      expect(response.headers.get('x-request-id')).toMatch(/^req_/);
    }
  });

  it('is refused by a client that does not trust it: the certificate is its own, not a public one', async () => {
    const untrusting = new Agent();
    try {
      await expect(fetch(`${emulator.baseUrl}/v1/models`, { headers: AUTH, dispatcher: untrusting })).rejects.toMatchObject({
        cause: { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' },
      });
    } finally {
      await untrusting.close();
    }
  });

  it('opens a realtime session over WSS', async () => {
    expect(emulator.wsUrl.startsWith('wss://')).toBe(true);
    const socket = new WebSocket(`${emulator.wsUrl}/native/v1/realtime?model=svc-voice-latest`, { headers: AUTH, ca: emulator.caCert });
    try {
      await once(socket, 'open');
      const types: unknown[] = [];
      const updated = new Promise<void>((resolve) =>
        socket.on('message', (data: Buffer) => {
          const event: unknown = JSON.parse(data.toString('utf8'));
          types.push(isRecord(event) ? event.type : undefined);
          if (isRecord(event) && event.type === 'session.updated') resolve();
        }),
      );
      socket.send(JSON.stringify({ type: 'session.update', session: {} }));
      await updated;
      expect(types).toEqual(['session.created', 'conversation.created', 'session.updated']);
    } finally {
      socket.close();
    }
  });

  it('does not serve plain HTTP on its port', async () => {
    await expect(fetch(`http://127.0.0.1:${emulator.port}/v1/models`, { headers: AUTH })).rejects.toThrow();
    const answer = await rawHttp(emulator.port, `GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n\r\n`);
    expect(answer).not.toMatch(/^HTTP\//);
  });

  it('hands out https video urls that download with the trusted certificate', async () => {
    const task = await finishedTask(emulator, agent);
    const url = readString(task, 'url') ?? '';
    expect(url.startsWith(`${emulator.baseUrl}/files/`)).toBe(true);
    const video = await fetch(url, { dispatcher: agent });
    expect(video.status).toBe(200);
    expect(video.headers.get('content-type')).toBe('video/mp4');
    await video.arrayBuffer();
  });

  it('removes its certificate file when it closes', async () => {
    const other = await startEmulator({ tls: true });
    const path = other.caCertPath ?? '';
    expect(existsSync(path)).toBe(true);
    await other.close();
    expect(existsSync(path)).toBe(false);
  });
});

describe('the emulator with its own certificate (--cert, --key)', () => {
  it('serves the given certificate', async () => {
    const own = await generate([{ name: 'commonName', value: 'own test certificate' }], {
      keyType: 'ec',
      algorithm: 'sha256',
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
    });
    const emulator = await startEmulator({ tls: { cert: own.cert, key: own.private } });
    const agent = trusting(own.cert);
    try {
      expect(emulator.baseUrl).toBe(`https://127.0.0.1:${emulator.port}`);
      expect(emulator.caCert).toBeUndefined();
      expect(emulator.caCertPath).toBeUndefined();
      const presented = await presentedCertificate(`${emulator.baseUrl}/v1/models`, own.cert);
      expect(presented.fingerprint256).toBe(new X509Certificate(own.cert).fingerprint256);
      expect((await fetch(`${emulator.baseUrl}/v1/models`, { headers: AUTH, dispatcher: agent })).status).toBe(200);
    } finally {
      await agent.close();
      await emulator.close();
    }
  });
});

describe('the bind address (--host)', () => {
  it('listens where it is asked, and only there', async () => {
    const emulator = await startEmulator({ host: '127.0.0.2' });
    try {
      expect(emulator.listenUrl).toBe(`http://127.0.0.2:${emulator.port}`);
      expect(emulator.baseUrl).toBe(emulator.listenUrl);
      expect((await fetch(`http://127.0.0.2:${emulator.port}/v1/models`, { headers: AUTH })).status).toBe(200);
      await expect(fetch(`http://127.0.0.1:${emulator.port}/v1/models`, { headers: AUTH })).rejects.toMatchObject({
        cause: { code: 'ECONNREFUSED' },
      });
    } finally {
      await emulator.close();
    }
  });

  it('with --tls, makes a certificate that covers the bind address', async () => {
    const emulator = await startEmulator({ host: '127.0.0.2', tls: true });
    const agent = trusting(emulator.caCert ?? '');
    try {
      expect(emulator.baseUrl).toBe(`https://127.0.0.2:${emulator.port}`);
      expect(altNames(emulator.caCert ?? '')).toContain('IP Address:127.0.0.2');
      expect((await fetch(`${emulator.baseUrl}/v1/models`, { headers: AUTH, dispatcher: agent })).status).toBe(200);
    } finally {
      await agent.close();
      await emulator.close();
    }
  });
});

describe('the public URL (--public-url)', () => {
  it('is the base of every url it hands out, while it listens where it was asked', async () => {
    const emulator = await startEmulator({ publicUrl: 'https://gateway.example.test:9443/emulator/', config: FAST });
    try {
      expect(emulator.baseUrl).toBe('https://gateway.example.test:9443/emulator');
      expect(emulator.wsUrl).toBe('wss://gateway.example.test:9443/emulator');
      expect(emulator.listenUrl).toBe(`http://127.0.0.1:${emulator.port}`);
      const task = await finishedTask(emulator);
      expect(readString(task, 'url')).toMatch(/^https:\/\/gateway\.example\.test:9443\/emulator\/files\/[0-9a-f]+\.mp4$/);
      expect(storedUrl(task)).toMatch(/^https:\/\/gateway\.example\.test:9443\/emulator\/stored\/file_[0-9a-f]+\.mp4$/);
      // The path after the public base is the emulator's own: a proxy that strips the base reaches it.
      const path = new URL(readString(task, 'url') ?? '').pathname.replace(/^\/emulator/, '');
      expect((await fetch(`${emulator.listenUrl}${path}`)).status).toBe(200);
    } finally {
      await emulator.close();
    }
  });

  it('with --tls, makes a certificate that covers the public host too', async () => {
    const emulator = await startEmulator({ publicUrl: 'https://gateway.example.test', tls: true });
    try {
      expect(altNames(emulator.caCert ?? '')).toEqual(
        expect.arrayContaining(['DNS:gateway.example.test', 'DNS:localhost', 'IP Address:127.0.0.1']),
      );
    } finally {
      await emulator.close();
    }
  });

  it('refuses a base that is not an absolute http(s) URL, or has a query', async () => {
    await expect(startEmulator({ publicUrl: 'gateway.example.test' })).rejects.toThrow('absolute http(s) URL');
    await expect(startEmulator({ publicUrl: 'https://gateway.example.test/?a=1' })).rejects.toThrow('query');
  });
});
