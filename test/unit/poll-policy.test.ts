import { describe, expect, it } from 'vitest';
import { DEFAULT_POLL_POLICY, errorBackoffDelay, nextPollDelay, pollPolicyWithInterval } from '../../src/tasks/poll-policy.ts';

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

  it('backs off after errors from 5 s up to 60 s', () => {
    const upper = () => 1;
    expect([1, 2, 3, 4, 5, 6].map((errors) => errorBackoffDelay(policy, errors, upper))).toEqual([
      5_000, 10_000, 20_000, 40_000, 60_000, 60_000,
    ]);
    expect(errorBackoffDelay(policy, 1, () => 0)).toBe(2_500);
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
