import { KeyedLock } from '../keyed-lock.ts';
import { isRecord } from '../json.ts';
import { USD_TICKS } from '../gateway/spec.ts';
import type { Collection, Store } from '../store.ts';

// What each server used, per UTC day and per member: videos started and what the gateway charged.
// One record per server per day keeps reads O(members); a cost is counted once per task, however often
// a restart makes the bot see the task finish.

export interface UsageCount {
  tasks: number;
  costTicks: number;
}

export interface DayUsage {
  users: Record<string, UsageCount>;
}

/** Long enough to sum the current month on its last day. */
const KEEP_MS = 40 * 24 * 3600_000;
const REPORT_ROWS = 20;

export function dayKey(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
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

function add(into: Record<string, UsageCount>, userId: string, count: UsageCount): void {
  const total = (into[userId] ??= { tasks: 0, costTicks: 0 });
  total.tasks += count.tasks;
  total.costTicks += count.costTicks;
}

export class UsageLedger {
  readonly #days: Collection<DayUsage>;
  readonly #costed: Collection<true>;
  /** Read-modify-write of a day record must not interleave with another one in this process. */
  readonly #lock = new KeyedLock();

  constructor(store: Store) {
    this.#days = store.collection('usage_days', parseDayUsage);
    this.#costed = store.collection('usage_costed_tasks', parseTrue);
  }

  /** `change` says whether it changed anything worth writing. */
  #update(guildId: string, at: number, change: (usage: DayUsage) => boolean): Promise<void> {
    const key = `${guildId}:${dayKey(at)}`;
    return this.#lock.run(key, async () => {
      const usage = (await this.#days.get(key)) ?? { users: {} };
      if (change(usage)) await this.#days.set(key, usage, KEEP_MS);
    });
  }

  recordSubmission(guildId: string, userId: string, at: number): Promise<void> {
    return this.#update(guildId, at, (usage) => {
      add(usage.users, userId, { tasks: 1, costTicks: 0 });
      return true;
    });
  }

  /** The gateway refused the task: it does not count against today's limits. */
  releaseSubmission(guildId: string, userId: string, at: number): Promise<void> {
    return this.#update(guildId, at, (usage) => {
      const count = usage.users[userId];
      if (!count || count.tasks === 0) return false;
      count.tasks--;
      return true;
    });
  }

  /** Adds a task's cost to the day it was started; a second report of the same task changes nothing. */
  recordCost(guildId: string, userId: string, taskId: string, costTicks: number, at: number): Promise<void> {
    const key = `${guildId}:${dayKey(at)}`;
    // A task always maps to one day record, so checking and marking under that record's lock keeps two
    // reports racing in this process from both adding.
    return this.#lock.run(key, async () => {
      if (await this.#costed.get(taskId)) return;
      const usage = (await this.#days.get(key)) ?? { users: {} };
      add(usage.users, userId, { tasks: 0, costTicks });
      await this.#days.set(key, usage, KEEP_MS);
      await this.#costed.set(taskId, true, KEEP_MS);
    });
  }

  async day(guildId: string, at: number): Promise<DayUsage> {
    return (await this.#days.get(`${guildId}:${dayKey(at)}`)) ?? { users: {} };
  }

  /** The days of the month of `at` up to that day (UTC), summed per member. */
  async month(guildId: string, at: number): Promise<Record<string, UsageCount>> {
    const date = new Date(at);
    const days = Array.from({ length: date.getUTCDate() }, (_, index) => Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), index + 1));
    const totals: Record<string, UsageCount> = {};
    for (const usage of await Promise.all(days.map((day) => this.day(guildId, day)))) {
      for (const [userId, count] of Object.entries(usage.users)) add(totals, userId, count);
    }
    return totals;
  }

  async report(guildId: string, now: number): Promise<UsageReport> {
    const [today, month] = await Promise.all([this.day(guildId, now), this.month(guildId, now)]);
    return { now, today: today.users, month };
  }
}

export interface UsageReport {
  now: number;
  today: Record<string, UsageCount>;
  month: Record<string, UsageCount>;
}

function section(title: string, counts: Record<string, UsageCount>): string {
  const entries = Object.entries(counts).sort(([, a], [, b]) => b.costTicks - a.costTicks || b.tasks - a.tasks);
  const total: UsageCount = { tasks: 0, costTicks: 0 };
  for (const [, count] of entries) {
    total.tasks += count.tasks;
    total.costTicks += count.costTicks;
  }
  const rows = entries.slice(0, REPORT_ROWS).map(([userId, count]) => `<@${userId}>: ${count.tasks} videos, ${usd(count.costTicks)}`);
  if (entries.length > REPORT_ROWS) rows.push(`…and ${entries.length - REPORT_ROWS} more members`);
  return [`**${title}**: ${total.tasks} videos, ${usd(total.costTicks)}`, ...(rows.length > 0 ? rows : ['nothing yet'])].join('\n');
}

/** `/video usage`: today's and this month's videos and cost per member, biggest spenders first. */
export function formatUsageReport(report: UsageReport): string {
  const today = dayKey(report.now);
  return `${section(`Today (${today} UTC)`, report.today)}\n\n${section(`This month (${today.slice(0, 7)})`, report.month)}`;
}
