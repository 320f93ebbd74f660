// Every retry decision of the gateway client lives here. The rules (docs/gateway.md, "Retry rules"):
// only the spec's retryable codes, a bounded number of times, exponential backoff with jitter that
// honours Retry-After. On top of that, a submission (POST) is retried only when the gateway certainly
// did not accept it, so a retry can never create and charge a second task:
//   - an answered refusal: rate_limit, too_many_requests, overloaded or upstream_error (no task exists);
//   - a connection that never carried the request (refused, DNS failure, connect timeout).
// A submission answered upstream_timeout_no_response, or sent but not answered at all, may have created
// (and charged) a task upstream: it becomes OutcomeUnknownError and is never retried. Reads (GET) retry
// every retryable code of the spec, other network failures, and 429/500/502/503/504 answers without a
// code the spec lists (a proxy in front of the gateway, or a native code the spec does not show: rule 2
// calls 429 and 5xx temporary), because repeating a read costs nothing.

import { backoffDelay, type BackoffPolicy } from '../lib/backoff.ts';
import type { Logger } from '../lib/log.ts';
import { HTTP_ERROR_CODES, RETRYABLE_CODES } from './spec.ts';
import { GatewayApiError, GatewayConnectionError, OutcomeUnknownError } from './errors.ts';

/** Answers after which the provider may have created (and charged) the task all the same. */
const OUTCOME_UNKNOWN_CODES: ReadonlySet<string> = new Set(['upstream_timeout_no_response']);
/** Answers that refuse a submission outright: the gateway says so, and no task exists. */
const SUBMISSION_RETRYABLE_CODES: ReadonlySet<string> = new Set([...RETRYABLE_CODES].filter((code) => !OUTCOME_UNKNOWN_CODES.has(code)));
/** Statuses that say "try again later" when the code does not say more (501 and 505 never get better). */
const TEMPORARY_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

export interface RetryPolicy {
  /** Retries after the first attempt. */
  maxRetries: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** A Retry-After longer than this means "give up now", not "wait". */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: 2,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 60_000,
};

/** Backoff is shortened by up to this fraction at random, so clients that failed together spread out. */
export const JITTER_FRACTION = 0.25;

export type RetryDecision = { retry: true; delayMs: number } | { retry: false; reason: string };

export interface RetryContext {
  /** True for reads (and other calls that are safe to repeat). */
  idempotent: boolean;
  /** How many retries already happened (0 before the first retry). */
  retriesDone: number;
  policy: RetryPolicy;
  random?: () => number;
  /** Codes the caller waits out itself (a queue on the key's limits): never retried here. */
  notRetried?: ReadonlySet<string>;
}

/** The retry policy's waits: exponential, capped, and shortened (never lengthened) by the jitter. */
export function gatewayBackoff(policy: RetryPolicy): BackoffPolicy {
  return { baseMs: policy.baseDelayMs, maxMs: policy.maxDelayMs, jitter: JITTER_FRACTION, spread: 'shorter' };
}

function isRetryableAnswer(error: GatewayApiError, idempotent: boolean): boolean {
  if (!idempotent) return error.code !== undefined && SUBMISSION_RETRYABLE_CODES.has(error.code);
  if (error.code !== undefined && Object.hasOwn(HTTP_ERROR_CODES, error.code)) return RETRYABLE_CODES.has(error.code);
  // No code (a proxy answering), or one the spec does not list (its native codes are "not shown"): the
  // status tells whether the trouble is temporary.
  return TEMPORARY_STATUSES.has(error.status);
}

/**
 * What a failed submission means for the caller: an answer that leaves open whether the task exists
 * becomes OutcomeUnknownError (with the gateway's status, code and request id); anything else as is.
 */
function submissionFailure(error: unknown): unknown {
  if (!(error instanceof GatewayApiError) || error.code === undefined || !OUTCOME_UNKNOWN_CODES.has(error.code)) return error;
  return new OutcomeUnknownError(`${error.message}; the gateway may have accepted the task all the same, so it was not repeated`, {
    requestSent: true,
    timedOut: true,
    status: error.status,
    code: error.code,
    requestId: error.requestId,
  });
}

export function decideRetry(error: unknown, context: RetryContext): RetryDecision {
  const { policy } = context;
  if (context.retriesDone >= policy.maxRetries) return { retry: false, reason: 'retries exhausted' };
  if (error instanceof OutcomeUnknownError) return { retry: false, reason: 'the submission may have been accepted' };
  const backoff = (retryAfterMs?: number) =>
    backoffDelay(context.retriesDone, gatewayBackoff(policy), { retryAfterMs, random: context.random });
  if (error instanceof GatewayConnectionError) {
    if (error.requestSent && !context.idempotent) return { retry: false, reason: 'the submission may have been accepted' };
    return { retry: true, delayMs: backoff() };
  }
  if (error instanceof GatewayApiError) {
    if (error.code !== undefined && context.notRetried?.has(error.code)) return { retry: false, reason: 'the caller waits it out' };
    if (!isRetryableAnswer(error, context.idempotent)) return { retry: false, reason: 'not retryable' };
    if (error.retryAfterMs !== undefined && error.retryAfterMs > policy.maxRetryAfterMs)
      return { retry: false, reason: 'Retry-After is too long' };
    return { retry: true, delayMs: backoff(error.retryAfterMs) };
  }
  return { retry: false, reason: 'not a gateway failure' };
}

export interface RetryRunOptions {
  idempotent: boolean;
  policy: RetryPolicy;
  log: Logger;
  /** What is being attempted, for the logs (e.g. "POST /v1/videos/generations"). */
  operation: string;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  notRetried?: ReadonlySet<string>;
}

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `attempt` until it succeeds or decideRetry says stop; the last error is thrown as is. */
export async function withRetries<T>(attempt: (attemptNumber: number) => Promise<T>, options: RetryRunOptions): Promise<T> {
  const sleep = options.sleep ?? defaultSleep;
  for (let retriesDone = 0; ; retriesDone++) {
    try {
      return await attempt(retriesDone + 1);
    } catch (caught) {
      const error = options.idempotent ? caught : submissionFailure(caught);
      const decision = decideRetry(error, {
        idempotent: options.idempotent,
        retriesDone,
        policy: options.policy,
        ...(options.random ? { random: options.random } : {}),
        ...(options.notRetried ? { notRetried: options.notRetried } : {}),
      });
      if (!decision.retry) throw error;
      options.log.warn('gateway request failed, retrying', {
        operation: options.operation,
        attempt: retriesDone + 1,
        delayMs: decision.delayMs,
        error,
      });
      await sleep(decision.delayMs);
    }
  }
}
