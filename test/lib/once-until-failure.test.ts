import { describe, expect, it } from 'vitest';
import { onceUntilFailure } from '../../src/lib/once-until-failure.ts';

describe('onceUntilFailure', () => {
  it('runs the load once for every caller while it succeeds', async () => {
    let loads = 0;
    const salt = onceUntilFailure(() => Promise.resolve(++loads));
    expect(await Promise.all([salt(), salt(), salt()])).toEqual([1, 1, 1]);
    expect(await salt()).toBe(1);
  });

  it('hands a failure to the callers that waited for it, then tries again', async () => {
    let loads = 0;
    const userId = onceUntilFailure(() => (++loads === 1 ? Promise.reject(new Error('Discord is down')) : Promise.resolve('me')));
    const waiting = [userId(), userId()];
    await expect(waiting[0]).rejects.toThrow('Discord is down');
    await expect(waiting[1]).rejects.toThrow('Discord is down');
    expect(await userId()).toBe('me');
    expect(loads).toBe(2);
  });
});
