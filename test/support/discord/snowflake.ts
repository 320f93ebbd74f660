// Realistic ids: Discord snowflakes are a millisecond timestamp since 2015 shifted left 22 bits, plus a
// counter. discord.js routes rate-limit buckets by \d{17,19}, so toy ids like "1" would not do.

const DISCORD_EPOCH = 1_420_070_400_000n;
let increment = 0n;

export function snowflake(at = Date.now()): string {
  increment = (increment + 1n) & 0xfffn;
  return (((BigInt(at) - DISCORD_EPOCH) << 22n) | increment).toString();
}
