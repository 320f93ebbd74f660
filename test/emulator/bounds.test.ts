import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';

// What the emulator keeps stays bounded however a client behaves: its journals by size as well as by
// count, the uploads it makes and the counts of prompt triggers (README, "The gateway emulator").

const KEY = 'emulator-key';
let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ config: { limits: { rate_per_minute: 1_000_000, concurrent_tasks: 1_000_000 } } });
});
afterAll(() => emulator.close());

const MIB = 1024 * 1024;

function post(path: string, body: string): Promise<Response> {
  return fetch(`${emulator.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body,
  });
}

describe('the request journal', () => {
  it('keeps at most 8 MiB of request bodies, the newest in full', async () => {
    for (let index = 0; index < 40; index++) {
      // Nearly a megabyte each, refused (no model) after the body was read and journaled.
      const response = await post('/v1/videos/generations', JSON.stringify({ prompt: `body ${index} ${'x'.repeat(MIB - 100)}` }));
      expect(response.status).toBe(400);
      await response.arrayBuffer();
    }
    const bodies = emulator.requests.filter((entry) => entry.body !== undefined);
    const kept = bodies.reduce((sum, entry) => sum + JSON.stringify(entry.body).length, 0);
    expect(kept).toBeLessThanOrEqual(8 * MIB);
    expect(JSON.stringify(bodies.at(-1)?.body)).toContain('body 39 xxx');
    // The entries themselves stay, without their bodies.
    expect(
      emulator.requests.filter((entry) => entry.path === '/v1/videos/generations' && entry.status === 400).length,
    ).toBeGreaterThanOrEqual(40);
  });

  it('weighs entries by their paths: long paths cannot hold more than 32 MiB', async () => {
    const longPath = `/v1/videos/${'p'.repeat(15 * 1024)}`;
    const requests = 2500;
    for (let sent = 0; sent < requests; sent += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async () => {
          const response = await fetch(`${emulator.baseUrl}${longPath}`, { headers: { authorization: `Bearer ${KEY}` } });
          await response.arrayBuffer();
        }),
      );
    }
    const kept = emulator.requests.reduce((sum, entry) => sum + entry.path.length, 0);
    expect(kept).toBeLessThanOrEqual(32 * MIB);
    expect(emulator.requests.at(-1)?.path).toBe(longPath);
  });
});

describe('uploads to output.upload_url', () => {
  async function uploadTarget(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; url: string }> {
    const server = createServer(handler);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const address = server.address();
    return { server, url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/put/video.mp4` };
  }

  it('gives up a PUT that is never answered at its deadline (timing.upload_timeout_ms)', async () => {
    const patient = await startEmulator({ config: { timing: { generation_ms: 10, upload_timeout_ms: 300 } } });
    let abandoned!: () => void;
    const gaveUp = new Promise<void>((resolve) => (abandoned = resolve));
    // Reads the video, then never answers.
    const target = await uploadTarget((request) => {
      request.resume();
      request.socket.once('close', () => abandoned());
    });
    try {
      const response = await fetch(`${patient.baseUrl}/v1/videos/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'svc-imagine-video-1.5', prompt: 'upload', output: { upload_url: target.url } }),
      });
      expect(response.status).toBe(200);
      await Promise.race([
        gaveUp,
        new Promise((_resolve, reject) => setTimeout(() => reject(new Error('the emulator never gave the upload up')), 5000)),
      ]);
    } finally {
      target.server.closeAllConnections();
      target.server.close();
      // Closing waits for uploads under way to settle.
      await patient.close();
    }
    expect(patient.uploads).toEqual([
      { url: target.url, bytes: expect.any(Number), status: undefined, error: expect.stringContaining('300 ms') },
    ]);
  });

  it('keeps the 1,000 newest uploads in its list', async () => {
    const quick = await startEmulator({
      config: {
        keys: { [KEY]: { group: 'default', quota_usd: 1_000_000 } },
        timing: { generation_ms: 1 },
        limits: { rate_per_minute: 1_000_000, concurrent_tasks: 1_000_000 },
      },
    });
    let received = 0;
    let receivedAll!: () => void;
    const all = new Promise<void>((resolve) => (receivedAll = resolve));
    const target = await uploadTarget((request, response) => {
      request.resume();
      request.on('end', () => {
        response.end();
        if (++received === 1050) receivedAll();
      });
    });
    try {
      for (let sent = 0; sent < 1050; sent += 50) {
        await Promise.all(
          Array.from({ length: 50 }, async (_unused, index) => {
            const response = await fetch(`${quick.baseUrl}/v1/videos/generations`, {
              method: 'POST',
              headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
              body: JSON.stringify({
                model: 'svc-imagine-video-1.5',
                prompt: 'upload',
                output: { upload_url: `${target.url}?n=${sent + index}` },
              }),
            });
            await response.arrayBuffer();
          }),
        );
      }
      await all;
      expect(quick.uploads.length).toBeLessThanOrEqual(1000);
      expect(quick.uploads.length).toBeGreaterThan(0);
    } finally {
      target.server.close();
      await quick.close();
    }
  });
});

describe('prompt triggers counted per prompt ([[http:STATUS:CODE:N]])', () => {
  it('remember the counts of the 1,000 most recent prompts', async () => {
    const prompt = (index: number) => `count me ${index} [[http:503:overloaded:1]]`;
    const submit = async (index: number) => {
      const response = await post('/v1/videos/generations', JSON.stringify({ model: 'svc-imagine-video-1.5', prompt: prompt(index) }));
      await response.arrayBuffer();
      return response.status;
    };
    for (let index = 0; index <= 1000; index++) expect(await submit(index)).toBe(503);
    // The newest prompt's refusal is remembered; the oldest one's was forgotten, so it is refused anew.
    expect(await submit(1000)).toBe(200);
    expect(await submit(0)).toBe(503);
  });
});

describe('what a task keeps of its request', () => {
  it.each([
    ['output.upload_url', { output: { upload_url: `https://uploads.example/${'u'.repeat(8192)}` } }],
    ['storage_options.filename', { storage_options: { filename: `${'f'.repeat(1021)}.mp4` } }],
  ])('refuses a %s too long to keep for hours (400 naming it)', async (param, extra) => {
    const response = await post('/v1/videos/generations', JSON.stringify({ model: 'svc-imagine-video-1.5', prompt: 'x', ...extra }));
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'invalid_request_error', param } });
  });
});
