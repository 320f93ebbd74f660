import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';

// What the emulator keeps stays bounded however a client behaves: its journals by size as well as by
// count (README, "The gateway emulator").

const KEY = 'emulator-key';
let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ config: { limits: { rate_per_minute: 1_000_000, concurrent_tasks: 1_000_000 } } });
});
afterAll(() => emulator.close());

const MIB = 1024 * 1024;

function post(path: string, body: string): Promise<Response> {
  return fetch(`${emulator.baseUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body });
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
    expect(emulator.requests.filter((entry) => entry.path === '/v1/videos/generations' && entry.status === 400).length).toBeGreaterThanOrEqual(40);
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
