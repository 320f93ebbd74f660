// The gateway client against the real emulator: a task's whole life on both layers, as the bot sees it
// (submit, poll, download), plus models, client secrets, storage, moderation and refunds.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import type { GatewayClient } from '../../src/gateway/client.ts';
import { NotFoundError, ResponseTooLargeError, VideoUnavailableError } from '../../src/gateway/errors.ts';
import { USD_TICKS, type Layer } from '../../src/gateway/spec.ts';
import { pollUntil } from '../support/poll.ts';
import { EMULATOR_KEY, FAST_CONFIG, LATEST, LAYER_CASES, clientFor, pollUntilSettled, uniquePrompt } from './emulator-support.ts';

let emulator: Emulator;
const clients: GatewayClient[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ config: FAST_CONFIG });
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await emulator.close();
});

function isMp4(bytes: Buffer): boolean {
  return bytes.length > 12 && bytes.subarray(4, 8).toString('latin1') === 'ftyp';
}

describe.each(LAYER_CASES)('a task on the %s layer', (layer: Layer) => {
  it('is submitted, reported running (202 with or without a body on native), then succeeds and downloads', async () => {
    const client = clientFor(emulator, layer);
    const task = await client.generate({ model: LATEST, prompt: uniquePrompt('a red fox', layer), duration: 2 });
    expect(task).toMatchObject({ layer, status: 'running', requestId: expect.any(String) });

    const { final } = await pollUntilSettled(client, task.id);
    expect(final).toMatchObject({ id: task.id, layer, status: 'succeeded', moderated: false, error: undefined });
    expect(final.videoUrl).toMatch(/^https?:\/\//);

    const video = await client.downloadVideo(final, { maxBytes: 10 * 1024 * 1024 });
    expect(isMp4(video.bytes)).toBe(true);
    if (layer === 'compat') {
      expect(
        emulator.requests.some((entry) => entry.method === 'GET' && entry.path === `/v1/videos/${task.id}/content` && entry.status === 200),
      ).toBe(true);
    }
  });

  it('reads a task in progress as running, however the layer words it', async () => {
    const client = clientFor(emulator, layer);
    const generation = emulator.config.timing.generation_ms;
    emulator.config.timing.generation_ms = 60_000;
    try {
      const task = await client.generate({ model: LATEST, prompt: uniquePrompt('a slow fox', layer) });
      const polls = [await client.getTask(task.id), await client.getTask(task.id)];
      expect(polls.map((poll) => poll.status)).toEqual(['running', 'running']);
      const answers = emulator.requests.filter((entry) => entry.method === 'GET' && entry.path.endsWith(`/videos/${task.id}`));
      if (layer === 'native') {
        // Upstream answers a pending task with HTTP 202, with a progress body or with none at all.
        expect(answers.map((entry) => entry.status)).toEqual([202, 202]);
        expect(polls.filter((poll) => poll.progress !== undefined)).toHaveLength(1);
      } else {
        expect(polls.map((poll) => poll.rawStatus)).toEqual(['queued', 'queued']);
      }
    } finally {
      emulator.config.timing.generation_ms = generation;
    }
  });

  it('reports what the video cost and charges the key once; a failure is refunded', async () => {
    const client = clientFor(emulator, layer);
    const before = emulator.quotaUsd(EMULATOR_KEY);
    const ok = await client.generate({ model: LATEST, prompt: uniquePrompt('a cost check', layer), duration: 4 });
    const { final } = await pollUntilSettled(client, ok.id);
    const charged = before - emulator.quotaUsd(EMULATOR_KEY);
    expect(charged).toBeGreaterThan(0);
    expect(final.costUsdTicks).toBeGreaterThan(0);
    expect(final.costUsd).toBeCloseTo((final.costUsdTicks ?? 0) / USD_TICKS, 9);
    expect(final.costUsd).toBeCloseTo(charged, 6);

    const afterSuccess = emulator.quotaUsd(EMULATOR_KEY);
    const failing = await client.generate({ model: LATEST, prompt: uniquePrompt('[[fail:internal_error]]', layer) });
    const failed = await pollUntilSettled(client, failing.id);
    expect(failed.final.status).toBe('failed');
    expect(emulator.quotaUsd(EMULATOR_KEY)).toBeCloseTo(afterSuccess, 9);
  });

  it('leaves the cost out of the answers of a task told to, and still charges for it', async () => {
    const client = clientFor(emulator, layer);
    const before = emulator.quotaUsd(EMULATOR_KEY);
    const task = await client.generate({ model: LATEST, prompt: uniquePrompt('[[no-cost]] a quiet one', layer), duration: 2 });
    const { final } = await pollUntilSettled(client, task.id);
    expect(final).toMatchObject({ status: 'succeeded', costUsdTicks: undefined, costUsd: undefined });
    expect(emulator.quotaUsd(EMULATOR_KEY)).toBeLessThan(before);
  });

  it('serves the video of a task told to cut short: an mp4 header and nothing after it', async () => {
    const client = clientFor(emulator, layer);
    const task = await client.generate({ model: LATEST, prompt: uniquePrompt('[[truncated]] a broken one', layer), duration: 2 });
    const { final } = await pollUntilSettled(client, task.id);
    expect(final.status).toBe('succeeded');
    const video = await client.downloadVideo(final, { maxBytes: 10 * 1024 * 1024 });
    expect(video.bytes.length).toBe(64);
    expect(isMp4(video.bytes)).toBe(true);
  });

  it('times out a task that never finishes, as failed and refunded', async () => {
    const client = clientFor(emulator, layer);
    const before = emulator.quotaUsd(EMULATOR_KEY);
    const task = await client.generate({ model: LATEST, prompt: uniquePrompt('[[hang]]', layer) });
    expect(emulator.quotaUsd(EMULATOR_KEY)).toBeLessThan(before);
    const { final } = await pollUntilSettled(client, task.id);
    expect(final.status).toBe('failed');
    expect(final.error).toBeDefined();
    expect(emulator.quotaUsd(EMULATOR_KEY)).toBeCloseTo(before, 9);
  });

  it('reports stored-file info, and a storage failure without failing the task', async () => {
    const client = clientFor(emulator, layer);
    const stored = await client.generate({
      model: LATEST,
      prompt: uniquePrompt('a stored cat', layer),
      storage_options: { filename: 'cat.mp4', expires_after: 3600, public_url: true },
    });
    const { final } = await pollUntilSettled(client, stored.id);
    expect(final.status).toBe('succeeded');
    expect(final.file).toMatchObject({ fileId: expect.any(String), filename: 'cat.mp4' });
    expect(final.file?.expiresAt?.getTime()).toBeGreaterThan(Date.now());
    expect(final.storageError).toBeUndefined();

    const broken = await client.generate({
      model: LATEST,
      prompt: uniquePrompt('[[storage-fail]]', layer),
      storage_options: { filename: 'dog.mp4' },
    });
    const brokenResult = await pollUntilSettled(client, broken.id);
    expect(brokenResult.final).toMatchObject({ status: 'succeeded', file: undefined, storageError: expect.any(String) });
    expect(brokenResult.final.videoUrl).toMatch(/^https?:\/\//);
    expect(isMp4((await client.downloadVideo(brokenResult.final, { maxBytes: 1024 * 1024 })).bytes)).toBe(true);
  });

  it('recognises a moderated result and refuses to download it', async () => {
    const client = clientFor(emulator, layer);
    const task = await client.generate({ model: LATEST, prompt: uniquePrompt('[[moderate]]', layer) });
    const { final } = await pollUntilSettled(client, task.id);
    expect(final.moderated).toBe(true);
    expect(final.videoUrl).toBeUndefined();
    const error = await client.downloadVideo(final, { maxBytes: 1024 * 1024 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VideoUnavailableError);
    expect(error).toMatchObject({ reason: 'moderated' });
  });

  it('submits edits and extensions of an .mp4 link', async () => {
    const client = clientFor(emulator, layer);
    const source = { url: `${emulator.baseUrl}/clips/source.mp4?ex=1` };
    const edit = await client.edit({ model: LATEST, prompt: uniquePrompt('make it snow', layer), video: source });
    const extension = await client.extend({ model: LATEST, prompt: uniquePrompt('keep going', layer), video: source, duration: 2 });
    const prefix = layer === 'compat' ? '/v1' : '/native/v1';
    expect(
      emulator.requests.some((entry) => entry.method === 'POST' && entry.path === `${prefix}/videos/edits` && entry.status === 200),
    ).toBe(true);
    expect(
      emulator.requests.some((entry) => entry.method === 'POST' && entry.path === `${prefix}/videos/extensions` && entry.status === 200),
    ).toBe(true);
    for (const task of [edit, extension]) {
      const { final } = await pollUntilSettled(client, task.id);
      expect(final.status).toBe('succeeded');
    }
  });

  it('sends edits and extensions to the configured paths under its layer prefix', async () => {
    const source = { url: `${emulator.baseUrl}/clips/source.mp4` };
    const prefix = layer === 'compat' ? '/v1' : '/native/v1';
    // A gateway whose edit endpoint is elsewhere: the emulator has no such route and says so.
    const elsewhere = clientFor(emulator, layer, { paths: { edits: '/video/edit', extensions: '/video/extend' } });
    const editError = await elsewhere.edit({ model: LATEST, prompt: uniquePrompt('snow', layer), video: source }).catch((e: unknown) => e);
    expect(editError).toBeInstanceOf(NotFoundError);
    const extendError = await elsewhere
      .extend({ model: LATEST, prompt: uniquePrompt('on', layer), video: source })
      .catch((e: unknown) => e);
    expect(extendError).toBeInstanceOf(NotFoundError);
    expect(
      emulator.requests
        .filter((entry) => entry.path === `${prefix}/video/edit` || entry.path === `${prefix}/video/extend`)
        .map((entry) => entry.status),
    ).toEqual([404, 404]);
    // The same setting names the right endpoint for both layers.
    const configured = clientFor(emulator, layer, { paths: { edits: '/videos/edits', extensions: '/videos/extensions' } });
    await expect(configured.edit({ model: LATEST, prompt: uniquePrompt('rain', layer), video: source })).resolves.toMatchObject({ layer });
  });

  it("does not know the other layer's task ids", async () => {
    const other: Layer = layer === 'compat' ? 'native' : 'compat';
    const task = await clientFor(emulator, other).generate({ model: LATEST, prompt: uniquePrompt('cross', layer) });
    const error = await clientFor(emulator, layer)
      .getTask(task.id)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ status: 404, requestId: expect.any(String) });
  });
});

describe('downloads and their limits', () => {
  it('a video over maxBytes is a typed "too large" error carrying its size', async () => {
    const padded = await startEmulator({ config: { ...FAST_CONFIG, video: { bytes: 300_000 } } });
    try {
      for (const layer of LAYER_CASES) {
        const client = clientFor(padded, layer);
        const task = await client.generate({ model: LATEST, prompt: uniquePrompt('big', layer) });
        const { final } = await pollUntilSettled(client, task.id);
        const error = await client.downloadVideo(final, { maxBytes: 100_000 }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ResponseTooLargeError);
        expect(error).toMatchObject({ size: 300_000, limit: 100_000 });
        expect((await client.downloadVideo(final, { maxBytes: 400_000 })).bytes.length).toBe(300_000);
      }
    } finally {
      await padded.close();
    }
  });

  it('a native video url expires: the task reads expired and the old url is gone', async () => {
    const client = clientFor(emulator, 'native');
    const ttl = emulator.config.timing.url_ttl_ms;
    emulator.config.timing.url_ttl_ms = 200;
    try {
      const task = await client.generate({ model: LATEST, prompt: uniquePrompt('short lived', 'ttl') });
      const { final } = await pollUntilSettled(client, task.id);
      expect(final.status).toBe('succeeded');
      const latest = await pollUntil({
        ask: () => client.getTask(task.id),
        found: (answer) => (answer.status === 'expired' ? answer : undefined),
        intervalMs: 50,
        timeoutMs: 3000,
        timeoutError: (last) => new Error(`task ${task.id} still ${last?.status ?? final.status} after 3000 ms`),
      });
      expect(latest.status).toBe('expired');
      await expect(client.downloadVideo(final, { maxBytes: 1024 * 1024 })).rejects.toBeInstanceOf(NotFoundError);
      await expect(client.downloadVideo(latest, { maxBytes: 1024 * 1024 })).rejects.toMatchObject({ reason: 'expired' });
    } finally {
      emulator.config.timing.url_ttl_ms = ttl;
    }
  });
});

describe('models and realtime client secrets', () => {
  it.each(LAYER_CASES)('%s: lists the models of the key group', async (layer) => {
    const models = await clientFor(emulator, layer).listModels();
    const ids = models.map((model) => model.id);
    expect(ids).toEqual(expect.arrayContaining(['svc-imagine-video-1.5', 'svc-imagine-video', 'svc-voice-latest']));
  });

  it('creates a client secret without charging the key', async () => {
    const before = emulator.quotaUsd(EMULATOR_KEY);
    const secret = await clientFor(emulator, 'compat').createClientSecret(120);
    expect(secret.value).not.toBe('');
    expect(secret.expiresAt!.getTime()).toBeGreaterThan(Date.now() + 60_000);
    expect(secret.expiresAt!.getTime()).toBeLessThanOrEqual(Date.now() + 121_000);
    const entry = emulator.requests.find((request) => request.path === '/native/v1/realtime/client_secrets');
    expect(entry).toMatchObject({ method: 'POST', status: 200 });
    expect(emulator.quotaUsd(EMULATOR_KEY)).toBe(before);
  });

  it('works with another vendor word', async () => {
    const acme = await startEmulator({ config: { ...FAST_CONFIG, vendor: 'acme' } });
    try {
      const client = clientFor(acme, 'native', { vendor: 'acme' });
      const task = await client.generate({ model: 'acme-imagine-video-1.5', prompt: 'a rocket', resolution: '1080p' });
      const { final } = await pollUntilSettled(client, task.id);
      expect(final.status).toBe('succeeded');
      expect((await client.listModels()).map((model) => model.id)).toContain('acme-imagine-video-1.5');
    } finally {
      await acme.close();
    }
  });
});
