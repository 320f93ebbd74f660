import { z } from 'zod';
import { isRecord, ownValue, readNumber } from '../lib/json.ts';
import type { Logger } from '../lib/log.ts';
import { dayKey } from '../lib/day-key.ts';
import type { Outcome } from '../wording/notice.ts';
import { ownKeyedTable, parseMarker, versionedRecord, type Collection, type Store } from '../store/index.ts';
import { checkBudgets, type Spent } from './budgets.ts';
import type { Budgets, GuildSettings } from './guild-settings.ts';
import { evaluateDailyLimits, type LimitVerdict } from './limits.ts';

// What each server used and spent, per UTC day and per member: videos started, what they cost, and
// voice minutes. One record per server per day keeps reads O(members); one small record per server per
// month holds the server's spend per day (the monthly budget and the 30-day chart read it, not 31 days).
// A video's estimate is reserved when it is submitted, in the same atomic step as the limits and
// budgets are checked, so two members cannot both spend the last dollar; its real cost replaces the
// reservation once per task, however often a restart makes the bot see it finish. A finished video
// whose cost the gateway did not report is counted at its estimate and marked as estimated: adding it
// as $0.00 would present a guess as the real cost. Every change is one atomic step on the store
// (Collection.update), so counts stay exact with several workers sharing the store.

export interface UsageCount {
  tasks: number;
  /** What the gateway reported for finished videos. */
  costUsdTicks: number;
  /** Finished videos whose cost the gateway did not report... */
  costUnreported: number;
  /** ...and their estimates, counted in their place. */
  estimatedUsdTicks: number;
  /** Estimates of videos still being made. */
  reservedUsdTicks: number;
  voiceMs: number;
  /** Voice is always an estimate: the gateway reports no realtime cost. */
  voiceUsdTicks: number;
}

/** The version of the usage records (a day's, a month's) this code writes (src/store/versioned.ts). */
const USAGE_VERSION = 2;

export interface DayUsage {
  v: typeof USAGE_VERSION;
  users: Record<string, UsageCount>;
}

/** The server's spend on one day of a month (the month record's entry for it). */
export interface DaySpend {
  videoUsdTicks: number;
  voiceUsdTicks: number;
}

export interface MonthUsage {
  v: typeof USAGE_VERSION;
  /** Keyed by the day of the month, `01`..`31`. */
  days: Record<string, DaySpend>;
  /** Estimates of videos still being made, reserved against a monthly budget. */
  reservedUsdTicks: number;
}

/** How a submitted video's estimate was reserved: what its settlement or release gives back. */
export interface Reservation {
  estimateUsdTicks: number;
  /** Reserved against the month too (only when the server had a monthly budget). */
  month: boolean;
}

/** How a finished task is counted: its reported cost, its estimate (no cost reported), or nothing (refunded). */
export type Settlement = { kind: 'reported'; usdTicks: number } | { kind: 'estimated'; usdTicks: number } | { kind: 'refunded' };

/** Long enough to sum the current month on its last day. */
const KEEP_DAY_MS = 40 * 24 * 3600_000;
/** The chart reads the last 30 days: this month's record and the one before. */
const KEEP_MONTH_MS = 100 * 24 * 3600_000;

const usageCountSchema: z.ZodType<UsageCount> = z.object({
  tasks: z.number(),
  costUsdTicks: z.number(),
  costUnreported: z.number(),
  estimatedUsdTicks: z.number(),
  reservedUsdTicks: z.number(),
  voiceMs: z.number(),
  voiceUsdTicks: z.number(),
});

/** What versions 0 and 1 called a member's counts: amounts as `…Ticks`, now `…UsdTicks` (money, not time). */
const COUNT_FIELDS_BEFORE_V2: Readonly<Record<keyof UsageCount, string>> = {
  tasks: 'tasks',
  costUsdTicks: 'costTicks',
  costUnreported: 'costUnreported',
  estimatedUsdTicks: 'estimatedTicks',
  reservedUsdTicks: 'reservedTicks',
  voiceMs: 'voiceMs',
  voiceUsdTicks: 'voiceTicks',
};

