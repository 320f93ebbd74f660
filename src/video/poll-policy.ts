import { TASK_TIMEOUT_MS } from '../gateway/spec.ts';
import { backoffDelay } from '../lib/backoff.ts';

// When to ask the gateway about a task again. Polls cost gateway requests (and the benchmark holds the
// bot to 1.1x the minimum), so the next poll aims at the moment the task should be done, estimated from
// the progress the gateway reports, within bounds, with jitter so thousands of tasks do not poll in step.

export interface PollPolicy {
  /** The first poll, and the shortest gap between polls. */
  intervalMs: number;
  /** The longest gap between polls of a running task. */
  maxIntervalMs: number;
  /** Relative jitter: 0.1 spreads each delay over ±10%. */
  jitter: number;
  /** Backoff after failed polls (network, 5xx, 429): from base, doubling, up to max. */
  errorBackoffMs: { base: number; max: number };
  /**
   * Give up on a task this long after it was created: the gateway fails every task 600 s after its
   * creation, so an answer past that (and a short grace for the last polls) will not come.
   */
  deadlineMs: number;
  /**
   * A finished task whose video cannot be fetched or posted is tried this many times in all (with the
   * error backoff between tries), then closed with what went wrong and a link when there is one.
   */
  deliveryTries: number;
}

/** Past the gateway's 600 s: time for the polls that see a task fail at its timeout, even backing off. */
const DEADLINE_GRACE_MS = 60_000;

export const DEFAULT_POLL_POLICY: PollPolicy = {
  intervalMs: 5_000,
  maxIntervalMs: 20_000,
  jitter: 0.1,
  errorBackoffMs: { base: 5_000, max: 60_000 },
  deadlineMs: TASK_TIMEOUT_MS + DEADLINE_GRACE_MS,
  // 5 + 10 + 20 + 40 + 60 s between the tries: a gateway or Discord hiccup of a couple of minutes is ridden out.
  deliveryTries: 6,
};

export function pollPolicyWithInterval(intervalMs: number): PollPolicy {
  return { ...DEFAULT_POLL_POLICY, intervalMs, maxIntervalMs: Math.max(intervalMs, DEFAULT_POLL_POLICY.maxIntervalMs) };
}

function withJitter(delayMs: number, jitter: number, random: () => number): number {
  return Math.round(delayMs * (1 + jitter * (2 * random() - 1)));
}

/**
 * The gap before the next poll of a running task. With progress p after `elapsedMs`, the rest should
 * take about elapsed * (100 - p) / p; without progress, wait one interval.
 */
export function nextPollDelay(
  policy: PollPolicy,
  elapsedMs: number,
  progress: number | undefined,
  random: () => number = Math.random,
): number {
  let delay = policy.intervalMs;
  if (progress !== undefined && progress > 0 && progress < 100) {
    delay = (elapsedMs * (100 - progress)) / progress;
  }
  const bounded = Math.min(policy.maxIntervalMs, Math.max(policy.intervalMs, delay));
  return withJitter(bounded, policy.jitter, random);
}

/** How far error backoffs are spread, as a share of the step: tasks that failed together retry apart. */
const ERROR_JITTER = 0.25;

/**
 * The gap after `consecutiveErrors` failed polls in a row (1 for the first failure): from base, doubling,
 * up to max, always within [base, max] (a failing gateway is never asked again sooner than base).
 */
export function errorBackoffDelay(policy: PollPolicy, consecutiveErrors: number, random: () => number = Math.random): number {
  const { base, max } = policy.errorBackoffMs;
  return backoffDelay(consecutiveErrors - 1, { baseMs: base, maxMs: max, jitter: ERROR_JITTER, spread: 'within-bounds' }, { random });
}
