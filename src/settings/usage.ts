import { KeyedLock } from '../lib/keyed-lock.ts';
import { isRecord, readNumber } from '../lib/json.ts';
import { USD_TICKS } from '../gateway/spec.ts';
import type { Collection, Store } from '../store.ts';
import { videos } from './limits.ts';

// What each server used, per UTC day and per member: videos started and what the gateway charged.
// One record per server per day keeps reads O(members); a cost is counted once per task, however often
// a restart makes the bot see the task finish. The spec does not promise a cost in every query answer
// (the compatibility layer's other fields are "not shown"), so a finished video without one is counted
// apart: adding it as $0.00 would present a guess as the real cost.

export interface UsageCount {
  tasks: number;
  costTicks: number;
  /** Finished videos whose cost the gateway did not report. */
  costUnreported: number;
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
    const tasks = readNumber(value, 'tasks');
    const costTicks = readNumber(value, 'costTicks');
    // Records written before unreported costs were counted have no such field: none were counted then.
    if (tasks !== undefined && costTicks !== undefined) users[userId] = { tasks, costTicks, costUnreported: readNumber(value, 'costUnreported') ?? 0 };
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

function noUsage(): UsageCount {
  return { tasks: 0, costTicks: 0, costUnreported: 0 };
}

function addTo(total: UsageCount, count: UsageCount): void {
  total.tasks += count.tasks;
  total.costTicks += count.costTicks;
  total.costUnreported += count.costUnreported;
}

function add(into: Record<string, UsageCount>, userId: string, count: UsageCount): void {
  addTo((into[userId] ??= noUsage()), count);
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
      add(usage.users, userId, { ...noUsage(), tasks: 1 });
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

  /**
   * Adds a finished task's cost to the day it was started, or counts it as unreported (`undefined`); a
   * second report of the same task changes nothing.
   */
  recordCost(guildId: string, userId: string, taskId: string, costTicks: number | undefined, at: number): Promise<void> {
    const key = `${guildId}:${dayKey(at)}`;
    // A task always maps to one day record, so checking and marking under that record's lock keeps two
    // reports racing in this process from both adding.
    return this.#lock.run(key, async () => {
      if (await this.#costed.get(taskId)) return;
      const usage = (await this.#days.get(key)) ?? { users: {} };
      add(usage.users, userId, costTicks === undefined ? { ...noUsage(), costUnreported: 1 } : { ...noUsage(), costTicks });
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

/** "3 videos, $0.40 + 2 without a reported cost": what is known, and how much is not. */
function describeUsage(count: UsageCount): string {
  const made = videos(count.tasks);
  if (count.costUnreported === 0) return `${made}, ${usd(count.costTicks)}`;
  const unreported = `${count.costUnreported} without a reported cost`;
  return count.costTicks === 0 ? `${made}, ${unreported}` : `${made}, ${usd(count.costTicks)} + ${unreported}`;
}

function section(title: string, counts: Record<string, UsageCount>): string {
  const entries = Object.entries(counts).sort(([, a], [, b]) => b.costTicks - a.costTicks || b.tasks - a.tasks);
  const total = noUsage();
  for (const [, count] of entries) addTo(total, count);
  const rows = entries.slice(0, REPORT_ROWS).map(([userId, count]) => `<@${userId}>: ${describeUsage(count)}`);
  if (entries.length > REPORT_ROWS) rows.push(`…and ${entries.length - REPORT_ROWS} more members`);
  return [`**${title}**: ${describeUsage(total)}`, ...(rows.length > 0 ? rows : ['nothing yet'])].join('\n');
}

/** `/video usage`: today's and this month's videos and cost per member, biggest spenders first. */
export function formatUsageReport(report: UsageReport): string {
  const today = dayKey(report.now);
  return `${section(`Today (${today} UTC)`, report.today)}\n\n${section(`This month (${today.slice(0, 7)})`, report.month)}`;
}