/**
 * Reads a day's usage of any version. Versions 0 and 1 named the amounts `…Ticks`. Version 0 (no `v`,
 * before 2026-11-29): a member's counts written before a count existed have none (nothing of it was
 * counted then: 0); a member without a task count or a cost is left out, as that version's reader left it.
 */
const parseDayUsage = versionedRecord<DayUsage>({
  name: 'day usage',
  version: USAGE_VERSION,
  schema: z.object({ v: z.literal(USAGE_VERSION), users: ownKeyedTable(usageCountSchema) }),
  upgrade: (stored) => {
    if (!isRecord(stored.users)) return stored;
    const users = Object.entries(stored.users).flatMap(([userId, count]) =>
      readNumber(count, 'tasks') === undefined || readNumber(count, 'costTicks') === undefined
        ? []
        : [
            [
              userId,
              Object.fromEntries(Object.entries(COUNT_FIELDS_BEFORE_V2).map(([field, was]) => [field, readNumber(count, was) ?? 0])),
            ] as const,
          ],
    );
    return { ...stored, users: Object.fromEntries(users) };
  },
});

/**
 * Reads a month's spend of any version. Versions 0 and 1 named the amounts `…Ticks` (now `…UsdTicks`);
 * version 0 (no `v`, before 2026-11-29): a spend it has none of is 0.
 */
const parseMonthUsage = versionedRecord<MonthUsage>({
  name: 'month usage',
  version: USAGE_VERSION,
  schema: z.object({
    v: z.literal(USAGE_VERSION),
    days: ownKeyedTable(z.object({ videoUsdTicks: z.number(), voiceUsdTicks: z.number() })),
    reservedUsdTicks: z.number(),
  }),
  upgrade: (stored) => {
    if (!isRecord(stored.days)) return stored;
    const days = Object.entries(stored.days).map(([day, spend]) => [
      day,
      { videoUsdTicks: readNumber(spend, 'videoTicks') ?? 0, voiceUsdTicks: readNumber(spend, 'voiceTicks') ?? 0 },
    ]);
    return { days: Object.fromEntries(days), reservedUsdTicks: readNumber(stored, 'reservedTicks') ?? 0 };
  },
});

function emptyDay(): DayUsage {
  return { v: USAGE_VERSION, users: {} };
}

function emptyMonth(): MonthUsage {
  return { v: USAGE_VERSION, days: {}, reservedUsdTicks: 0 };
}

export function noUsage(): UsageCount {
  return { tasks: 0, costUsdTicks: 0, costUnreported: 0, estimatedUsdTicks: 0, reservedUsdTicks: 0, voiceMs: 0, voiceUsdTicks: 0 };
}

export function addUsage(total: UsageCount, count: UsageCount): void {
  total.tasks += count.tasks;
  total.costUsdTicks += count.costUsdTicks;
  total.costUnreported += count.costUnreported;
  total.estimatedUsdTicks += count.estimatedUsdTicks;
  total.reservedUsdTicks += count.reservedUsdTicks;
  total.voiceMs += count.voiceMs;
  total.voiceUsdTicks += count.voiceUsdTicks;
}

/** What a member's (or a total's) usage spent against budgets: counted, estimated and reserved. */
export function spentUsdTicks(count: UsageCount): number {
  return count.costUsdTicks + count.estimatedUsdTicks + count.reservedUsdTicks + count.voiceUsdTicks;
}

/** A member's counts of the day (none: zeros). */
export function memberUsage(usage: DayUsage, userId: string): UsageCount {
  return ownValue(usage.users, userId) ?? noUsage();
}

/** The entry of `table` under `key`, made when it has none; defined as its own key, so even `__proto__` is only a key. */
function ownSlot<V>(table: Record<string, V>, key: string, make: () => V): V {
  if (!Object.hasOwn(table, key))
    Object.defineProperty(table, key, { value: make(), enumerable: true, writable: true, configurable: true });
  return table[key]!;
}

