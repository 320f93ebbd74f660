import { isRecord, readNumber } from '../lib/json.ts';
import type { Logger } from '../lib/log.ts';
import { dayKey } from '../lib/day-key.ts';
import { formatCost } from '../wording/cost.ts';
import { parseMarker, type Collection, type Store } from '../store/index.ts';
import type { GuildSettings } from './guild-settings.ts';
import { evaluateDailyLimits, videos, type LimitVerdict } from './limits.ts';

// What each server used, per UTC day and per member: videos started and what the gateway charged.
// One record per server per day keeps reads O(members); a cost is counted once per task, however often
// a restart makes the bot see the task finish. The spec does not promise a cost in every query answer
// (the compatibility layer's other fields are "not shown"), so a finished video without one is counted
// apart: adding it as $0.00 would present a guess as the real cost.
// Every change of a day record is one atomic step on the store (Collection.update), so counts stay exact
// when several workers sharing the store write the same record at once (a guild handed over between them).

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

function parseDayUsage(raw: unknown): DayUsage {
  if (!isRecord(raw) || !isRecord(raw.users)) throw new Error('day usage must have users');
  const users: Record<string, UsageCount> = {};
  for (const [userId, value] of Object.entries(raw.users)) {
    const tasks = readNumber(value, 'tasks');
    const costTicks = readNumber(value, 'costTicks');
    // Records written before unreported costs were counted have no such field: none were counted then.
    if (tasks !== undefined && costTicks !== undefined)
      users[userId] = { tasks, costTicks, costUnreported: readNumber(value, 'costUnreported') ?? 0 };
  }
  return { users };
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

function daySums(usage: DayUsage, userId: string): { userTasks: number; serverTasks: number } {
  return {
    userTasks: usage.users[userId]?.tasks ?? 0,
    serverTasks: Object.values(usage.users).reduce((sum, count) => sum + count.tasks, 0),
  };
}

export class UsageLedger {
  readonly #days: Collection<DayUsage>;
  readonly #costed: Collection<true>;
  readonly #log: Logger;

  constructor(store: Store, log: Logger) {
    this.#days = store.collection('usage_days', parseDayUsage);
    this.#costed = store.collection('usage_costed_tasks', parseMarker);
    this.#log = log;
  }

  /** `change` modifies the day's record and says whether it changed anything worth writing; it may run more than once. */
  async #update(guildId: string, at: number, change: (usage: DayUsage) => boolean): Promise<void> {
    await this.#days.update(
      `${guildId}:${dayKey(at)}`,
      (stored) => {
        const usage = stored ?? { users: {} };
        return change(usage) ? usage : undefined;
      },
      KEEP_MS,
    );
  }

  /**
   * Counts a task on the day of `at` unless the server's daily limits refuse it, checking and counting in
   * one step: workers admitting at once never pass a limit together.
   */
  async admitSubmission(guildId: string, userId: string, at: number, limits: GuildSettings['limits']): Promise<LimitVerdict> {
    let verdict: LimitVerdict = { ok: true };
    await this.#update(guildId, at, (usage) => {
      const { userTasks, serverTasks } = daySums(usage, userId);
      // Decided again on each attempt: the last one is what the record says.
      verdict = evaluateDailyLimits(limits, { userTasksToday: userTasks, serverTasksToday: serverTasks, now: at });
      if (!verdict.ok) return false;
      add(usage.users, userId, { ...noUsage(), tasks: 1 });
      return true;
    });
    return verdict;
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
   * second report of the same task changes nothing, from this worker or another.
   */
  async recordCost(guildId: string, userId: string, taskId: string, costTicks: number | undefined, at: number): Promise<void> {
    // The task is claimed first (set if absent): of two reports at once, one counts it. A worker that dies
    // between claim and count leaves it uncounted, which errs on the side of not charging twice.
    const { created } = await this.#costed.setIfAbsent(taskId, true, KEEP_MS);
    if (!created) return;
    try {
      await this.#update(guildId, at, (usage) => {
        add(usage.users, userId, costTicks === undefined ? { ...noUsage(), costUnreported: 1 } : { ...noUsage(), costTicks });
        return true;
      });
    } catch (error) {
      // Not counted: the claim goes too, so that the next report of the task counts it.
      await this.#costed.delete(taskId).catch((undoError: unknown) => {
        this.#log.warn('a task cost could not be counted nor its claim taken back; it stays uncounted', { task: taskId, error: undoError });
      });
      throw error;
    }
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
  if (count.costUnreported === 0) return `${made}, ${formatCost(count.costTicks)}`;
  const unreported = `${count.costUnreported} without a reported cost`;
  return count.costTicks === 0 ? `${made}, ${unreported}` : `${made}, ${formatCost(count.costTicks)} + ${unreported}`;
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
