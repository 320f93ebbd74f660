import { notice, type Outcome } from '../wording/notice.ts';
import type { GuildSettings } from './guild-settings.ts';

// Whether one more video fits a server's limits, decided from counts alone (no store, no clock) so the
// arithmetic can be tested at day boundaries. Daily limits start over at midnight UTC.

/** `retryAt`: when trying again can work; absent when it depends on a running video finishing. */
export type LimitVerdict = Outcome<object, { retryAt?: number }>;

export interface LimitCounts {
  /** The member's videos still being made. */
  activeTasksOfUser: number;
  /** Videos the member started today (UTC). */
  userTasksToday: number;
  /** Videos the whole server started today (UTC). */
  serverTasksToday: number;
  now: number;
}

/** The next UTC midnight after `at`: when daily limits start over. */
export function nextUtcMidnight(at: number): number {
  const date = new Date(at);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1);
}

/** A Discord timestamp that every reader sees in their own time zone, as "in 3 hours". */
export function discordRelativeTime(at: number): string {
  return `<t:${Math.floor(at / 1000)}:R>`;
}

/** The daily limits alone: what the usage ledger checks in the same step as it counts a task. */
export function evaluateDailyLimits(limits: GuildSettings['limits'], counts: Omit<LimitCounts, 'activeTasksOfUser'>): LimitVerdict {
  const retryAt = nextUtcMidnight(counts.now);
  if (limits.dailyPerUser > 0 && counts.userTasksToday >= limits.dailyPerUser) {
    return {
      ok: false,
      retryAt,
      notice: notice('limits.member-daily', { count: limits.dailyPerUser, retry: discordRelativeTime(retryAt) }),
    };
  }
  if (limits.dailyPerServer > 0 && counts.serverTasksToday >= limits.dailyPerServer) {
    return {
      ok: false,
      retryAt,
      notice: notice('limits.server-daily', { count: limits.dailyPerServer, retry: discordRelativeTime(retryAt) }),
    };
  }
  return { ok: true };
}

/**
 * The first limit that refuses, in the order that tells the member the truth about when to come back: a
 * daily limit first, since a running video finishing does not lift it.
 */
export function evaluateLimits(limits: GuildSettings['limits'], counts: LimitCounts): LimitVerdict {
  const daily = evaluateDailyLimits(limits, counts);
  if (!daily.ok) return daily;
  if (limits.concurrentPerUser > 0 && counts.activeTasksOfUser >= limits.concurrentPerUser) {
    return {
      ok: false,
      notice: notice('limits.member-concurrent', { count: limits.concurrentPerUser }),
    };
  }
  return { ok: true };
}