function userOf(usage: DayUsage, userId: string): UsageCount {
  return ownSlot(usage.users, userId, noUsage);
}

/** Every member's counts added up. */
export function totalUsage(users: Record<string, UsageCount>): UsageCount {
  const total = noUsage();
  for (const count of Object.values(users)) addUsage(total, count);
  return total;
}

function serverTotal(usage: DayUsage): UsageCount {
  return totalUsage(usage.users);
}

/** What the member and the server spent on `day`, against the budgets; the month's spend when it was read. */
export function spentFrom(day: DayUsage, userId: string, serverMonth?: number): Spent {
  return { memberToday: spentUsdTicks(memberUsage(day, userId)), serverToday: spentUsdTicks(serverTotal(day)), serverMonth };
}

function monthSpent(month: MonthUsage | undefined): number {
  if (!month) return 0;
  return Object.values(month.days).reduce((sum, day) => sum + day.videoUsdTicks + day.voiceUsdTicks, month.reservedUsdTicks);
}

function dayOf(month: MonthUsage, at: number): DaySpend {
  return ownSlot(month.days, dayKey(at).slice(8, 10), () => ({ videoUsdTicks: 0, voiceUsdTicks: 0 }));
}

/** `2026-11`: the UTC month of a moment. */
export function monthKey(at: number): string {
  return dayKey(at).slice(0, 7);
}

export type AdmitVerdict = Outcome<{ reservation: Reservation; spent: Spent }, { retryAt?: number }>;

export class UsageLedger {
  readonly #days: Collection<DayUsage>;
  readonly #months: Collection<MonthUsage>;
  readonly #settled: Collection<true>;
  readonly #log: Logger;

  constructor(store: Store, log: Logger) {
    this.#days = store.collection('usage_days', parseDayUsage);
    this.#months = store.collection('usage_months', parseMonthUsage);
    this.#settled = store.collection('usage_costed_tasks', parseMarker);
    this.#log = log;
  }

