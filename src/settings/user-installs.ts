import { refuse } from '../wording/notice.ts';
import { usdToUsdTicks } from './budgets.ts';
import { discordRelativeTime, nextUtcMidnight, type LimitVerdict } from './limits.ts';
import { spentUsdTicks, type UsageCount } from './usage.ts';

// What one member may make per UTC day through their own install of the app, on the operator's key
// (USER_INSTALL_DAILY_VIDEOS, USER_INSTALL_DAILY_USD; 0: no limit), decided from their day's count alone
// (no store, no clock): the usage ledger checks it in the same step as it counts a video, as it does a
// server's limits and budgets.

export interface UserInstallLimits {
  dailyVideos: number;
  dailyUsd: number;
}

/** What is left of each limit that is set, from the member's count of the day. */
export interface UserInstallRoom {
  videos?: { left: number; count: number };
  usd?: { leftUsdTicks: number; limitUsdTicks: number };
  resetsAt: number;
}

export function userInstallRoom(limits: UserInstallLimits, count: UsageCount, now: number): UserInstallRoom {
  const room: UserInstallRoom = { resetsAt: nextUtcMidnight(now) };
  if (limits.dailyVideos > 0) room.videos = { left: Math.max(0, limits.dailyVideos - count.tasks), count: limits.dailyVideos };
  if (limits.dailyUsd > 0) {
    const limitUsdTicks = usdToUsdTicks(limits.dailyUsd);
    room.usd = { leftUsdTicks: Math.max(0, limitUsdTicks - spentUsdTicks(count)), limitUsdTicks };
  }
  return room;
}

/**
 * Whether one more video of `estimateUsdTicks` fits the member's day: one that brings their spend to exactly
 * the limit fits. The refusal says which limit and when it starts over.
 */
export function checkUserInstallDay(limits: UserInstallLimits, count: UsageCount, estimateUsdTicks: number, now: number): LimitVerdict {
  const room = userInstallRoom(limits, count, now);
  const resets = discordRelativeTime(room.resetsAt);
  if (room.videos && room.videos.left <= 0) {
    return { ...refuse('user-install.limit.videos', { count: room.videos.count, retry: resets }), retryAt: room.resetsAt };
  }
  if (room.usd && estimateUsdTicks > room.usd.leftUsdTicks) {
    return {
      ...refuse('user-install.limit.usd', {
        estimate: { phrase: 'estimate', usdTicks: estimateUsdTicks },
        amount: { phrase: 'cost', usdTicks: room.usd.limitUsdTicks },
        left: { phrase: 'cost', usdTicks: room.usd.leftUsdTicks },
        resets,
      }),
      retryAt: room.resetsAt,
    };
  }
  return { ok: true };
}
