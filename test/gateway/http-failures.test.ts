// The client's HTTP edge cases against a tiny local server: things the emulator is not built to do
// (hang after receiving a submission, oversized or broken answers, redirects, refused connections).

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { GatewayClient, type GatewayClientOptions } from '../../src/gateway/client.ts';
import {
  GatewayConnectionError,
  MalformedResponseError,
  OutcomeUnknownError,
  ResponseTooLargeError,
  ServerError,
} from '../../src/gateway/errors.ts';
import { createGatewayDispatcher } from '../../src/gateway/http.ts';
import type { TaskResult } from '../../src/gateway/types.ts';
import { taskResult } from '../support/task-result.ts';

const API_KEY = 'test-key-9f8e7d6c5b4a';

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  at: number;
}

interface LocalServer {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

const servers: LocalServer[] = [];
const dispatcher = createGatewayDispatcher({ connectMs: 1000 });

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});
afterAll(() => dispatcher.close());

async function serve(handler: (request: IncomingMessage, response: ServerResponse, seen: Seen[]) => void): Promise<LocalServer> {
  const seen: Seen[] = [];
  const server: Server = createServer((request, response) => {
    seen.push({ method: request.method ?? '', url: request.url ?? '', authorization: request.headers.authorization, at: Date.now() });
    request.resume();
    request.on('end', () => handler(request, response, seen));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const local: LocalServer = {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  servers.push(local);
  return local;
}

function client(baseUrl: string, options: Partial<GatewayClientOptions> = {}): GatewayClient {
  return new GatewayClient({
    baseUrl,
    apiKey: API_KEY,
    layer: 'compat',
    dispatcher,
    retry: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 50 },
    timeouts: { headersMs: 300, bodyMs: 300 },
    ...options,
  });
}

function json(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', 'x-request-id': 'req_local', ...headers });
  response.end(JSON.stringify(body));
}

const succeeded = (layer: 'compat' | 'native', videoUrl?: string): TaskResult =>
  taskResult({ layer, status: 'succeeded', rawStatus: 'succeeded', progress: 100, videoUrl, durationSeconds: 2 });

function expectNoKey(error: unknown): void {
  const text = JSON.stringify(error, Object.getOwnPropertyNames(error)) + String(error) + JSON.stringify((error as Error).cause ?? null);
  expect(text).not.toContain(API_KEY);
}

describe('submissions that may have been accepted', () => {
  it('a submission whose answer never comes is "outcome unknown" and is sent exactly once', async () => {
    const server = await serve(() => {
      // Never answer: the gateway got the body and may have created the task.
    });
    const error = await client(server.url)
      .generate({ model: 'svc-imagine-video-1.5', prompt: 'a cat' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect(error).toMatchObject({ requestSent: true, timedOut: true });
    expect((error as Error).message).toMatch(/may have accepted it/);
    expect(server.seen).toHaveLength(1);
    expectNoKey(error);
  });

  it('a read that times out is retried, then reported as a timeout', async () => {
    const server = await serve(() => {});
    const reader = client(server.url, { retry: { maxRetries: 1, baseDelayMs: 10 } });
    const error = await reader.getTask('task_1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatewayConnectionError);
    expect(error).not.toBeInstanceOf(OutcomeUnknownError);
    expect(error).toMatchObject({ timedOut: true });
    expect(server.seen).toHaveLength(2);
  });

  it('a submission to a gateway that refuses connections is retried (it never arrived)', async () => {
    const server = await serve(() => {});
    const url = server.url;
    await server.close();
    const error = await client(url)
      .generate({ model: 'svc-imagine-video-1.5', prompt: 'a cat' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatewayConnectionError);
    expect(error).toMatchObject({ requestSent: false, code: 'ECONNREFUSED' });
    expectNoKey(error);
  });

  it('a submission refused with a retryable code is retried after Retry-After and then succeeds', async () => {
    const server = await serve((_request, response, seen) => {
      if (seen.length === 1)
        json(
          response,
          503,
          { error: { message: 'busy', type: 'gateway_api_error', param: null, code: 'overloaded' } },
          { 'retry-after': '1' },
        );
      else json(response, 200, { task_id: 'task_7', status: 'queued' });
    });
    const task = await client(server.url).generate({ model: 'svc-imagine-video-1.5', prompt: 'a cat' });
    expect(task).toMatchObject({ id: 'task_7', layer: 'compat', rawStatus: 'queued', requestId: 'req_local' });
    expect(server.seen).toHaveLength(2);
    expect(server.seen[1]!.at - server.seen[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it('a poll answered upstream_timeout_no_response is retried (reading twice costs nothing)', async () => {
    const server = await serve((_request, response, seen) => {
      if (seen.length < 3)
        json(response, 500, { code: 'upstream_timeout_no_response', error: 'upstream timed out', usage: { cost_in_usd_ticks: 0 } });
      else json(response, 200, { task_id: 'task_1', status: 'processing', progress: 10 });
    });
    const result = await client(server.url).getTask('task_1');
    expect(result).toMatchObject({ status: 'running', progress: 10 });
    expect(server.seen).toHaveLength(3);
  });

  it('a native 503 with a code the spec does not list is retried for a poll, not for a submission', async () => {
    const server = await serve((request, response, seen) => {
      const polls = seen.filter((entry) => entry.method === 'GET').length;
      if (request.method === 'POST' || polls < 3)
        json(response, 503, { code: 'imagine:busy', error: 'Upstream is busy', usage: { cost_in_usd_ticks: 0 } });
      else json(response, 202, { status: 'pending', progress: 20 });
    });
    const native = client(server.url, { layer: 'native' });
    expect(await native.getTask('req_1')).toMatchObject({ status: 'running', progress: 20 });
    expect(server.seen.filter((entry) => entry.method === 'GET')).toHaveLength(3);
    const submit = await native.generate({ model: 'svc-imagine-video-1.5', prompt: 'a cat' }).catch((e: unknown) => e);
    expect(submit).toBeInstanceOf(ServerError);
    expect(submit).toMatchObject({ status: 503, code: 'imagine:busy' });
    expect(server.seen.filter((entry) => entry.method === 'POST')).toHaveLength(1);
  });

  it('a codeless 502 from a proxy is not retried for a submission but is for a read', async () => {
    const server = await serve((_request, response) => {
      response.writeHead(502, { 'content-type': 'text/html' });
      response.end('<html>Bad Gateway</html>');
    });
    const submit = await client(server.url)
      .generate({ model: 'svc-imagine-video-1.5', prompt: 'a' })
      .catch((e: unknown) => e);
    expect(submit).toBeInstanceOf(ServerError);
    expect(server.seen).toHaveLength(1);
    const read = await client(server.url)
      .getTask('t')
      .catch((e: unknown) => e);
    expect((read as Error).message).toMatch(/HTTP 502: an unexpected error body \(<html>Bad Gateway/);
    expect(server.seen).toHaveLength(4);
  });
});

describe('a server that trickles its answer', () => {
  /** Headers at once, then one byte every 20 ms for ever: never idle long enough for the body timeout. */
  async function trickling(): Promise<LocalServer> {
    return serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_slow' });
      response.write('{"status":"processing"');
      const trickle = setInterval(() => response.write(' '), 20);
      response.on('close', () => clearInterval(trickle));
    });
  }
  const patient = { timeouts: { headersMs: 300, bodyMs: 300, answerMs: 600 }, retry: { maxRetries: 1, baseDelayMs: 10 } };

  it("cannot hold a poll past the answers' deadline; the poll is retried once, then reported as a timeout", async () => {
    const server = await trickling();
    const error = await client(server.url, patient)
      .getTask('task_1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatewayConnectionError);
    expect(error).not.toBeInstanceOf(OutcomeUnknownError);
    expect(error).toMatchObject({ timedOut: true, requestSent: true, requestId: 'req_slow' });
    expect((error as Error).message).toMatch(/did not finish within its 600 ms deadline/);
    expect(server.seen).toHaveLength(2);
  });

  it("holds a video download to the downloads' longer deadline, not to the answers' one", async () => {
    const video = Buffer.alloc(40, 7);
    const server = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'video/mp4', 'content-length': video.length, 'x-request-id': 'req_slow_video' });
      let sent = 0;
      const trickle = setInterval(() => {
        response.write(video.subarray(sent, sent + 1));
        if (++sent === video.length) {
          clearInterval(trickle);
          response.end();
        }
      }, 25);
      response.on('close', () => clearInterval(trickle));
    });
    const native = client(server.url, { layer: 'native', timeouts: { headersMs: 300, bodyMs: 300, answerMs: 300, totalMs: 10_000 } });
    const downloaded = await native.downloadVideo(succeeded('native', `${server.url}/files/slow.mp4`), { maxBytes: 1024 });
    expect(downloaded.bytes).toEqual(video);
  });

  it('cannot hold a submission either: its outcome is unknown and it is sent once', async () => {
    const server = await trickling();
    const error = await client(server.url, patient)
      .generate({ model: 'svc-imagine-video-1.5', prompt: 'a cat' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect(error).toMatchObject({ timedOut: true });
    expect(server.seen).toHaveLength(1);
    expectNoKey(error);
  });
});

describe('answers that are not what the spec promises', () => {
  it('a JSON answer over 1 MiB is refused, not buffered', async () => {
    const server = await serve((_request, response) => json(response, 200, { status: 'queued', padding: 'x'.repeat(1_100_000) }));
    const error = await client(server.url)
      .getTask('task_1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect(error).toMatchObject({ limit: 1024 * 1024 });
  });

  it('reads the request id under either header name (the spec does not name it)', async () => {
    const server = await serve((_request, response) => {
      response.writeHead(400, { 'content-type': 'application/json; charset=utf-8', 'request-id': 'req_plain' });
      response.end(
        JSON.stringify({ error: { message: 'bad prompt', type: 'gateway_api_error', param: 'prompt', code: 'invalid_request_error' } }),
      );
    });
    const error = await client(server.url)
      .getTask('task_1')
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400, code: 'invalid_request_error', requestId: 'req_plain' });
  });

  it('a success answer that is not JSON is a clear error', async () => {
    const server = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain', 'x-request-id': 'req_text' });
      response.end('all good');
    });
    const error = await client(server.url)
      .getTask('task_1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MalformedResponseError);
    expect(error).toMatchObject({ requestId: 'req_text' });
  });

  it.each([
    ['with expires_at', { value: 'cs_1', expires_at: 1_900_000_000 }, new Date(1_900_000_000_000)],
    ['without expires_at (the spec does not show the answer)', { value: 'cs_1' }, undefined],
  ])('a client secret answer %s is accepted', async (_label, body, expiresAt) => {
    const server = await serve((_request, response) => json(response, 200, body));
    expect(await client(server.url).createClientSecret(60)).toEqual({ value: 'cs_1', expiresAt });
  });

  it('a client secret answer without a value is a clear error', async () => {
    const server = await serve((_request, response) => json(response, 200, { expires_at: 1_900_000_000 }));
    await expect(client(server.url).createClientSecret(60)).rejects.toThrow(/client secret answer has no value/);
  });

  it.each([
    ['under data, as objects', { object: 'list', data: [{ id: 'svc-imagine-video' }, { id: 'svc-voice-latest', owned_by: 'svc' }] }],
    ['under models, as objects named by name', { models: [{ name: 'svc-imagine-video' }, { name: 'svc-voice-latest' }] }],
    ['as a bare list of names', ['svc-imagine-video', 'svc-voice-latest']],
  ])('a model list %s is read (the spec does not show its shape)', async (_label, body) => {
    const server = await serve((_request, response) => json(response, 200, body));
    expect((await client(server.url).listModels()).map((model) => model.id)).toEqual(['svc-imagine-video', 'svc-voice-latest']);
  });

  it('a model list in an unexpected shape is a clear error', async () => {
    const server = await serve((_request, response) => json(response, 200, { models: 'all' }));
    await expect(client(server.url).listModels()).rejects.toThrow(MalformedResponseError);
  });
});

describe('downloads', () => {
  const video = Buffer.alloc(5000, 7);

  it("a compatibility download goes through /content with the key; a native one uses the url, with the key only on the gateway's origin", async () => {
    // A gateway that guards every route, its video files too, as the spec's "HTTP requests carry" allows.
    const server = await serve((request, response) => {
      if (request.headers.authorization !== `Bearer ${API_KEY}`)
        return json(response, 401, { error: { code: 'invalid_api_key', message: 'no key' } });
      response.writeHead(200, { 'content-type': 'video/mp4', 'content-length': String(video.length) });
      response.end(video);
    });
    const storage = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/octet-stream' });
      response.end(video);
    });
    const compat = await client(server.url).downloadVideo(succeeded('compat'), { maxBytes: 10_000 });
    expect(compat.bytes.equals(video)).toBe(true);
    expect(compat.contentType).toBe('video/mp4');
    expect(server.seen[0]).toMatchObject({ url: '/v1/videos/task_1/content', authorization: `Bearer ${API_KEY}` });

    const own = await client(`${server.url}/gw/`, { layer: 'native' }).downloadVideo(
      succeeded('native', `${server.url}/files/v.mp4?sig=1`),
      { maxBytes: 10_000 },
    );
    expect(own.bytes.equals(video)).toBe(true);
    expect(server.seen[1]).toMatchObject({ url: '/files/v.mp4?sig=1', authorization: `Bearer ${API_KEY}` });

    // Storage on another port of this machine: another origin, which the operator allows (it is not public).
    const elsewhere = await client(server.url, { layer: 'native', downloadAllowedHosts: [new URL(storage.url).host] }).downloadVideo(
      succeeded('native', `${storage.url}/v.mp4?sig=1`),
      { maxBytes: 10_000 },
    );
    expect(elsewhere.bytes.equals(video)).toBe(true);
    expect(storage.seen[0]).toMatchObject({ url: '/v.mp4?sig=1', authorization: undefined });
  });

  it('an announced size over maxBytes stops at once and carries the size', async () => {
    const server = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'video/mp4', 'content-length': String(video.length) });
      response.end(video);
    });
    const error = await client(server.url)
      .downloadVideo(succeeded('compat'), { maxBytes: 1000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect(error).toMatchObject({ size: 5000, limit: 1000 });
  });

  it('a streamed body that grows over maxBytes is cut off', async () => {
    const server = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'video/mp4' });
      response.write(video);
      response.end(video);
    });
    const error = await client(server.url)
      .downloadVideo(succeeded('compat'), { maxBytes: 6000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect(error).toMatchObject({ size: undefined, limit: 6000 });
  });

  it('gives up on a redirect loop with a clear error', async () => {
    const server = await serve((_request, response) => {
      response.writeHead(302, { location: '/again.mp4' });
      response.end();
    });
    await expect(client(server.url).downloadVideo(succeeded('compat'), { maxBytes: 10_000 })).rejects.toThrow(MalformedResponseError);
    expect(server.seen).toHaveLength(4);
  });

  it('follows a redirect to another origin without the key', async () => {
    const storage = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'video/mp4' });
      response.end(video);
    });
    const gateway = await serve((_request, response) => {
      response.writeHead(302, { location: `${storage.url}/blob/v.mp4` });
      response.end();
    });
    const allowing = client(gateway.url, { downloadAllowedHosts: [new URL(storage.url).host] });
    const download = await allowing.downloadVideo(succeeded('compat'), { maxBytes: 10_000 });
    expect(download.bytes.length).toBe(video.length);
    expect(gateway.seen[0]!.authorization).toBe(`Bearer ${API_KEY}`);
    expect(storage.seen[0]).toMatchObject({ url: '/blob/v.mp4', authorization: undefined });
  });
});
