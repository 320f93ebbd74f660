// The emulator's real rate and concurrency limits (not triggers), over HTTP and through the client: the
// 429s carry Retry-After, and the client waits, retries and gets through, with attempt counts.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { LATEST, clientFor, generationsPath, submissionsOf, uniquePrompt } from './emulator-support.ts';

const RATE_KEY = 'rate-key-0123456789';
const RATE_CLIENT_KEY = 'rate-client-key-0123456789';
const BUSY_KEY = 'busy-key-0123456789';
const BUSY_CLIENT_KEY = 'busy-client-key-0123456789';

let emulator: Emulator;

beforeAll(async () => {
  emulator = await startEmulator({
    config: {
      keys: Object.fromEntries(
        [RATE_KEY, RATE_CLIENT_KEY, BUSY_KEY, BUSY_CLIENT_KEY].map((key) => [key, { group: 'default', quota_usd: 50 }]),
      ),
      timing: { generation_ms: 500, rate_window_ms: 1500 },
      limits: { rate_per_minute: 3, concurrent_tasks: 1 },
    },
  });
});
afterAll(() => emulator.close());

function submit(key: string, path: string, prompt: string): Promise<Response> {
  return fetch(`${emulator.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: LATEST, prompt }),
  });
}

/** What the emulator journaled for a key (a request refused by the rate limit has no body to find it by). */
function requestsOf(key: string): Emulator['requests'] {
  const keyId = emulator.keyIdOf(key);
  return emulator.requests.filter((entry) => entry.keyId === keyId);
}

describe('the rate limit', () => {
  it('answers the request over the limit with 429 rate_limit and a Retry-After, in the layer format', async () => {
    const models = () => fetch(`${emulator.baseUrl}/v1/models`, { headers: { authorization: `Bearer ${RATE_KEY}` } });
    const answers = [await models(), await models(), await models()];
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    const limited = await submit(RATE_KEY, '/native/v1/videos/generations', 'one too many');
    expect(limited.status).toBe(429);
    expect(await limited.json()).toMatchObject({ code: 'rate_limit', error: expect.stringContaining('3 requests') });
    // When the oldest of the three leaves the 1.5 s window.
    expect(limited.headers.get('retry-after')).toMatch(/^[12]$/);
    expect(limited.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('is waited out by the client, which then gets through', async () => {
    const client = clientFor(emulator, 'compat', { apiKey: RATE_CLIENT_KEY, retry: { maxRetries: 2, baseDelayMs: 20, maxDelayMs: 100 } });
    await client.listModels();
    await client.listModels();
    await client.listModels();
    const prompt = uniquePrompt('after the limit', 'rate');
    const task = await client.generate({ model: LATEST, prompt });
    expect(task.id).toMatch(/^task_/);
    const requests = requestsOf(RATE_CLIENT_KEY);
    expect(requests.map((entry) => `${entry.method} ${entry.status}`)).toEqual(['GET 200', 'GET 200', 'GET 200', 'POST 429', 'POST 200']);
    // Retry-After was honoured: the retry came once the window had room.
    expect(requests[4]!.at - requests[0]!.at).toBeGreaterThanOrEqual(1500);
  });
});

describe('the concurrency limit', () => {
  it('answers a task over the limit with 429 too_many_requests and a Retry-After, in the layer format', async () => {
    expect((await submit(BUSY_KEY, '/v1/videos/generations', 'the one running')).status).toBe(200);
    const refused = await submit(BUSY_KEY, '/v1/videos/generations', 'one more');
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({
      error: { code: 'too_many_requests', type: 'gateway_api_error', message: expect.stringContaining('At most 1 task') },
    });
    expect(refused.headers.get('retry-after')).toBe('1');
  });

  it('is waited out by the client until the running task finishes', async () => {
    const client = clientFor(emulator, 'native', { apiKey: BUSY_CLIENT_KEY, retry: { maxRetries: 3, baseDelayMs: 20, maxDelayMs: 100 } });
    await client.generate({ model: LATEST, prompt: uniquePrompt('first', 'busy') });
    const prompt = uniquePrompt('second', 'busy');
    const second = await client.generate({ model: LATEST, prompt });
    expect(second.id).toMatch(/^req_/);
    // The first task takes 500 ms; Retry-After: 1 brings the retry after it.
    expect(submissionsOf(emulator, generationsPath('native'), prompt).map((entry) => entry.status)).toEqual([429, 200]);
  });
});
