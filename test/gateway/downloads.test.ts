// Where the client's video downloads may connect, and how a download is saved, against small local
// servers on loopback addresses (127.0.0.1 is the gateway's host here; 127.0.0.2 and ::1 stand for an
// internal service that a hostile gateway would like the bot to fetch from).

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { GatewayClient, type GatewayClientOptions } from '../../src/gateway/client.ts';
import { DownloadRefusedError, NotAVideoError, ResponseTooLargeError, VideoUnavailableError } from '../../src/gateway/errors.ts';
import type { TaskResult } from '../../src/gateway/types.ts';
import { taskResult } from '../support/task-result.ts';
import { SAMPLE_MP4 } from '../support/media.ts';

const API_KEY = 'test-key-download-guard';
const WEBM_HEAD = Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01, 0x42, 0xf7, 0x81]);

interface LocalServer {
  url: string;
  /** Requests it answered. */
  requests: string[];
  /** TCP connections it accepted, requests or not. */
  connections: number;
  close(): Promise<void>;
}

const servers: LocalServer[] = [];
const directory = mkdtempSync(join(tmpdir(), 'download-guard-'));
let files = 0;

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));

async function serve(host: string, handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<LocalServer> {
  const server: Server = createServer((request, response) => {
    local.requests.push(request.url ?? '');
    request.resume();
    request.on('end', () => handler(request, response));
  });
  const local: LocalServer = {
    url: '',
    requests: [],
    connections: 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on('connection', () => local.connections++);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  local.url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  servers.push(local);
  return local;
}

function video(response: ServerResponse, bytes: Buffer = SAMPLE_MP4, type = 'video/mp4'): void {
  response.writeHead(200, { 'content-type': type, 'content-length': String(bytes.length) }).end(bytes);
}

function client(baseUrl: string, options: Partial<GatewayClientOptions> = {}): GatewayClient {
  return new GatewayClient({
    baseUrl,
    apiKey: API_KEY,
    layer: 'native',
    retry: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 50 },
    ...options,
  });
}

function native(videoUrl: string): TaskResult {
  return taskResult({ id: 'req_1', layer: 'native', status: 'succeeded', videoUrl });
}

function newPath(): string {
  return join(directory, `video-${files++}`);
}

describe('a native video address that is not public', () => {
  it.each([
    ['another loopback address', '127.0.0.2'],
    ['the IPv6 loopback', '::1'],
  ])('is refused on %s, before any connection', async (_what, host) => {
    const gateway = await serve('127.0.0.1', (_request, response) => video(response));
    const internal = await serve(host, (_request, response) => video(response));
    const error = await client(gateway.url)
      .downloadVideo(native(`${internal.url}/v.mp4`), { maxBytes: 1_000_000 })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DownloadRefusedError);
    expect(internal.connections).toBe(0);
  });

  it.each([
    ['cloud metadata', 'http://169.254.169.254/latest/meta-data/'],
    ['a private network', 'http://10.1.2.3/v.mp4'],
    ['carrier-grade NAT', 'http://100.64.0.7/v.mp4'],
    ['the unspecified address', 'http://0.0.0.0:9/v.mp4'],
    ['multicast', 'http://224.0.0.1/v.mp4'],
    ['an IPv4-mapped loopback', 'http://[::ffff:127.0.0.1]:9/v.mp4'],
    ['an IPv6 unique local address', 'http://[fd00::1]/v.mp4'],
    ['an IPv6 link-local address', 'http://[fe80::1]/v.mp4'],
  ])('is refused on %s without trying', async (_what, url) => {
    const gateway = await serve('127.0.0.1', (_request, response) => video(response));
    const error = await client(gateway.url)
      .downloadVideo(native(url), { maxBytes: 1_000_000 })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DownloadRefusedError);
    expect(error).toMatchObject({ address: new URL(url).hostname.replace(/^\[|\]$/g, '').replace('::ffff:127.0.0.1', '::ffff:7f00:1') });
  });

  it('is refused when a host name resolves to loopback, after DNS', async () => {
    const gateway = await serve('127.0.0.1', (_request, response) => video(response));
    const internal = await serve('127.0.0.1', (_request, response) => video(response));
    const port = new URL(internal.url).port;
    const error = await client(gateway.url)
      .downloadVideo(native(`http://localhost:${port}/v.mp4`), { maxBytes: 1_000_000 })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DownloadRefusedError);
    expect(error).toMatchObject({ host: 'localhost', address: '127.0.0.1' });
    expect(internal.connections).toBe(0);
  });

  it('is refused when a redirect from an allowed address points at it, and not tried again', async () => {
    const internal = await serve('127.0.0.2', (_request, response) => video(response));
    const gateway = await serve('127.0.0.1', (_request, response) => {
      response.writeHead(302, { location: `${internal.url}/secret.mp4` }).end();
    });
    const error = await client(gateway.url)
      .downloadVideo(native(`${gateway.url}/files/v.mp4`), { maxBytes: 1_000_000 })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DownloadRefusedError);
    expect(gateway.requests).toEqual(['/files/v.mp4']);
    expect(internal.connections).toBe(0);
  });

  it('is refused when a redirect names a host that resolves to loopback', async () => {
    const internal = await serve('127.0.0.1', (_request, response) => video(response));
    const gateway = await serve('127.0.0.1', (_request, response) => {
      response.writeHead(307, { location: `http://localhost:${new URL(internal.url).port}/secret.mp4` }).end();
    });
    await expect(
      client(gateway.url).saveVideo(native(`${gateway.url}/files/v.mp4`), { maxBytes: 1_000_000, path: newPath() }),
    ).rejects.toBeInstanceOf(DownloadRefusedError);
    expect(internal.connections).toBe(0);
  });
});

