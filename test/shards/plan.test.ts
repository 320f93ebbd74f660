import { describe, expect, it } from 'vitest';
import { describeShards, isSingleProcess, machineOrdinal, planShards, shardOfGuild } from '../../src/shards/plan.ts';

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

  it('gives a machine the block of shards its ordinal names (SHARD_IDS=auto-ordinal), grouped into workers as any', () => {
    const pod3 = { ordinal: 3, perMachine: 2, source: 'POD_INDEX=3' };
    const planned = planShards({ count: 8, ids: pod3, perProcess: 1 }, 8);
    expect(planned.ok && planned.plan).toEqual({ count: 8, ids: [6, 7], workers: [[6], [7]] });
    const first = planShards({ count: 'auto', ids: { ordinal: 0, perMachine: 3, source: 'POD_INDEX=0' }, perProcess: 3 }, 9);
    expect(first.ok && first.plan.workers).toEqual([[0, 1, 2]]);
  });

  it('refuses an ordinal past the shard count Discord recommended, naming SHARD_COUNT, SHARDS_PER_MACHINE and the ordinal', () => {
    expect(planShards({ count: 'auto', ids: { ordinal: 4, perMachine: 2, source: 'host name "bot-4"' }, perProcess: 1 }, 8)).toEqual({
      ok: false,
      message:
        'SHARD_IDS=auto-ordinal gives machine 4 (host name "bot-4") shards 8-9 with SHARDS_PER_MACHINE=2, but SHARD_COUNT is 8 (shards 0 to 7): ordinals 0 to 3 fit: run 4 machines or raise SHARD_COUNT.',
    });
    // A block that runs past the end is refused whole rather than cut short.
    expect(planShards({ count: 'auto', ids: { ordinal: 2, perMachine: 3, source: 'POD_INDEX=2' }, perProcess: 1 }, 8)).toMatchObject({
      ok: false,
      message: expect.stringContaining('shards 6-8 with SHARDS_PER_MACHINE=3, but SHARD_COUNT is 8 (shards 0 to 7): ordinals 0 to 1 fit'),
    });
    expect(planShards({ count: 'auto', ids: { ordinal: 0, perMachine: 4, source: 'POD_INDEX=0' }, perProcess: 1 }, 2)).toMatchObject({
      ok: false,
      message: expect.stringContaining('SHARDS_PER_MACHINE is more than SHARD_COUNT'),
    });
  });

  it("reads the machine's ordinal from POD_INDEX, else from the number its host name ends in", () => {
    expect(machineOrdinal('3', 'laptop')).toEqual({ ok: true, ordinal: 3, source: 'POD_INDEX=3' });
    expect(machineOrdinal(undefined, 'bot-12')).toEqual({ ok: true, ordinal: 12, source: 'host name "bot-12"' });
    expect(machineOrdinal('0', 'bot-12')).toMatchObject({ ok: true, ordinal: 0 });
    expect(machineOrdinal(undefined, 'laptop')).toEqual({
      ok: false,
      message:
        'SHARD_IDS=auto-ordinal takes the machine\'s ordinal from POD_INDEX, or else from the number its host name ends in (bot-3: 3), but POD_INDEX is unset and the host name "laptop" ends in no number. Set POD_INDEX, or list the shards in SHARD_IDS.',
    });
    for (const written of ['-1', 'three', '1.5', '99999999999999999999'])
      expect(machineOrdinal(written, 'bot-1')).toEqual({
        ok: false,
        message: `POD_INDEX must be the machine's ordinal, a whole number from 0 (got "${written}").`,
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
