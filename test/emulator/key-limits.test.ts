import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmulatorConfigError, parseEmulatorConfig } from '../../src/emulator/config.ts';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';

// A key's own limits in the configuration file (`keys.<key>.limits`), over real HTTP: each key is held to
// its own concurrency and rate, the others keep the global ones, and the 429s say when to come back.

const TWO_SLOTS_KEY = 'two-slots-key-0123456789';
const DEFAULT_LIMITS_KEY = 'default-limits-key-0123456789';
const SLOW_KEY = 'slow-key-0123456789';
const SPENT_KEY = 'spent-key-0123456789';
const MODEL = 'svc-imagine-video-1.5';

let emulator: Emulator;

/** Starts an emulator the way `--config FILE` does, from the file's JSON. */
function startFromFile(file: unknown): Promise<Emulator> {
  return startEmulator({ config: parseEmulatorConfig(file), onlyGivenKeys: true });
}

beforeAll(async () => {
  emulator = await startFromFile({
    keys: {
      [TWO_SLOTS_KEY]: { group: 'default', quota_usd: 50, limits: { concurrent_tasks: 2 } },
      [DEFAULT_LIMITS_KEY]: { group: 'default', quota_usd: 50 },
      [SLOW_KEY]: { group: 'default', quota_usd: 50, limits: { rate_per_minute: 2 } },
      [SPENT_KEY]: { group: 'default', quota_usd: 0, limits: { concurrent_tasks: 1, rate_per_minute: 5 } },
    },
    // Tasks that outlast the test: a slot stays taken.
    timing: { generation_ms: 60_000 },
  });
});
afterAll(() => emulator.close());

function submit(target: Emulator, key: string, prompt: string): Promise<Response> {
  return fetch(`${target.baseUrl}/v1/videos/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, prompt }),
  });
}

function listModels(target: Emulator, key: string): Promise<Response> {
  return fetch(`${target.baseUrl}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
}

/** The answers' statuses, lowest first (concurrent answers come in any order). */
function statuses(answers: Response[]): number[] {
  return answers.map((answer) => answer.status).sort((a, b) => a - b);
}

describe("a key's own concurrency limit", () => {
  it('refuses the 3rd concurrent task of a key with 2 slots with 429 too_many_requests and Retry-After: 1', async () => {
    const answers = await Promise.all([1, 2, 3].map((n) => submit(emulator, TWO_SLOTS_KEY, `two slots ${n}`)));
    expect(statuses(answers)).toEqual([200, 200, 429]);
    const refused = answers.find((answer) => answer.status === 429)!;
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({
      error: { code: 'too_many_requests', message: 'At most 2 tasks may run at once for this key.' },
    });
  });

  it('leaves another key its global limits: it takes a 3rd concurrent task', async () => {
    const answers = await Promise.all([1, 2, 3].map((n) => submit(emulator, DEFAULT_LIMITS_KEY, `default limits ${n}`)));
    expect(statuses(answers)).toEqual([200, 200, 200]);
  });
});

describe("a key's own rate limit", () => {
  it('refuses the key its 3rd request in the minute with 429 rate_limit and the seconds until the window frees a slot', async () => {
    expect((await listModels(emulator, SLOW_KEY)).status).toBe(200);
    expect((await listModels(emulator, SLOW_KEY)).status).toBe(200);
    const limited = await submit(emulator, SLOW_KEY, 'over the rate');
    expect(limited.status).toBe(429);
    expect(await limited.json()).toMatchObject({ error: { code: 'rate_limit', message: 'Rate limit reached: 2 requests per minute.' } });
    // The first request leaves the 60 s window about a minute after it was made.
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(58);
    expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    // Other keys are not slowed by it.
    expect((await listModels(emulator, DEFAULT_LIMITS_KEY)).status).toBe(200);
  });

  it('keeps the global limit of a field the key does not set', async () => {
    const strict = await startFromFile({
      keys: { [SLOW_KEY]: { group: 'default', quota_usd: 50, limits: { rate_per_minute: 2 } } },
      timing: { generation_ms: 60_000 },
      limits: { concurrent_tasks: 1, rate_per_minute: 100 },
    });
    try {
      expect((await submit(strict, SLOW_KEY, 'the one slot')).status).toBe(200);
      const busy = await submit(strict, SLOW_KEY, 'no second slot');
      expect(busy.status).toBe(429);
      expect(await busy.json()).toMatchObject({ error: { code: 'too_many_requests' } });
      const limited = await submit(strict, SLOW_KEY, 'over the rate');
      expect(limited.status).toBe(429);
      expect(await limited.json()).toMatchObject({ error: { code: 'rate_limit' } });
    } finally {
      await strict.close();
    }
  });
});

it('answers a spent quota with 429 insufficient_quota and no Retry-After, whatever the key’s limits', async () => {
  const refused = await submit(emulator, SPENT_KEY, 'nothing left');
  expect(refused.status).toBe(429);
  expect(await refused.json()).toMatchObject({ error: { code: 'insufficient_quota' } });
  expect(refused.headers.get('retry-after')).toBeNull();
});

describe("validation of a key's limits", () => {
  const KEY = 'secret-key-0123456789';

  it.each([
    ['no slots', { limits: { concurrent_tasks: 0 } }, 'keys.secr…89.limits.concurrent_tasks must be a positive whole number'],
    ['a fraction', { limits: { rate_per_minute: 2.5 } }, 'keys.secr…89.limits.rate_per_minute must be a positive whole number'],
    ['a string', { limits: { rate_per_minute: '30' } }, 'keys.secr…89.limits.rate_per_minute must be a positive whole number'],
    ['an unknown limit', { limits: { slots: 2 } }, 'keys.secr…89.limits.slots is not a setting (known: rate_per_minute, concurrent_tasks)'],
    ['limits that are no object', { limits: 2 }, 'keys.secr…89.limits must be an object'],
    ['a misspelt field', { limit: { concurrent_tasks: 2 } }, 'keys.secr…89.limit is not a setting (known: group, quota_usd, limits)'],
  ])('refuses %s, naming the setting with the key masked', (_case, entry, message) => {
    const file = { keys: { [KEY]: { group: 'default', quota_usd: 50, ...entry } } };
    expect(() => parseEmulatorConfig(file)).toThrow(EmulatorConfigError);
    expect(() => parseEmulatorConfig(file)).toThrow(message);
    expect(() => parseEmulatorConfig(file)).not.toThrow(KEY);
  });

  it('masks a short key whole', () => {
    expect(() => parseEmulatorConfig({ keys: { k2: { group: 'default', quota_usd: 50, limits: { concurrent_tasks: -1 } } } })).toThrow(
      'keys.****.limits.concurrent_tasks must be a positive whole number',
    );
  });
});
