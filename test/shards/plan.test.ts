import { describe, expect, it } from 'vitest';
import { describeShards, isSingleProcess, planShards, shardOfGuild } from '../../src/shards/plan.ts';

describe('the shard plan', () => {
  it('puts a guild on the shard Discord computes: (guild_id >> 22) % count, the low 22 bits aside', () => {
    const guild = (timestampPart: bigint, low: bigint) => String((timestampPart << 22n) | low);
    expect(shardOfGuild(guild(1_000_000_005n, 0n), 4)).toBe(1);
    expect(shardOfGuild(guild(1_000_000_005n, 4_194_303n), 4)).toBe(1);
    expect(shardOfGuild(guild(1_000_000_006n, 17n), 4)).toBe(2);
    expect(shardOfGuild(guild(1_000_000_006n, 17n), 1)).toBe(0);
    // A real-sized snowflake (2026) stays exact: no floating point on the way.
    expect(shardOfGuild('1575129831878688770', 7)).toBe(Number((1575129831878688770n >> 22n) % 7n));
  });

  it("groups this machine's shards into workers of SHARDS_PER_PROCESS", () => {
    const planned = planShards({ count: 8, ids: '0-4,7', perProcess: 2 }, 8);
    expect(planned.ok && planned.plan).toEqual({
      count: 8,
      ids: [0, 1, 2, 3, 4, 7],
      workers: [
        [0, 1],
        [2, 3],
        [4, 7],
      ],
    });
    const all = planShards({ count: 'auto', ids: undefined, perProcess: 1 }, 3);
    expect(all.ok && all.plan.workers).toEqual([[0], [1], [2]]);
  });

  it('checks SHARD_IDS against a count Discord recommended', () => {
    expect(planShards({ count: 'auto', ids: '0-3', perProcess: 1 }, 2)).toMatchObject({
      ok: false,
      message: 'SHARD_IDS names shard 3, but SHARD_COUNT is 2 (shards 0 to 1).',
    });
  });

  it('stays one process only with one shard in all and SHARD_IDS unset', () => {
    const single = { count: 1, ids: undefined, perProcess: 1 } as const;
    const one = planShards(single, 1);
    expect(one.ok && isSingleProcess(single, one.plan)).toBe(true);
    const named = { count: 1, ids: '0', perProcess: 1 } as const;
    const supervised = planShards(named, 1);
    expect(supervised.ok && isSingleProcess(named, supervised.plan)).toBe(false);
  });

  it('writes shard lists as ranges', () => {
    expect(describeShards([0, 1, 2, 3, 5, 7, 8])).toBe('0-3,5,7-8');
    expect(describeShards([4])).toBe('4');
  });
});
