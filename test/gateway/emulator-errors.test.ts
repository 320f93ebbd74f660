// The gateway client against the real emulator: every error the spec names, as the bot would meet it,
// and the retry rules as the emulator's journal records them.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import {
  AuthenticationError,
  BadRequestError,
  type GatewayApiError,
  OutcomeUnknownError,
  PermissionDeniedError,
  QuotaExceededError,
  ServerError,
} from '../../src/gateway/errors.ts';
import { ASYNC_ERROR_CODES, HTTP_ERROR_CODES } from '../../src/gateway/spec.ts';
import { ERROR_CLASS_OF_CODE } from '../support/error-classes.ts';
import {
  CLASSIC,
  EMULATOR_KEY,
  FAST_CONFIG,
  LATEST,
  LAYER_CASES,
  clientFor,
  generationsPath,
  pollUntilSettled,
  submissionsOf,
  uniquePrompt,
} from './emulator-support.ts';

const LIMITED_KEY = 'limited-key-0123456789';
const POOR_KEY = 'poor-key-0123456789';

let emulator: Emulator;

beforeAll(async () => {
  emulator = await startEmulator({
    config: {
      ...FAST_CONFIG,
      keys: {
        [LIMITED_KEY]: { group: 'classic-only', quota_usd: 50 },
        [POOR_KEY]: { group: 'classic-only', quota_usd: 0.0001 },
      },
      groups: { 'classic-only': { models: [CLASSIC] } },
    },
  });
});
afterAll(async () => {
  await emulator.close();
});

const httpCases = LAYER_CASES.flatMap((layer) => Object.entries(HTTP_ERROR_CODES).map(([code, status]) => ({ layer, code, status })));

/** How often a refused submission is sent with maxRetries 1: again only when the refusal proves no task exists. */
const SUBMISSION_ATTEMPTS: Record<string, number> = {
  invalid_request_error: 1,
  invalid_api_key: 1,
  permission_denied: 1,
  model_not_found: 1,
  insufficient_quota: 1,
  rate_limit: 2,
  too_many_requests: 2,
  upstream_error: 2,
  // The provider may have created and charged the task: never repeated, reported as outcome unknown.
  upstream_timeout_no_response: 1,
  overloaded: 2,
};

describe('every HTTP error of the spec, on both layers', () => {
  it.concurrent.each(httpCases)('$layer $status $code', async ({ layer, code, status }) => {
    const prompt = uniquePrompt(`[[http:${status}:${code}]]`, layer);
    const client = clientFor(emulator, layer, { retry: { maxRetries: 1, baseDelayMs: 20, maxDelayMs: 100 } });
    const error = await client.generate({ model: LATEST, prompt }).catch((e: unknown) => e);

    expect(error).toMatchObject({ status, code, requestId: expect.any(String) });
    if (code === 'upstream_timeout_no_response') {
      expect(error).toBeInstanceOf(OutcomeUnknownError);
      expect(error).toMatchObject({ requestSent: true });
    } else {
      expect(error).toBeInstanceOf(ERROR_CLASS_OF_CODE[code]);
      expect((error as GatewayApiError).serverMessage).not.toBe('');
    }
    expect(submissionsOf(emulator, generationsPath(layer), prompt)).toHaveLength(SUBMISSION_ATTEMPTS[code]!);
  });
});

describe('each asynchronous error code, on both layers', () => {
  const asyncCases = LAYER_CASES.flatMap((layer) => ASYNC_ERROR_CODES.map((code) => ({ layer, code })));

  it.concurrent.each(asyncCases)('$layer $code', async ({ layer, code }) => {
    const client = clientFor(emulator, layer);
    const task = await client.generate({ model: LATEST, prompt: uniquePrompt(`[[fail:${code}]]`, layer) });
    const { final } = await pollUntilSettled(client, task.id);
    expect(final.status).toBe('failed');
    expect(final.error?.code).toBe(code);
    expect(final.error?.message).toEqual(expect.any(String));
    expect(final.videoUrl).toBeUndefined();
  });
});

