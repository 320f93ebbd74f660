// The one backoff of the bot: how long to wait before trying again, for gateway retries, the poller's
// failed polls, Discord outages at start and realtime reconnects. Exponential from a base, capped, with
// jitter so that clients that failed together do not come back together, and a server's Retry-After
// honoured as the shortest wait.

export interface BackoffPolicy {
  /** The first step. */
  baseMs: number;
  /** The longest step. */
  maxMs: number;
  /** The share of a step that is spread at random (0.25: up to a quarter). */
  jitter: number;
  /**
   * Which way the jitter goes. `shorter`: a step is shortened, never lengthened (quick retries that must
   * not wait past their nominal step). `within-bounds`: a step is lengthened below the cap and shortened at
   * it, so every wait lies within [base, max] and even the first is spread (a failing service is never
   * asked again sooner than base).
   */
  spread: 'shorter' | 'within-bounds';
}

export interface BackoffOptions {
  /** What the server asked for (Retry-After): never waited less than this. */
  retryAfterMs?: number | undefined;
  random?: () => number;
}

/** The wait before retry number `retry` (0 for the first retry). */
export function backoffDelay(retry: number, policy: BackoffPolicy, options: BackoffOptions = {}): number {
  const random = options.random ?? Math.random;
  const step = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, retry));
  const spread = step * policy.jitter * random();
  let delay: number;
  if (policy.spread === 'shorter') {
    delay = step - spread;
  } else {
    delay = Math.min(policy.maxMs, Math.max(policy.baseMs, step < policy.maxMs ? step + spread : step - spread));
  }
  return Math.round(Math.max(delay, options.retryAfterMs ?? 0));
}

/**
 * `Retry-After` as milliseconds: delta seconds ("1", "1.5") or an HTTP date. undefined when absent or
 * unreadable; a date in the past is 0.
 */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  if (!/[a-z]/i.test(text)) return undefined;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}
