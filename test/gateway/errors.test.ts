import { describe, expect, it } from 'vitest';
import {
  GatewayApiError,
  GatewayConnectionError,
  NotFoundError,
  OutcomeUnknownError,
  RateLimitError,
  decodeTaskError,
  errorFromResponse,
  isModerationCode,
} from '../../src/gateway/errors.ts';
import {
  DEFAULT_RETRY_POLICY,
  JITTER_FRACTION,
  decideRetry,
  gatewayBackoff,
  withRetries,
  type RetryPolicy,
} from '../../src/gateway/retry.ts';
import { backoffDelay, parseRetryAfter } from '../../src/lib/backoff.ts';
import { HTTP_ERROR_CODES, RETRYABLE_CODES } from '../../src/gateway/spec.ts';
import { registerSecret, silentLogger } from '../../src/lib/log.ts';
import { ERROR_CLASS_OF_CODE } from '../support/error-classes.ts';

function answer(status: number, body: unknown, extra: { retryAfterMs?: number } = {}): GatewayApiError {
  return errorFromResponse({
    status,
    bodyText: typeof body === 'string' ? body : JSON.stringify(body),
    requestId: 'req_1',
    retryAfterMs: extra.retryAfterMs,
  });
}

const compatEnvelope = (code: string) => ({
  error: { message: `compat says ${code}`, type: 'gateway_api_error', param: code === 'invalid_request_error' ? 'duration' : null, code },
});
const nativeBody = (code: string) => ({ code, error: `upstream says ${code}`, usage: { cost_in_usd_ticks: 0 } });

