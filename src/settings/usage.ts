import { isRecord } from '../gateway/parse.ts';
import { USD_TICKS } from '../gateway/spec.ts';
import type { Collection, Store } from '../store.ts';

// What each server used, per UTC day and per member: tasks submitted and what the gateway charged.
// One record per server per day keeps reads O(members); a cost is counted once per task, however often
// a restart makes the bot see the task finish.

export interface UsageCount {
  tasks: number;
  costTicks: number;
}

export interface DayUsage {
  users: Record<string, UsageCount>;
}

const KEEP_DAYS_MS = 40 * 24 * 3600_000;

export function dayKey(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

/** The next UTC midnight after `at`: when daily limits start over. */
export function nextUtcMidnight(at: number): number {
  const date = new Date(at);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1);
}

function parseDayUsage(raw: unknown): DayUsage {
  if (!isRecord(raw) || !isRecord(raw.users)) throw new Error('day usage must have users');
  const users: Record<string, UsageCount> = {};
  for (const [userId, value] of Object.entries(raw.users)) {
    if (isRecord(value) && typeof value.tasks === 'number' && typeof value.costTicks === 'number') users[userId] = { tasks: value.tasks, costTicks: value.costTicks };
  }
  return { users };
}

function parseTrue(raw: unknown): true {
  if (raw !== true) throw new Error('expected true');
  return true;
}

export function usd(ticks: number): string {
  return `$${(ticks / USD_TICKS).toFixed(2)}`;
}

export class UsageLedger {
  readonly #days: Collection<DayUsage>;
  readonly #costed: Collection<true>;
  /** Serialises read-modify-write per day record in this process. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(store: Store) {
    this.#days = store.collection('usage_days', parseDayUsage);
    this.#costed = store.collection('usage_costed_tasks', parseTrue);
  }

  #update(guildId: string, at: number, change: (usage: DayUsage) => void): Promise<void> {
    const run = this.#queue.then(async () => {
      const key = `${guildId}:${dayKey(at)}`;
      const usage = (await this.#days.get(key)) ?? { users: {} };
      change(usage);
      await this.#days.set(key, usage, KEEP_DAYS_MS);
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  recordSubmission(guildId: string, userId: string, at: number): Promise<void> {
    return this.#update(guildId, at, (usage) => {
      const count = (usage.users[userId] ??= { tasks: 0, costTicks: 0 });
      count.tasks++;
    });
  }

  releaseSubmission(guildId: string, userId: string, at: number): Promise<void> {
    return this.#update(guildId, at, (usage) => {
      const count = usage.users[userId];
      if (count && count.tasks > 0) count.tasks--;
    });
  }

  async recordCost(guildId: string, userId: string, taskId: string, costTicks: number, at: number): Promise<void> {
    if (await this.#costed.get(taskId)) return;
    await this.#update(guildId, at, (usage) => {
      const count = (usage.users[userId] ??= { tasks: 0, costTicks: 0 });
      count.costTicks += costTicks;
    });
    await this.#costed.set(taskId, true, KEEP_DAYS_MS);
  }

  async day(guildId: string, at: number): Promise<DayUsage> {
    return (await this.#days.get(`${guildId}:${dayKey(at)}`)) ?? { users: {} };
  }

  /** Every day of the month of `at` up to that day, summed per member. */
  async month(guildId: string, at: number): Promise<Record<string, UsageCount>> {
    const date = new Date(at);
    const totals: Record<string, UsageCount> = {};
    for (let day = 1; day <= date.getUTCDate(); day++) {
      const usage = await this.day(guildId, Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), day));
      for (const [userId, count] of Object.entries(usage.users)) {
        const total = (totals[userId] ??= { tasks: 0, costTicks: 0 });
        total.tasks += count.tasks;
        total.costTicks += count.costTicks;
      }
    }
    return totals;
  }
}