describe('addresses a download may reach', () => {
  it("the gateway's own host on the gateway's own port, named as in GATEWAY_BASE_URL", async () => {
    const gateway = await serve('127.0.0.1', (_request, response) => video(response));
    const saved = await client(gateway.url).downloadVideo(native(`${gateway.url}/files/v.mp4`), { maxBytes: 1_000_000 });
    expect(saved.bytes.equals(SAMPLE_MP4)).toBe(true);

    const port = new URL(gateway.url).port;
    const byName = await client(`http://localhost:${port}`).downloadVideo(native(`http://localhost:${port}/files/v.mp4`), {
      maxBytes: 1_000_000,
    });
    expect(byName.bytes.equals(SAMPLE_MP4)).toBe(true);
  });

  it("not another port of the gateway's host, directly or by a redirect, unless the operator allows that port", async () => {
    // Another service on the gateway's machine (a database, an admin console) that a hostile gateway would like fetched.
    const internal = await serve('127.0.0.1', (_request, response) => video(response));
    const gateway = await serve('127.0.0.1', (_request, response) => {
      response.writeHead(302, { location: `${internal.url}/moved.mp4` }).end();
    });
    await expect(client(gateway.url).downloadVideo(native(`${internal.url}/v.mp4`), { maxBytes: 1_000_000 })).rejects.toBeInstanceOf(
      DownloadRefusedError,
    );
    await expect(client(gateway.url).downloadVideo(native(`${gateway.url}/v.mp4`), { maxBytes: 1_000_000 })).rejects.toBeInstanceOf(
      DownloadRefusedError,
    );
    expect(internal.connections).toBe(0);

    const allowing = client(gateway.url, { downloadAllowedHosts: [`127.0.0.1:${new URL(internal.url).port}`] });
    expect((await allowing.downloadVideo(native(`${gateway.url}/v.mp4`), { maxBytes: 1_000_000 })).bytes.equals(SAMPLE_MP4)).toBe(true);
    expect(internal.requests).toEqual(['/moved.mp4']);
  });

  it('hosts the operator allows, by address or by name, redirects included', async () => {
    const gateway = await serve('127.0.0.1', (_request, response) => video(response));
    const storage = await serve('127.0.0.2', (_request, response) => video(response));
    const v6 = await serve('::1', (_request, response) => video(response));
    const allowing = client(gateway.url, { downloadAllowedHosts: ['127.0.0.2', 'LOCALHOST', '[::1]'] });

    expect((await allowing.downloadVideo(native(`${storage.url}/v.mp4`), { maxBytes: 1_000_000 })).bytes.equals(SAMPLE_MP4)).toBe(true);
    expect((await allowing.downloadVideo(native(`${v6.url}/v.mp4`), { maxBytes: 1_000_000 })).bytes.equals(SAMPLE_MP4)).toBe(true);
    const local = await serve('127.0.0.1', (_request, response) => video(response));
    const named = `http://localhost:${new URL(local.url).port}/v.mp4`;
    expect((await allowing.downloadVideo(native(named), { maxBytes: 1_000_000 })).bytes.equals(SAMPLE_MP4)).toBe(true);

    const redirecting = await serve('127.0.0.1', (_request, response) => {
      response.writeHead(302, { location: `${storage.url}/moved.mp4` }).end();
    });
    const path = newPath();
    await client(redirecting.url, { downloadAllowedHosts: ['127.0.0.2'] }).saveVideo(native(`${redirecting.url}/v.mp4`), {
      maxBytes: 1_000_000,
      path,
    });
    expect(readFileSync(path).equals(SAMPLE_MP4)).toBe(true);
    expect(storage.requests).toContain('/moved.mp4');
  });
});

