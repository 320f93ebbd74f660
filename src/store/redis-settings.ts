import type { RedisClientType } from '@keyv/redis';
import type { Logger } from '../lib/log.ts';
import { withinDeadline } from './interface.ts';

// What the bot needs of its Redis, checked once at start: that it keeps the records across a restart, and
// that it never drops one to make room. Either failing loses tasks silently (a card that says
// "Generating..." for good, a budget that forgets what was spent), so the operator is told at start, naming
// the setting. The check never fails the start: the bot runs as well as this Redis lets it.

/** The settings the check reads, as CONFIG GET answers them. */
export interface RedisSettings {
  /** Bytes; 0 is no limit. */
  maxmemory: number;
  maxmemoryPolicy: string;
  appendonly: boolean;
  /** The RDB snapshot schedule ("3600 1 300 100"); empty: no snapshots. */
  save: string;
}

/** A setting that would lose the bot's records, with what to set instead. */
export interface SettingProblem {
  message: string;
  fields: Record<string, string | number>;
}

const SETTINGS = ['maxmemory', 'maxmemory-policy', 'appendonly', 'save'] as const;

/**
 * What in `settings` would lose records. Eviction: every policy but noeviction may drop the bot's keys, the
 * volatile-* ones included, since the bot gives many of its records a ttl (usage records, markers, tasks). A
 * policy only acts at `maxmemory`, so with no limit (0) nothing is evicted and nothing is said: a warning
 * about a setting that does nothing teaches operators to skip warnings. Persistence: AOF or an RDB schedule
 * each keep the records across a restart (RDB loses the writes since the last snapshot).
 */
export function settingProblems(settings: RedisSettings): SettingProblem[] {
  const problems: SettingProblem[] = [];
  if (settings.maxmemory > 0 && settings.maxmemoryPolicy !== 'noeviction') {
    problems.push({
      message: `Redis may evict the bot's records: maxmemory-policy is ${settings.maxmemoryPolicy} with a maxmemory of ${settings.maxmemory} bytes; set maxmemory-policy noeviction (README, "Redis")`,
      fields: { setting: 'maxmemory-policy', value: settings.maxmemoryPolicy, maxmemory: settings.maxmemory },
    });
  }
  if (!settings.appendonly && settings.save.trim() === '') {
    problems.push({
      message: `Redis does not persist the bot's records: appendonly is no and save is empty, so a restart of Redis loses every task and setting; set appendonly yes (README, "Redis")`,
      fields: { setting: 'appendonly', value: 'no', save: '' },
    });
  }
  return problems;
}

/** Reads the settings; throws when Redis refuses CONFIG or does not answer within `deadlineMs`. */
async function readSettings(client: RedisClientType, deadlineMs: number): Promise<RedisSettings> {
  // One parameter a call: CONFIG GET takes several only from Redis 7 on. Sent together, one round trip.
  const replies = await withinDeadline(Promise.all(SETTINGS.map((name) => client.configGet(name))), deadlineMs, 'read its settings');
  const values = new Map<string, string>();
  for (const reply of replies) for (const [name, value] of Object.entries(reply)) values.set(name, String(value));
  const value = (name: (typeof SETTINGS)[number]): string => {
    const found = values.get(name);
    if (found === undefined) throw new Error(`CONFIG GET ${name} answered nothing`);
    return found;
  };
  const maxmemory = Number(value('maxmemory'));
  if (!Number.isFinite(maxmemory)) throw new Error(`maxmemory is not a number: ${value('maxmemory')}`);
  return { maxmemory, maxmemoryPolicy: value('maxmemory-policy'), appendonly: value('appendonly') === 'yes', save: value('save') };
}

/** Logs a warning for each setting that would lose records; says so, without failing, when it cannot tell. */
export async function checkRedisSettings(client: RedisClientType, log: Logger, deadlineMs: number): Promise<void> {
  let settings: RedisSettings;
  try {
    settings = await readSettings(client, deadlineMs);
  } catch (error) {
    // A managed Redis may refuse CONFIG (renamed or disabled): nothing is known to be wrong, and a warning
    // the operator cannot silence would come at every start, so this is information.
    log.info(
      'could not check Redis\'s persistence and eviction settings; the bot needs appendonly yes (or a save schedule) and maxmemory-policy noeviction (README, "Redis")',
      { error },
    );
    return;
  }
  for (const problem of settingProblems(settings)) log.warn(problem.message, problem.fields);
}
