import { randomInt } from 'node:crypto';

// Realistic ids: Discord snowflakes are a millisecond timestamp since 2015 shifted left 22 bits, then a
// worker and process id (10 bits), then a counter. discord.js routes rate-limit buckets by \d{17,19}, so
// toy ids like "1" would not do. Each stand-in process takes a random worker and process id, as Discord's
// processes have their own: two test processes that make ids in the same millisecond (an application id
// each) must not make the same one, or bots that share a store would take each other's records for theirs.

const DISCORD_EPOCH = 1_420_070_400_000n;
const TIMESTAMP_SHIFT = 22n;
const PROCESS_ID = BigInt(randomInt(0, 1024)) << 12n;
let increment = 0n;

export function snowflake(at = Date.now()): string {
  increment = (increment + 1n) & 0xfffn;
  return (((BigInt(at) - DISCORD_EPOCH) << TIMESTAMP_SHIFT) | PROCESS_ID | increment).toString();
}

/** The shard whose session receives a guild's events: Discord's `(guild_id >> 22) % num_shards`. */
export function shardOfGuild(guildId: string, shardCount: number): number {
  return Number((BigInt(guildId) >> TIMESTAMP_SHIFT) % BigInt(shardCount));
}

/**
 * A snowflake that lands on `shardId` of `shardCount`: the shard depends only on the timestamp, so the
 * id is made at the latest millisecond no later than `at` whose offset from Discord's epoch is
 * `shardId` modulo `shardCount` (at most `shardCount - 1` ms in the past).
 */
export function snowflakeOnShard(shardId: number, shardCount: number, at = Date.now()): string {
  if (!Number.isInteger(shardCount) || shardCount < 1) throw new Error(`a shard count is a whole number from 1, not ${shardCount}`);
  if (!Number.isInteger(shardId) || shardId < 0 || shardId >= shardCount)
    throw new Error(`shard ${shardId} is not one of 0 to ${shardCount - 1}`);
  const count = BigInt(shardCount);
  const since = BigInt(at) - DISCORD_EPOCH;
  const back = (((since - BigInt(shardId)) % count) + count) % count;
  return snowflake(Number(BigInt(at) - back));
}