describe('saving a video to a file', () => {
  it('writes the bytes to the file and says what container they are', async () => {
    const gateway = await serve('127.0.0.1', (request, response) =>
      request.url === '/webm' ? video(response, WEBM_HEAD, 'video/webm') : video(response),
    );
    const path = newPath();
    const saved = await client(gateway.url).saveVideo(native(`${gateway.url}/files/v.mp4`), { maxBytes: 1_000_000, path });
    expect(saved).toEqual({ size: SAMPLE_MP4.length, contentType: 'video/mp4', container: 'mp4' });
    expect(readFileSync(path).equals(SAMPLE_MP4)).toBe(true);
    const webm = await client(gateway.url).saveVideo(native(`${gateway.url}/webm`), { maxBytes: 1_000_000, path: newPath() });
    expect(webm.container).toBe('webm');
  });

  it('refuses a body that is not a video, whatever its content type says', async () => {
    const page = Buffer.from('<html><body>Sign in to continue</body></html>');
    const gateway = await serve('127.0.0.1', (_request, response) => video(response, page, 'video/mp4'));
    const error = await client(gateway.url)
      .saveVideo(native(`${gateway.url}/files/v.mp4`), { maxBytes: 1_000_000, path: newPath() })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NotAVideoError);
    expect(gateway.requests).toHaveLength(1);
  });

  it('stops a body that grows over the cap while it streams', async () => {
    const gateway = await serve('127.0.0.1', (_request, response) => {
      response.writeHead(200, { 'content-type': 'video/mp4' });
      response.write(SAMPLE_MP4);
      response.end(SAMPLE_MP4);
    });
    const error = await client(gateway.url)
      .saveVideo(native(`${gateway.url}/files/v.mp4`), { maxBytes: SAMPLE_MP4.length + 100, path: newPath() })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect(error).toMatchObject({ size: undefined, limit: SAMPLE_MP4.length + 100 });
  });

  it('fetches nothing for an address that is not an http(s) link', async () => {
    const gateway = await serve('127.0.0.1', (_request, response) => video(response));
    const task = taskResult({
      id: 'req_1',
      layer: 'native',
      status: 'succeeded',
      videoUrl: undefined,
      refusedVideoUrl: 'javascript:alert(1)',
    });
    const error = await client(gateway.url)
      .saveVideo(task, { maxBytes: 1_000_000, path: newPath() })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(VideoUnavailableError);
    expect(error).toMatchObject({ reason: 'not-http' });
    expect(gateway.connections).toBe(0);
  });
});
