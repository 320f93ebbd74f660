import type { Result } from '../lib/result.ts';

// Which shards this machine runs and how they are grouped into worker processes. Discord assigns each
// guild to shard (guild_id >> 22) % shard_count; the operator says how many shards there are in all
// (SHARD_COUNT), which of them this machine holds (SHARD_IDS) and how many each worker process holds
// (SHARDS_PER_PROCESS).

/** Discord's own ceiling is far lower in practice; this only catches typos such as an extra zero. */
export const MAX_SHARD_COUNT = 10_000;

export interface ShardingRequest {
  /** 'auto': Discord's recommendation (GET /gateway/bot). */
  count: number | 'auto';
  /** The shard ids as written (list and/or ranges), undefined for all of them. */
  ids: string | undefined;
  perProcess: number;
}

export interface ShardPlan {
  count: number;
  /** The shards this machine runs, ascending. */
  ids: number[];
  /** The shards of each worker process, in order. */
  workers: number[][];
}

/** The shard a guild belongs to, as Discord computes it. */
export function shardOfGuild(guildId: string, count: number): number {
  return Number((BigInt(guildId) >> 22n) % BigInt(count));
}

/** "0-3,5": ids as ranges, for logs and start-up lines. */
export function describeShards(ids: readonly number[]): string {
  const parts: string[] = [];
  for (let start = 0; start < ids.length;) {
    let end = start;
    while (end + 1 < ids.length && ids[end + 1] === ids[end]! + 1) end++;
    parts.push(end === start ? `${ids[start]}` : `${ids[start]}-${ids[end]}`);
    start = end + 1;
  }
  return parts.join(',');
}

/** Parses "0-3", "0,2,5" or "0-3,8" into ascending distinct ids below `count`. */
export function parseShardIds(text: string, count: number): Result<{ ids: number[] }> {
  const ids = new Set<number>();
  for (const part of text.split(',').map((piece) => piece.trim())) {
    const range = /^(\d+)(?:\s*-\s*(\d+))?$/.exec(part);
    if (!range) return { ok: false, message: `SHARD_IDS must list shard ids and ranges such as 0-3 or 0,2,5 (got "${text}").` };
    const first = Number(range[1]);
    const last = range[2] === undefined ? first : Number(range[2]);
    if (last < first) return { ok: false, message: `SHARD_IDS has a range that runs backwards: "${part}".` };
    if (last >= count)
      return { ok: false, message: `SHARD_IDS names shard ${last}, but SHARD_COUNT is ${count} (shards 0 to ${count - 1}).` };
    for (let id = first; id <= last; id++) ids.add(id);
  }
  return { ok: true, ids: [...ids].sort((a, b) => a - b) };
}

/** The plan for a known shard count. */
export function planShards(request: ShardingRequest, count: number): Result<{ plan: ShardPlan }> {
  let ids = Array.from({ length: count }, (_, id) => id);
  if (request.ids !== undefined) {
    const parsed = parseShardIds(request.ids, count);
    if (!parsed.ok) return parsed;
    ids = parsed.ids;
  }
  const workers: number[][] = [];
  for (let index = 0; index < ids.length; index += request.perProcess) workers.push(ids.slice(index, index + request.perProcess));
  return { ok: true, plan: { count, ids, workers } };
}

/**
 * One process, exactly as before sharding: one shard in all and SHARD_IDS unset. Anything else runs a
 * supervisor with worker processes (also a single worker holding a subset: another machine has the rest).
 */
export function isSingleProcess(request: ShardingRequest, plan: ShardPlan): boolean {
  return plan.count === 1 && request.ids === undefined;
}