describe('decoding error answers', () => {
  const codes = Object.entries(HTTP_ERROR_CODES);

  it.each(codes)('compatibility envelope %s (HTTP %i)', (code, status) => {
    const error = answer(status, compatEnvelope(code));
    expect(error).toBeInstanceOf(ERROR_CLASS_OF_CODE[code]);
    expect(error).toMatchObject({ status, code, type: 'gateway_api_error', requestId: 'req_1', serverMessage: `compat says ${code}` });
    expect(error.param).toBe(code === 'invalid_request_error' ? 'duration' : undefined);
    expect(error.message).toBe(`HTTP ${status} ${code}: compat says ${code}`);
  });

  it.each(codes)('native body %s (HTTP %i)', (code, status) => {
    const error = answer(status, nativeBody(code));
    expect(error).toBeInstanceOf(ERROR_CLASS_OF_CODE[code]);
    expect(error).toMatchObject({ status, code, serverMessage: `upstream says ${code}`, costUsdTicks: 0 });
  });

  it('reads a native moderation code and the native "error object" variant', () => {
    expect(answer(400, { code: 'imagine:content-moderated', error: 'blocked' }).code).toBe('imagine:content-moderated');
    expect(isModerationCode('imagine:content-moderated')).toBe(true);
    expect(isModerationCode('invalid_argument')).toBe(false);
    const notFound = answer(404, { error: { message: 'No deferred video' } });
    expect(notFound).toBeInstanceOf(NotFoundError);
    expect(notFound.serverMessage).toBe('No deferred video');
  });

  it.each([
    ['a non-JSON body', 502, '<html><body>Bad gateway</body></html>', /unexpected error body \(<html><body>Bad gateway/],
    ['an empty body', 500, '', /empty error body/],
    ['a JSON array', 400, [1, 2], /unexpected error body/],
    ['a JSON object without a message', 403, { detail: 'x' }, /without a message/],
    ['an error field of the wrong type', 400, { error: 42 }, /without a message/],
    ['truncated JSON', 500, '{"error": {"mess', /unexpected error body/],
  ])('turns %s into a clear error', (_what, status, body, message) => {
    const error = answer(status, body);
    expect(error).toBeInstanceOf(GatewayApiError);
    expect(error.status).toBe(status);
    expect(error.code).toBeUndefined();
    expect(error.message).toMatch(message);
  });

  it('never repeats a registered key, also not in a server message', () => {
    const key = 'sk-test-abcdef123456';
    registerSecret(key);
    const error = answer(401, { error: { message: `Key ${key} is invalid`, code: 'invalid_api_key' } });
    expect(error.message).not.toContain(key);
    expect(error.serverMessage).not.toContain(key);
  });
});

describe('decoding a task error', () => {
  it.each([
    [
      'an object',
      { status: 'failed', error: { code: 'invalid_argument', message: 'Prompt cannot be empty.' } },
      { code: 'invalid_argument', message: 'Prompt cannot be empty.' },
    ],
    [
      'a string with a top-level code',
      { status: 'failed', code: 'internal_error', error: 'boom' },
      { code: 'internal_error', message: 'boom' },
    ],
    ['a bare string', { status: 'failed', error: 'boom' }, { code: undefined, message: 'boom' }],
    [
      'an object without a message',
      { status: 'failed', error: { code: 'service_unavailable' } },
      { code: 'service_unavailable', message: 'The task failed without a message.' },
    ],
  ])('as %s', (_what, body, expected) => {
    expect(decodeTaskError(body)).toEqual(expected);
  });

  it('is undefined when there is none', () => {
    expect(decodeTaskError({ status: 'done' })).toBeUndefined();
    expect(decodeTaskError({ status: 'failed', error: null })).toBeUndefined();
  });
});

describe('retry decisions', () => {
  const policy: RetryPolicy = { maxRetries: 2, baseDelayMs: 100, maxDelayMs: 1000, maxRetryAfterMs: 5000 };
  const decide = (error: unknown, idempotent: boolean, retriesDone = 0) =>
    decideRetry(error, { idempotent, retriesDone, policy, random: () => 0 });

  // Written out by hand: a submission is repeated only after an answered refusal (no task exists).
  const SUBMISSION_RETRIED = new Set(['rate_limit', 'too_many_requests', 'overloaded', 'upstream_error']);

  it.each(Object.entries(HTTP_ERROR_CODES))(
    '%s is retried for reads when the spec says so, for submissions only when no task can exist',
    (code, status) => {
      const error = answer(status, compatEnvelope(code));
      expect(decide(error, true).retry).toBe(RETRYABLE_CODES.has(code));
      expect(decide(error, false).retry).toBe(SUBMISSION_RETRIED.has(code));
    },
  );

  it('never retries insufficient_quota', () => {
    expect(decide(answer(429, nativeBody('insufficient_quota'), { retryAfterMs: 1000 }), true)).toEqual({
      retry: false,
      reason: 'not retryable',
    });
  });

  it('retries codeless 429/5xx (a proxy answering) only for reads', () => {
    expect(decide(answer(503, 'Service Unavailable'), true).retry).toBe(true);
    expect(decide(answer(503, 'Service Unavailable'), false).retry).toBe(false);
    expect(decide(answer(500, ''), true).retry).toBe(true);
    expect(decide(answer(500, ''), false).retry).toBe(false);
    expect(decide(answer(501, 'Not Implemented'), true).retry).toBe(false);
  });

  it.each([
    [429, 'imagine:rate-limited', true],
    [503, 'imagine:busy', true],
    [502, 'bad_upstream', true],
    [500, 'imagine:internal', true],
    [501, 'imagine:unsupported', false],
    [400, 'imagine:bad-prompt', false],
  ])(
    'a native %i with a code the spec does not list (%s): a read follows the status rule, a submission is not repeated',
    (status, code, readRetried) => {
      const error = answer(status, nativeBody(code));
      expect(decide(error, true).retry).toBe(readRetried);
      expect(decide(error, false).retry).toBe(false);
    },
  );

  it('retries a request that never left, even a submission', () => {
    const refused = new GatewayConnectionError('refused', { requestSent: false, timedOut: false });
    expect(decide(refused, false)).toEqual({ retry: true, delayMs: 100 });
  });

  it('does not retry a submission that was sent but not answered', () => {
    const unknown = new OutcomeUnknownError('timed out', { requestSent: true, timedOut: true });
    expect(decide(unknown, false).retry).toBe(false);
    const reset = new GatewayConnectionError('reset', { requestSent: true, timedOut: false });
    expect(decide(reset, false).retry).toBe(false);
    expect(decide(reset, true).retry).toBe(true);
  });

  it('stops after the bounded number of retries', () => {
    const error = answer(503, compatEnvelope('overloaded'));
    expect(decide(error, true, 1).retry).toBe(true);
    expect(decide(error, true, 2)).toEqual({ retry: false, reason: 'retries exhausted' });
  });

  it('waits at least Retry-After, and gives up when it is absurdly long', () => {
    expect(decide(answer(429, compatEnvelope('rate_limit'), { retryAfterMs: 1000 }), false)).toEqual({ retry: true, delayMs: 1000 });
    expect(decide(answer(429, compatEnvelope('rate_limit'), { retryAfterMs: 10 }), false)).toEqual({ retry: true, delayMs: 100 });
    expect(decide(answer(503, compatEnvelope('overloaded'), { retryAfterMs: 3_600_000 }), false)).toEqual({
      retry: false,
      reason: 'Retry-After is too long',
    });
  });

  it('does not retry errors that are not gateway failures', () => {
    expect(decide(new TypeError('bug'), true).retry).toBe(false);
  });
});

describe('backoff', () => {
  it('doubles per retry, is capped, and jitter only shortens it within bounds', () => {
    const policy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 200, maxDelayMs: 1000 };
    expect([0, 1, 2, 3, 4].map((retry) => backoffDelay(retry, gatewayBackoff(policy), { random: () => 0 }))).toEqual([
      200, 400, 800, 1000, 1000,
    ]);
    for (let retry = 0; retry < 5; retry++) {
      const nominal = Math.min(200 * 2 ** retry, 1000);
      for (const random of [0, 0.3, 0.999]) {
        const delay = backoffDelay(retry, gatewayBackoff(policy), { random: () => random });
        expect(delay).toBeGreaterThanOrEqual(Math.floor(nominal * (1 - JITTER_FRACTION)));
        expect(delay).toBeLessThanOrEqual(nominal);
      }
    }
  });

  it('spreads clients out with real randomness', () => {
    const delays = new Set(Array.from({ length: 50 }, () => backoffDelay(3, gatewayBackoff(DEFAULT_RETRY_POLICY))));
    expect(delays.size).toBeGreaterThan(1);
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  it.each([
    ['1', 1000],
    ['0', 0],
    [' 2 ', 2000],
    ['1.5', 1500],
    ['Wed, 01 Jan 2025 00:00:30 GMT', 30_000],
    ['Tue, 31 Dec 2024 23:59:00 GMT', 0],
    ['soon', undefined],
    ['-1', undefined],
    ['', undefined],
    [undefined, undefined],
  ])('%j is %j ms', (header, expected) => {
    expect(parseRetryAfter(header, now)).toBe(expected);
  });
});

describe('withRetries', () => {
  it('retries until success and sleeps the decided delays', async () => {
    const slept: number[] = [];
    let attempts = 0;
    const result = await withRetries(
      () => {
        attempts++;
        if (attempts < 3) return Promise.reject(answer(503, compatEnvelope('overloaded'), { retryAfterMs: 1000 }));
        return Promise.resolve('ok');
      },
      {
        idempotent: false,
        policy: DEFAULT_RETRY_POLICY,
        log: silentLogger,
        operation: 'test',
        random: () => 0,
        sleep: (ms) => {
          slept.push(ms);
          return Promise.resolve();
        },
      },
    );
    expect(result).toBe('ok');
    expect(slept).toEqual([1000, 1000]);
  });

  it('turns a submission answered upstream_timeout_no_response into "outcome unknown" after one attempt', async () => {
    let attempts = 0;
    const error = await withRetries(
      () => {
        attempts++;
        return Promise.reject(answer(500, nativeBody('upstream_timeout_no_response')));
      },
      { idempotent: false, policy: DEFAULT_RETRY_POLICY, log: silentLogger, operation: 'test', sleep: () => Promise.resolve() },
    ).catch((caught: unknown) => caught);
    expect(attempts).toBe(1);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect(error).toMatchObject({ status: 500, code: 'upstream_timeout_no_response', requestId: 'req_1', requestSent: true });
    expect((error as Error).message).toMatch(/may have accepted the task/);
  });

  it('retries a read answered upstream_timeout_no_response', async () => {
    let attempts = 0;
    const result = await withRetries(
      () => (++attempts < 3 ? Promise.reject(answer(500, nativeBody('upstream_timeout_no_response'))) : Promise.resolve('ok')),
      { idempotent: true, policy: DEFAULT_RETRY_POLICY, log: silentLogger, operation: 'test', sleep: () => Promise.resolve() },
    );
    expect(result).toBe('ok');
    expect(attempts).toBe(3);
  });

  it('throws the last error once retries are exhausted', async () => {
    let attempts = 0;
    const failing = () => {
      attempts++;
      return Promise.reject(answer(429, compatEnvelope('too_many_requests')));
    };
    await expect(
      withRetries(failing, {
        idempotent: true,
        policy: { ...DEFAULT_RETRY_POLICY, maxRetries: 3 },
        log: silentLogger,
        operation: 'test',
        sleep: () => Promise.resolve(),
      }),
    ).rejects.toBeInstanceOf(RateLimitError);
    expect(attempts).toBe(4);
  });
});
