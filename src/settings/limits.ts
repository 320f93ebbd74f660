import type { Result } from '../lib/result.ts';
import type { GuildSettings } from './guild-settings.ts';

// Whether one more video fits a server's limits, decided from counts alone (no store, no clock) so the
// arithmetic can be tested at day boundaries. Daily limits start over at midnight UTC.

/** `retryAt`: when trying again can work; absent when it depends on a running video finishing. */
export type LimitVerdict = Result<object, { retryAt?: number }>;

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

/** "1 video", "3 videos". */
export function videos(count: number): string {
  return count === 1 ? '1 video' : `${count} videos`;
}

/** The daily limits alone: what the usage ledger checks in the same step as it counts a task. */
export function evaluateDailyLimits(limits: GuildSettings['limits'], counts: Omit<LimitCounts, 'activeTasksOfUser'>): LimitVerdict {
  const retryAt = nextUtcMidnight(counts.now);
  if (limits.dailyPerUser > 0 && counts.userTasksToday >= limits.dailyPerUser) {
    return {
      ok: false,
      retryAt,
      message: `You reached this server's limit of ${videos(limits.dailyPerUser)} a day. Try again ${discordRelativeTime(retryAt)}.`,
    };
  }
  if (limits.dailyPerServer > 0 && counts.serverTasksToday >= limits.dailyPerServer) {
    return {
      ok: false,
      retryAt,
      message: `This server reached its ${videos(limits.dailyPerServer)} for today; try again ${discordRelativeTime(retryAt)}.`,
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
      // Worded to read right for any count ("1 videos" would not).
      message: `You already have as many videos in progress as this server allows (${limits.concurrentPerUser}). Try again when one of your videos finishes.`,
    };
  }
  return { ok: true };
}