describe('retry rules', () => {
  it.each(LAYER_CASES)(
    '%s: a submission refused twice with overloaded is retried after Retry-After and creates exactly one task',
    async (layer) => {
      const prompt = uniquePrompt('[[http:503:overloaded:2]]', layer);
      const client = clientFor(emulator, layer);
      const quotaBefore = emulator.quotaUsd(EMULATOR_KEY);

      const task = await client.generate({ model: LATEST, prompt });

      const attempts = submissionsOf(emulator, generationsPath(layer), prompt);
      expect(attempts.map((entry) => entry.status)).toEqual([503, 503, 200]);
      // Retry-After: 1 was honoured before each retry.
      expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(950);
      expect(attempts[2]!.at - attempts[1]!.at).toBeGreaterThanOrEqual(950);
      // One accepted submission, one charge, and the task is real.
      expect(emulator.quotaUsd(EMULATOR_KEY)).toBeLessThan(quotaBefore);
      const { final } = await pollUntilSettled(client, task.id);
      expect(final.status).toBe('succeeded');
    },
  );

  it('insufficient_quota is tried once, even though it is a 429', async () => {
    const prompt = uniquePrompt('[[http:429:insufficient_quota]]', 'once');
    const error = await clientFor(emulator, 'compat')
      .generate({ model: LATEST, prompt })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuotaExceededError);
    expect(submissionsOf(emulator, generationsPath('compat'), prompt)).toHaveLength(1);
  });

  it('a key whose quota cannot pay for the video gets insufficient_quota without a retry', async () => {
    const prompt = uniquePrompt('a fox', 'poor');
    const client = clientFor(emulator, 'native', { apiKey: POOR_KEY });
    const error = await client.generate({ model: CLASSIC, prompt }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuotaExceededError);
    expect(error).toMatchObject({ status: 429, code: 'insufficient_quota' });
    expect(submissionsOf(emulator, generationsPath('native'), prompt)).toHaveLength(1);
  });

  it.each(LAYER_CASES)(
    '%s: a submission answered upstream_timeout_no_response is sent once and reported as outcome unknown',
    async (layer) => {
      const prompt = uniquePrompt('[[http:500:upstream_timeout_no_response:1]]', layer);
      const error = await clientFor(emulator, layer, { retry: { maxRetries: 3, baseDelayMs: 20, maxDelayMs: 100 } })
        .generate({ model: LATEST, prompt })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OutcomeUnknownError);
      const [attempt, ...more] = submissionsOf(emulator, generationsPath(layer), prompt);
      expect(more).toEqual([]);
      expect(error).toMatchObject({ code: 'upstream_timeout_no_response', status: 500, requestId: attempt!.requestId });
    },
  );

  it('upstream_error is retried with backoff up to the bound, then surfaced', async () => {
    const prompt = uniquePrompt('[[http:500:upstream_error]]', 'bound');
    const error = await clientFor(emulator, 'compat', { retry: { maxRetries: 3, baseDelayMs: 20, maxDelayMs: 100 } })
      .generate({ model: LATEST, prompt })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerError);
    expect(submissionsOf(emulator, generationsPath('compat'), prompt)).toHaveLength(4);
  });
});

describe('voices', () => {
  it.each(LAYER_CASES)(
    '%s: a voice the gateway does not have passes the client and comes back as its 400 with the real list',
    async (layer) => {
      const error = await clientFor(emulator, layer)
        .generate({ model: LATEST, prompt: 'hello', reference_audios: [{ voice_id: 'nobody' }] })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BadRequestError);
      expect(error).toMatchObject({
        status: 400,
        code: 'invalid_request_error',
        serverMessage: expect.stringContaining('Available voices: altair'),
      });
      if (layer === 'compat') expect(error).toMatchObject({ param: 'reference_audios[0].voice_id' });
    },
  );
});

describe('authentication and key groups', () => {
  it.each(LAYER_CASES)('%s: a wrong key is an AuthenticationError that does not repeat the key', async (layer) => {
    const wrongKey = 'wrong-key-abcdefgh12345';
    const error = await clientFor(emulator, layer, { apiKey: wrongKey })
      .listModels()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error).toMatchObject({ status: 401, code: 'invalid_api_key' });
    expect(JSON.stringify(error, Object.getOwnPropertyNames(error))).not.toContain(wrongKey);
  });

  it.each(LAYER_CASES)('%s: a model outside the key group is permission_denied', async (layer) => {
    const client = clientFor(emulator, layer, { apiKey: LIMITED_KEY });
    const error = await client.generate({ model: LATEST, prompt: 'a cat' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expect(error).toMatchObject({ status: 403, code: 'permission_denied' });
  });
});
