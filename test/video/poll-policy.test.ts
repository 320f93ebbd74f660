import { describe, expect, it } from 'vitest';
import { DEFAULT_POLL_POLICY, errorBackoffDelay, nextPollDelay, pollPolicyWithInterval } from '../../src/video/poll-policy.ts';

const noJitter = () => 0.5;
const policy = DEFAULT_POLL_POLICY;

describe('when to poll a task again', () => {
  it('waits one interval when the gateway gives no progress', () => {
    expect(nextPollDelay(policy, 0, undefined, noJitter)).toBe(5_000);
    expect(nextPollDelay(policy, 60_000, undefined, noJitter)).toBe(5_000);
  });

  it('aims at the estimated end from progress, within bounds', () => {
    // 10 s for 50%: about 10 s to go.
    expect(nextPollDelay(policy, 10_000, 50, noJitter)).toBe(10_000);
    // 90% after 9 s: 1 s to go, but never sooner than the interval.
    expect(nextPollDelay(policy, 9_000, 90, noJitter)).toBe(5_000);
    // 1% after 30 s: ages to go, but never later than the maximum interval.
    expect(nextPollDelay(policy, 30_000, 1, noJitter)).toBe(20_000);
  });

  it('spreads polls by the jitter, both ways', () => {
    expect(nextPollDelay(policy, 0, undefined, () => 0)).toBe(4_500);
    expect(nextPollDelay(policy, 0, undefined, () => 1)).toBe(5_500);
  });

  it('backs off after errors from 5 s, doubling, up to 60 s', () => {
    expect([1, 2, 3, 4, 5, 6].map((errors) => errorBackoffDelay(policy, errors, () => 0))).toEqual([
      5_000, 10_000, 20_000, 40_000, 60_000, 60_000,
    ]);
  });

  it('jitters error backoffs without ever going below 5 s or above 60 s', () => {
    const draws = [0, 0.1, 0.5, 0.9, 0.999_999];
    const delays = [1, 2, 3, 4, 5, 6, 20].flatMap((errors) => draws.map((draw) => errorBackoffDelay(policy, errors, () => draw)));
    expect(Math.min(...delays)).toBe(5_000);
    expect(Math.max(...delays)).toBe(60_000);
    // Spread both on the first error and at the cap, so tasks that failed together do not retry together.
    expect(new Set(draws.map((draw) => errorBackoffDelay(policy, 1, () => draw))).size).toBe(draws.length);
    expect(new Set(draws.map((draw) => errorBackoffDelay(policy, 6, () => draw))).size).toBe(draws.length);
    expect(errorBackoffDelay(policy, 1, () => 0.999_999)).toBeLessThan(10_000);
  });

  it('gives up only after the gateway itself would have timed out', () => {
    expect(policy.deadlineMs).toBeGreaterThan(600_000);
  });

  it('can be made faster for demos and tests without touching the error backoff', () => {
    const fast = pollPolicyWithInterval(200);
    expect(nextPollDelay(fast, 0, undefined, noJitter)).toBe(200);
    expect(fast.errorBackoffMs).toEqual(policy.errorBackoffMs);
  });
});
