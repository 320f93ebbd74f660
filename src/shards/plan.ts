import type { Result } from '../lib/result.ts';

// Which shards this machine runs and how they are grouped into worker processes. Discord assigns each
// guild to shard (guild_id >> 22) % shard_count; the operator says how many shards there are in all
// (SHARD_COUNT), which of them this machine holds (SHARD_IDS) and how many each worker process holds
// (SHARDS_PER_PROCESS). SHARD_IDS=auto-ordinal derives a machine's shards from its ordinal (a Kubernetes
// StatefulSet pod's index), so that one pod template serves every machine.

/** Discord's own ceiling is far lower in practice; this only catches typos such as an extra zero. */
export const MAX_SHARD_COUNT = 10_000;

/** The value of SHARD_IDS that takes this machine's shards from its ordinal. */
export const AUTO_ORDINAL = 'auto-ordinal';

/** SHARD_IDS=auto-ordinal: machine N holds the N-th block of SHARDS_PER_MACHINE shards. */
export interface MachineOrdinal {
  ordinal: number;
  perMachine: number;
  /** Where the ordinal was read, for messages: `POD_INDEX=3` or `host name "bot-3"`. */
  source: string;
}

export interface ShardingRequest {
  /** 'auto': Discord's recommendation (GET /gateway/bot). */
  count: number | 'auto';
  /** The shard ids as written (list and/or ranges), this machine's ordinal, or undefined for all of them. */
  ids: string | MachineOrdinal | undefined;
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

/**
 * The machine's ordinal: POD_INDEX when set (Kubernetes gives a StatefulSet pod its index through the
 * downward API), else the number the host name ends in (a StatefulSet pod's host name is `<set>-<index>`).
 */
export function machineOrdinal(podIndex: string | undefined, hostName: string): Result<{ ordinal: number; source: string }> {
  if (podIndex !== undefined) {
    const ordinal = /^\d+$/.test(podIndex) ? Number(podIndex) : Number.NaN;
    if (!Number.isSafeInteger(ordinal))
      return { ok: false, message: `POD_INDEX must be the machine's ordinal, a whole number from 0 (got "${podIndex}").` };
    return { ok: true, ordinal, source: `POD_INDEX=${ordinal}` };
  }
  const trailing = /(\d+)$/.exec(hostName)?.[1];
  const ordinal = trailing === undefined ? Number.NaN : Number(trailing);
  if (!Number.isSafeInteger(ordinal)) {
    return {
      ok: false,
      message:
        `SHARD_IDS=${AUTO_ORDINAL} takes the machine's ordinal from POD_INDEX, or else from the number its host name ends in (bot-3: 3), ` +
        `but POD_INDEX is unset and the host name "${hostName}" ends in no number. Set POD_INDEX, or list the shards in SHARD_IDS.`,
    };
  }
  return { ok: true, ordinal, source: `host name "${hostName}"` };
}

/** The block of shards machine `ordinal` holds: [ordinal * perMachine, ordinal * perMachine + perMachine - 1], all below `count`. */
export function ordinalShards(machine: MachineOrdinal, count: number): Result<{ ids: number[] }> {
  const first = machine.ordinal * machine.perMachine;
  const last = first + machine.perMachine - 1;
  if (last >= count) {
    const fitting = Math.floor(count / machine.perMachine);
    const advice =
      fitting === 0
        ? 'SHARDS_PER_MACHINE is more than SHARD_COUNT'
        : `${fitting === 1 ? 'only ordinal 0 fits' : `ordinals 0 to ${fitting - 1} fit`}: run ${fitting} machine${fitting === 1 ? '' : 's'} or raise SHARD_COUNT`;
    return {
      ok: false,
      message:
        `SHARD_IDS=${AUTO_ORDINAL} gives machine ${machine.ordinal} (${machine.source}) shards ${first}-${last} with SHARDS_PER_MACHINE=${machine.perMachine}, ` +
        `but SHARD_COUNT is ${count} (shards 0 to ${count - 1}): ${advice}.`,
    };
  }
  return { ok: true, ids: Array.from({ length: machine.perMachine }, (_, index) => first + index) };
}

/** The plan for a known shard count. */
export function planShards(request: ShardingRequest, count: number): Result<{ plan: ShardPlan }> {
  let ids = Array.from({ length: count }, (_, id) => id);
  if (request.ids !== undefined) {
    const chosen = typeof request.ids === 'string' ? parseShardIds(request.ids, count) : ordinalShards(request.ids, count);
    if (!chosen.ok) return chosen;
    ids = chosen.ids;
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
