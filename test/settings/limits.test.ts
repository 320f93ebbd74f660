import { worded } from '../support/worded.ts';
import { describe, expect, it } from 'vitest';
import { checkAccess } from '../../src/settings/access.ts';
import { evaluateLimits, nextUtcMidnight } from '../../src/settings/limits.ts';
import { dayKey } from '../../src/lib/day-key.ts';
import { formatCost } from '../../src/wording/cost.ts';
import { noUsage, type UsageCount } from '../../src/settings/usage.ts';
import { formatUsage } from '../../src/settings/usage-report.ts';
import type { UsageView } from '../../src/settings/spending.ts';
import { ENGLISH } from '../../src/i18n/index.ts';

const NO_LIMITS = { concurrentPerUser: 0, dailyPerUser: 0, dailyPerServer: 0 };
const LATE = Date.UTC(2026, 10, 22, 23, 59, 59, 999);
const MIDNIGHT = Date.UTC(2026, 10, 23);

function counts(overrides: Partial<Parameters<typeof evaluateLimits>[1]> = {}) {
  return { activeTasksOfUser: 0, userTasksToday: 0, serverTasksToday: 0, now: LATE, ...overrides };
}

describe('UTC days', () => {
  it('ends a day at midnight UTC, across months and years', () => {
    expect(dayKey(LATE)).toBe('2026-11-22');
    expect(dayKey(MIDNIGHT)).toBe('2026-11-23');
    expect(nextUtcMidnight(LATE)).toBe(MIDNIGHT);
    // At midnight exactly, a new day has begun: the next reset is a full day later.
    expect(nextUtcMidnight(MIDNIGHT)).toBe(Date.UTC(2026, 10, 24));
    expect(nextUtcMidnight(Date.UTC(2026, 10, 30, 12))).toBe(Date.UTC(2026, 11, 1));
    expect(nextUtcMidnight(Date.UTC(2026, 11, 31, 12))).toBe(Date.UTC(2027, 0, 1));
    expect(nextUtcMidnight(Date.UTC(2028, 1, 28, 12))).toBe(Date.UTC(2028, 1, 29));
  });

  it('shows usdTicks as dollars (1 USD = 10^10 usdTicks)', () => {
    expect(formatCost(6_400_000_000)).toBe('$0.64');
    expect(formatCost(25_000_000_000)).toBe('$2.50');
    expect(formatCost(0)).toBe('$0.00');
    expect(formatCost(12_345_600_000_000)).toBe('$1,234.56');
    // Less than a cent is not nothing, and is not shown as $0.00.
    expect(formatCost(10_000_000)).toBe('under $0.01');
    expect(formatCost(60_000_000)).toBe('$0.01');
  });
});

describe('limits', () => {
  it('lets everything through when the server set no limits (0 = no limit)', () => {
    expect(evaluateLimits(NO_LIMITS, counts({ activeTasksOfUser: 99, userTasksToday: 999, serverTasksToday: 9999 }))).toEqual({ ok: true });
  });

  it('refuses a member with as many videos in progress as allowed, until one finishes', () => {
    const limits = { ...NO_LIMITS, concurrentPerUser: 2 };
    expect(evaluateLimits(limits, counts({ activeTasksOfUser: 1 }))).toEqual({ ok: true });
    expect(worded(evaluateLimits(limits, counts({ activeTasksOfUser: 2 })))).toEqual({
      ok: false,
      message: 'You already have as many videos in progress as this server allows (2). Try again when one of your videos finishes.',
    });
  });

  it("refuses a member's video over the daily limit, saying it works again at midnight UTC", () => {
    const limits = { ...NO_LIMITS, dailyPerUser: 3 };
    expect(evaluateLimits(limits, counts({ userTasksToday: 2 }))).toEqual({ ok: true });
    const verdict = evaluateLimits(limits, counts({ userTasksToday: 3 }));
    expect(worded(verdict)).toEqual({
      ok: false,
      retryAt: MIDNIGHT,
      message: `You reached this server's limit of 3 videos a day. Try again <t:${MIDNIGHT / 1000}:R>.`,
    });
  });

  it("refuses any member once the server's daily cap is reached", () => {
    const limits = { ...NO_LIMITS, dailyPerServer: 50 };
    expect(evaluateLimits(limits, counts({ serverTasksToday: 49 }))).toEqual({ ok: true });
    expect(worded(evaluateLimits(limits, counts({ serverTasksToday: 50 })))).toEqual({
      ok: false,
      retryAt: MIDNIGHT,
      message: `This server reached its 50 videos for today; try again <t:${MIDNIGHT / 1000}:R>.`,
    });
  });

  it('names the limit that really holds the member back: the day, not a running video', () => {
    const limits = { concurrentPerUser: 1, dailyPerUser: 1, dailyPerServer: 1 };
    // Waiting for the running video would only bring another refusal: say midnight.
    const verdict = evaluateLimits(limits, counts({ activeTasksOfUser: 1, userTasksToday: 1, serverTasksToday: 1 }));
    expect(worded(verdict)).toEqual({
      ok: false,
      retryAt: MIDNIGHT,
      message: `You reached this server's limit of 1 video a day. Try again <t:${MIDNIGHT / 1000}:R>.`,
    });
    const running = evaluateLimits(limits, counts({ activeTasksOfUser: 1 }));
    expect(worded(running)).toMatchObject({ ok: false, message: expect.stringContaining('Try again when one of your videos finishes.') });
    expect(running).not.toHaveProperty('retryAt');
  });
});

