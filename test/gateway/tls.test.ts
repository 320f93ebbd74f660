// The bot's gateway client against an emulator that serves HTTPS and WSS (`--tls`) with the certificate
// it made at start: trusted through the client's `ca` option, as an in-process test must (undici reads
// NODE_EXTRA_CA_CERTS only when the process starts), for the API, video downloads and realtime alike.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import type { GatewayClient } from '../../src/gateway/client.ts';
import { GatewayConnectionError } from '../../src/gateway/errors.ts';
import { RealtimeClient } from '../../src/gateway/realtime/client.ts';
import { FAST_CONFIG, LATEST, LAYER_CASES, clientFor, pollUntilSettled, uniquePrompt } from './emulator-support.ts';

let emulator: Emulator;
const clients: GatewayClient[] = [];
const directory = mkdtempSync(join(tmpdir(), 'gateway-tls-'));

beforeAll(async () => {
  emulator = await startEmulator({ config: FAST_CONFIG, tls: true });
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await emulator.close();
  rmSync(directory, { recursive: true, force: true });
});

function trustingClient(layer: (typeof LAYER_CASES)[number]): GatewayClient {
  const client = clientFor(emulator, layer, { ca: emulator.caCert });
  clients.push(client);
  return client;
}

describe.each(LAYER_CASES)('the gateway client on the %s layer, over HTTPS', (layer) => {
  it('submits, polls, downloads and saves a video, trusting the emulator through `ca`', async () => {
    const client = trustingClient(layer);
    expect(client.baseUrl.startsWith('https://127.0.0.1:')).toBe(true);
    const task = await client.generate({ model: LATEST, prompt: uniquePrompt('a harbour at dawn', layer), duration: 2 });
    const { final } = await pollUntilSettled(client, task.id);
    expect(final.status).toBe('succeeded');
    if (layer === 'native') expect(final.videoUrl?.startsWith(`${emulator.baseUrl}/files/`)).toBe(true);
    const video = await client.downloadVideo(final, { maxBytes: 10 * 1024 * 1024 });
    expect(video.bytes.subarray(4, 8).toString('latin1')).toBe('ftyp');
    const saved = await client.saveVideo(final, { maxBytes: 10 * 1024 * 1024, path: join(directory, `${layer}.mp4`) });
    expect(saved).toMatchObject({ size: video.bytes.length, container: 'mp4' });
  });
});

describe('trusting the emulator', () => {
  it('a client that does not trust it cannot connect: the certificate is really checked', async () => {
    const client = clientFor(emulator, 'compat', { retry: { maxRetries: 0 } });
    await expect(client.listModels()).rejects.toBeInstanceOf(GatewayConnectionError);
  });

  it('an injected undici Agent with connect.ca carries the API calls', async () => {
    const dispatcher = new Agent({ connect: { ca: emulator.caCert } });
    try {
      const client = clientFor(emulator, 'compat', { dispatcher });
      expect(client.baseUrl.startsWith('https://')).toBe(true);
      expect((await client.listModels()).length).toBeGreaterThan(0);
    } finally {
      await dispatcher.close();
    }
  });

  it('the realtime client opens a session over WSS with `ca`', async () => {
    expect(emulator.wsUrl.startsWith('wss://')).toBe(true);
    const client = await RealtimeClient.connect({
      wsBaseUrl: emulator.wsUrl,
      apiKey: 'emulator-key',
      model: 'svc-voice-latest',
      session: { turnDetection: null },
      ca: emulator.caCert,
    });
    expect(emulator.realtime.sessions).toHaveLength(1);
    client.close();
  });
});