  /** `change` modifies the day's record and says whether it changed anything worth writing; it may run more than once. */
  async #updateDay(guildId: string, at: number, change: (usage: DayUsage) => boolean): Promise<DayUsage> {
    const written = await this.#days.update(
      `${guildId}:${dayKey(at)}`,
      (stored) => {
        const usage = stored ?? emptyDay();
        return change(usage) ? usage : undefined;
      },
      KEEP_DAY_MS,
    );
    return written ?? emptyDay();
  }

  async #updateMonth(guildId: string, at: number, change: (usage: MonthUsage) => boolean): Promise<MonthUsage> {
    const written = await this.#months.update(
      `${guildId}:${monthKey(at)}`,
      (stored) => {
        const usage = stored ?? emptyMonth();
        return change(usage) ? usage : undefined;
      },
      KEEP_MONTH_MS,
    );
    return written ?? emptyMonth();
  }

  /**
   * Counts a task on the day of `at` in `scope`'s record (a server, or a member's own install) and reserves
   * its estimate, unless `decide` refuses it from the record as it stands: checked and counted in one step,
   * so workers admitting at once never pass a limit together. The month is not touched.
   */
  async admitOnDay(
    scope: string,
    userId: string,
    at: number,
    estimateUsdTicks: number,
    decide: (usage: DayUsage) => LimitVerdict,
  ): Promise<AdmitVerdict> {
    let verdict: LimitVerdict = { ok: true };
    const day = await this.#updateDay(scope, at, (usage) => {
      // Decided again on each attempt: the last one is what the record says.
      verdict = decide(usage);
      if (!verdict.ok) return false;
      const count = userOf(usage, userId);
      count.tasks++;
      count.reservedUsdTicks += estimateUsdTicks;
      return true;
    });
    const refused: LimitVerdict = verdict;
    if (!refused.ok) return refused;
    return { ok: true, reservation: { estimateUsdTicks, month: false }, spent: spentFrom(day, userId) };
  }

  /**
   * Counts a task on the day of `at` and reserves its estimate, unless the server's daily limits or a
   * budget refuses it, checking and counting in one step per record: workers admitting at once never
   * pass a limit or a budget together. The month's record is touched only for a monthly budget.
   */
  async admitSubmission(
    guildId: string,
    userId: string,
    at: number,
    limits: GuildSettings['limits'],
    budgets: Budgets,
    estimateUsdTicks: number,
  ): Promise<AdmitVerdict> {
    const admitted = await this.admitOnDay(guildId, userId, at, estimateUsdTicks, (usage) => {
      const counts = { userTasksToday: memberUsage(usage, userId).tasks, serverTasksToday: serverTotal(usage).tasks, now: at };
      const daily = evaluateDailyLimits(limits, counts);
      return daily.ok ? checkBudgets(budgets, spentFrom(usage, userId), estimateUsdTicks, at) : daily;
    });
    if (!admitted.ok) return admitted;
    const { spent } = admitted;
    if (!(budgets.server_monthly_usd > 0)) return admitted;

    let monthly: LimitVerdict = { ok: true };
    let month: MonthUsage;
    try {
      month = await this.#updateMonth(guildId, at, (usage) => {
        // The day's reservation is in the month's spend already only once this step has run: add it here.
        monthly = checkBudgets(
          { member_daily_usd: 0, server_daily_usd: 0, server_monthly_usd: budgets.server_monthly_usd },
          { memberToday: 0, serverToday: 0, serverMonth: monthSpent(usage) },
          estimateUsdTicks,
          at,
        );
        if (!monthly.ok) return false;
        usage.reservedUsdTicks += estimateUsdTicks;
        return true;
      });
    } catch (error) {
      // The month could not be written (the store down, or a sum it refuses to keep): the day's count goes
      // too, so that a task the caller will not submit is not left counted half.
      await this.releaseSubmission(guildId, userId, at, { estimateUsdTicks, month: false }).catch((releaseError: unknown) => {
        this.#log.warn('a task that could not be reserved for the month stays counted today', { guild: guildId, error: releaseError });
      });
      throw error;
    }
    const monthRefusal: LimitVerdict = monthly;
    if (!monthRefusal.ok) {
      await this.releaseSubmission(guildId, userId, at, { estimateUsdTicks, month: false });
      return monthRefusal;
    }
    return { ok: true, reservation: { estimateUsdTicks, month: true }, spent: { ...spent, serverMonth: monthSpent(month) } };
  }

  /** The gateway refused the task: it does not count against today's limits, and its estimate is free again. */
  async releaseSubmission(guildId: string, userId: string, at: number, reservation: Reservation): Promise<void> {
    await this.#updateDay(guildId, at, (usage) => {
      const count = ownValue(usage.users, userId);
      if (!count || count.tasks === 0) return false;
      count.tasks--;
      count.reservedUsdTicks = Math.max(0, count.reservedUsdTicks - reservation.estimateUsdTicks);
      return true;
    });
    if (reservation.month) await this.#releaseMonth(guildId, at, reservation.estimateUsdTicks);
  }

  async #releaseMonth(guildId: string, at: number, usdTicks: number): Promise<MonthUsage> {
    return this.#updateMonth(guildId, at, (usage) => {
      usage.reservedUsdTicks = Math.max(0, usage.reservedUsdTicks - usdTicks);
      return true;
    });
  }

  /**
   * Replaces a finished task's reservation with what it cost, on the day it was started (`at`); a
   * second settlement of the same task changes nothing, from this worker or another. Returns what the
   * server has spent since, or undefined when the task was settled before.
   */
  async settle(
    guildId: string,
    userId: string,
    taskId: string,
    at: number,
    reservation: Reservation | undefined,
    settlement: Settlement,
  ): Promise<Spent | undefined> {
    // The task is claimed first (set if absent): of two reports at once, one counts it. A worker that dies
    // between claim and count leaves it uncounted, which errs on the side of not charging twice.
    const { created } = await this.#settled.setIfAbsent(taskId, true, KEEP_DAY_MS);
    if (!created) return undefined;
    const reserved = reservation?.estimateUsdTicks ?? 0;
    const usdTicks = settlement.kind === 'refunded' ? 0 : settlement.usdTicks;
    try {
      const day = await this.#updateDay(guildId, at, (usage) => {
        const count = userOf(usage, userId);
        count.reservedUsdTicks = Math.max(0, count.reservedUsdTicks - reserved);
        if (settlement.kind === 'reported') count.costUsdTicks += usdTicks;
        if (settlement.kind === 'estimated') {
          count.estimatedUsdTicks += usdTicks;
          count.costUnreported++;
        }
        return true;
      });
      const month = await this.#updateMonth(guildId, at, (usage) => {
        if (reservation?.month) usage.reservedUsdTicks = Math.max(0, usage.reservedUsdTicks - reserved);
        dayOf(usage, at).videoUsdTicks += usdTicks;
        return true;
      });
      return spentFrom(day, userId, monthSpent(month));
    } catch (error) {
      // Not counted: the claim goes too, so that the next report of the task counts it.
      await this.#settled.delete(taskId).catch((undoError: unknown) => {
        this.#log.warn('a task cost could not be counted nor its claim taken back; it stays uncounted', { task: taskId, error: undoError });
      });
      throw error;
    }
  }

  /** Adds `ms` of a realtime voice session costing `ticks` to the member and the server, on the day of `at`. */
  async meterVoice(guildId: string, userId: string, at: number, ms: number, usdTicks: number): Promise<Spent> {
    const day = await this.#updateDay(guildId, at, (usage) => {
      const count = userOf(usage, userId);
      count.voiceMs += ms;
      count.voiceUsdTicks += usdTicks;
      return true;
    });
    const month = await this.#updateMonth(guildId, at, (usage) => {
      dayOf(usage, at).voiceUsdTicks += usdTicks;
      return true;
    });
    return spentFrom(day, userId, monthSpent(month));
  }

  /** What the member and the server have spent on the day (and month, when asked) of `at`. */
  async spent(guildId: string, userId: string, at: number, withMonth: boolean): Promise<Spent> {
    const [day, month] = await Promise.all([
      this.day(guildId, at),
      withMonth ? this.#months.get(`${guildId}:${monthKey(at)}`) : Promise.resolve(undefined),
    ]);
    return spentFrom(day, userId, withMonth ? monthSpent(month) : undefined);
  }

  async day(guildId: string, at: number): Promise<DayUsage> {
    return (await this.#days.get(`${guildId}:${dayKey(at)}`)) ?? emptyDay();
  }

  /** The days of the month of `at` up to that day (UTC), summed per member. */
  async month(guildId: string, at: number): Promise<Record<string, UsageCount>> {
    const date = new Date(at);
    const days = Array.from({ length: date.getUTCDate() }, (_, index) => Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), index + 1));
    const totals: Record<string, UsageCount> = {};
    for (const usage of await Promise.all(days.map((day) => this.day(guildId, day)))) {
      for (const [userId, count] of Object.entries(usage.users)) addUsage(ownSlot(totals, userId, noUsage), count);
    }
    return totals;
  }

  /** The server's spend per UTC day over the `count` days up to the day of `at`, oldest first. */
  async spendByDay(guildId: string, at: number, count: number): Promise<{ day: string; spend: DaySpend }[]> {
    const days = Array.from({ length: count }, (_, index) => at - (count - 1 - index) * 86_400_000);
    const months = [...new Set(days.map(monthKey))];
    const records = new Map(
      await Promise.all(months.map(async (month) => [month, await this.#months.get(`${guildId}:${month}`)] as const)),
    );
    return days.map((moment) => {
      const key = dayKey(moment);
      const month = records.get(monthKey(moment));
      const spend = month && Object.hasOwn(month.days, key.slice(8, 10)) ? month.days[key.slice(8, 10)]! : undefined;
      return { day: key, spend: spend ?? { videoUsdTicks: 0, voiceUsdTicks: 0 } };
    });
  }
}