describe('access by role', () => {
  const open = { roles: { video: [], voice: [] } };
  const restricted = { roles: { video: ['111', '222'], voice: [] } };

  it('lets everyone in when the server chose no roles', () => {
    expect(checkAccess([], open, 'video', false)).toEqual({ ok: true });
    expect(checkAccess([], restricted, 'voice', false)).toEqual({ ok: true });
  });

  it('lets in members with one of the roles, and server managers always', () => {
    expect(checkAccess(['999', '222'], restricted, 'video', false)).toEqual({ ok: true });
    expect(checkAccess([], restricted, 'video', true)).toEqual({ ok: true });
  });

  it('refuses others, naming the roles that would do', () => {
    expect(worded(checkAccess(['999'], restricted, 'video', false))).toEqual({
      ok: false,
      message: 'On this server, /video is for members with <@&111> or <@&222>. Ask a server admin if you need it.',
    });
  });
});

describe('the usage report', () => {
  const spent = (tasks: number, costUsdTicks: number, costUnreported = 0, estimatedUsdTicks = 0): UsageCount => ({
    ...noUsage(),
    tasks,
    costUsdTicks,
    costUnreported,
    estimatedUsdTicks,
  });
  /** What a server manager asks for: their own usage (none here), no budgets, and the server's. */
  const serverView = (today: Record<string, UsageCount>, month: Record<string, UsageCount>): UsageView => ({
    now: LATE,
    member: { today: noUsage(), month: noUsage() },
    budgets: [],
    server: { today, month, days: [] },
  });
  /** The report's server part, after the member's own lines. */
  const serverPart = (text: string) => text.split('\n\n').slice(1).join('\n\n');

  it("lists today's and this month's videos and cost per member, biggest spenders first", () => {
    const text = formatUsage(
      ENGLISH,
      serverView({ alice: spent(1, 5_000_000_000) }, { alice: spent(4, 20_000_000_000), bob: spent(9, 30_000_000_000) }),
    );
    expect(serverPart(text)).toBe(
      [
        '**Server today (Nov 22, 2026 UTC)**: 1 video, $0.50; no voice',
        '<@alice>: 1 video, $0.50; no voice',
        '',
        '**Server this month (November 2026)**: 13 videos, $5.00; no voice',
        '<@bob>: 9 videos, $3.00; no voice',
        '<@alice>: 4 videos, $2.00; no voice',
      ].join('\n'),
    );
  });

  it('never shows a cost the gateway did not report as $0.00: its estimate, marked as such', () => {
    const alice = spent(3, 4_000_000_000, 2, 8_000_000_000);
    const bob = spent(2, 0, 2, 8_000_000_000);
    const text = formatUsage(ENGLISH, serverView({ alice, bob }, { alice, bob, carol: spent(1, 0) }));
    expect(serverPart(text)).toBe(
      [
        '**Server today (Nov 22, 2026 UTC)**: 5 videos, $0.40 + about $1.60 estimated (4 without a reported cost); no voice',
        '<@alice>: 3 videos, $0.40 + about $0.80 estimated (2 without a reported cost); no voice',
        '<@bob>: 2 videos, about $0.80 estimated (2 without a reported cost); no voice',
        '',
        '**Server this month (November 2026)**: 6 videos, $0.40 + about $1.60 estimated (4 without a reported cost); no voice',
        '<@alice>: 3 videos, $0.40 + about $0.80 estimated (2 without a reported cost); no voice',
        '<@bob>: 2 videos, about $0.80 estimated (2 without a reported cost); no voice',
        // A video that really cost nothing is not "unreported".
        '<@carol>: 1 video, $0.00; no voice',
      ].join('\n'),
    );
  });

  it('says when nothing was used, and shortens long lists', () => {
    const month = Object.fromEntries(Array.from({ length: 25 }, (_, index) => [`user${index}`, spent(1, index)]));
    const text = formatUsage(ENGLISH, serverView({}, month));
    expect(text).toContain('**Server today (Nov 22, 2026 UTC)**: 0 videos, $0.00; no voice\nnothing yet');
    expect(text).toContain('**Server this month (November 2026)**: 25 videos');
    expect(text.match(/<@user/g)).toHaveLength(20);
    expect(text).toContain('…and 5 more members');
  });
});
