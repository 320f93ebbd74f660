import { worded } from '../support/worded.ts';
import { describe, expect, it } from 'vitest';
import { USD_TICKS } from '../../src/gateway/spec.ts';
import {
  budgetRooms,
  checkBudgets,
  spentBudgetNotice,
  nextUtcMonth,
  reachedThresholds,
  spentBudget,
  usdToUsdTicks,
  type Spent,
} from '../../src/settings/budgets.ts';
import { NO_BUDGETS, type Budgets } from '../../src/settings/guild-settings.ts';
import { ENGLISH } from '../../src/i18n/index.ts';
import { word } from '../../src/wording/notice.ts';

// The budget arithmetic at its edges: the last cent (and one tick past it), a day's and a month's first
// and last moments, and the 80% / 100% alert thresholds.

const CENT = USD_TICKS / 100;
const LAST_MOMENT_OF_NOVEMBER = Date.UTC(2026, 10, 30, 23, 59, 59, 999);
const FIRST_OF_DECEMBER = Date.UTC(2026, 11, 1);
const NOW = Date.UTC(2026, 10, 15, 12);
const NEXT_MIDNIGHT = Date.UTC(2026, 10, 16);

function spent(overrides: Partial<Spent> = {}): Spent {
  return { memberToday: 0, serverToday: 0, serverMonth: 0, ...overrides };
}

function budgets(overrides: Partial<Budgets>): Budgets {
  return { ...NO_BUDGETS, ...overrides };
}

describe('the last cent of a budget', () => {
  const memberDollar = budgets({ member_daily_usd: 1 });

  it('allows a video that brings the spend to exactly the budget', () => {
    expect(checkBudgets(memberDollar, spent({ memberToday: 60 * CENT }), 40 * CENT, NOW)).toEqual({ ok: true });
    expect(checkBudgets(memberDollar, spent({ memberToday: 99 * CENT }), CENT, NOW)).toEqual({ ok: true });
    expect(checkBudgets(memberDollar, spent(), USD_TICKS, NOW)).toEqual({ ok: true });
  });

  it('refuses one tick more, naming the budget, what is left and when it starts over', () => {
    expect(worded(checkBudgets(memberDollar, spent({ memberToday: 60 * CENT }), 40 * CENT + 1, NOW))).toMatchObject({
      ok: false,
      message: `This video (about $0.40) would pass your daily budget on this server ($1.00): $0.40 is left today. It starts over <t:${NEXT_MIDNIGHT / 1000}:R>.`,
    });
    expect(checkBudgets(memberDollar, spent({ memberToday: 60 * CENT + 1 }), 40 * CENT, NOW).ok).toBe(false);
  });

  it("names the server's daily and monthly budgets in their own words, the monthly one starting over on the 1st", () => {
    expect(worded(checkBudgets(budgets({ server_daily_usd: 5 }), spent({ serverToday: 4.5 * USD_TICKS }), 64 * CENT, NOW))).toMatchObject({
      ok: false,
      message: `This video (about $0.64) would pass this server's daily budget ($5.00): $0.50 is left today. It starts over <t:${NEXT_MIDNIGHT / 1000}:R>.`,
    });
    expect(
      worded(checkBudgets(budgets({ server_monthly_usd: 100 }), spent({ serverMonth: 99.9 * USD_TICKS }), 40 * CENT, NOW)),
    ).toMatchObject({
      ok: false,
      message: `This video (about $0.40) would pass this server's monthly budget ($100.00): $0.10 is left this month. It starts over <t:${FIRST_OF_DECEMBER / 1000}:R>.`,
    });
  });

  it('names the budget with the least left when several would be passed', () => {
    const all = budgets({ member_daily_usd: 2, server_daily_usd: 10, server_monthly_usd: 50 });
    const verdict = checkBudgets(
      all,
      spent({ memberToday: 1.5 * USD_TICKS, serverToday: 9.8 * USD_TICKS, serverMonth: 20 * USD_TICKS }),
      USD_TICKS,
      NOW,
    );
    expect(worded(verdict)).toMatchObject({
      ok: false,
      message: expect.stringContaining("this server's daily budget ($10.00): $0.20 is left today"),
    });
  });

  it('lets everything through without budgets (0 = none), and leaves a monthly budget whose spend was not read alone', () => {
    expect(checkBudgets(NO_BUDGETS, spent({ memberToday: 1e15, serverToday: 1e15, serverMonth: 1e15 }), 1e15, NOW)).toEqual({ ok: true });
    expect(checkBudgets(budgets({ server_monthly_usd: 1 }), spent({ serverMonth: undefined }), 2 * USD_TICKS, NOW)).toEqual({ ok: true });
  });

  it('keeps dollars given as decimals exact in usdTicks', () => {
    expect(usdToUsdTicks(0.1 + 0.2)).toBe(30 * CENT);
    expect(checkBudgets(budgets({ server_daily_usd: 0.3 }), spent({ serverToday: 10 * CENT }), 20 * CENT, NOW)).toEqual({ ok: true });
  });
});

describe('a used-up budget', () => {
  it('is spent at exactly the budget, not a tick before', () => {
    const dollar = budgets({ server_daily_usd: 1 });
    expect(spentBudget(dollar, spent({ serverToday: USD_TICKS - 1 }), NOW)).toBeUndefined();
    const used = spentBudget(dollar, spent({ serverToday: USD_TICKS }), NOW);
    expect(used).toMatchObject({ budget: 'server_daily_usd', leftUsdTicks: 0, resetsAt: NEXT_MIDNIGHT });
    expect(word(ENGLISH, spentBudgetNotice(used!))).toBe(
      `This server's daily budget ($1.00) is used up; it starts over <t:${NEXT_MIDNIGHT / 1000}:R>.`,
    );
    // Past it (voice counted to the second may run a little over): nothing is "left" below zero.
    expect(spentBudget(dollar, spent({ serverToday: 2 * USD_TICKS }), NOW)).toMatchObject({ leftUsdTicks: 0 });
  });
});

describe('UTC months', () => {
  it("start over at the first moment of the next month, from a month's last moment and its first", () => {
    expect(nextUtcMonth(LAST_MOMENT_OF_NOVEMBER)).toBe(FIRST_OF_DECEMBER);
    // On the 1st at midnight the new month has begun: it starts over a whole month later.
    expect(nextUtcMonth(FIRST_OF_DECEMBER)).toBe(Date.UTC(2027, 0, 1));
    expect(nextUtcMonth(Date.UTC(2027, 0, 31, 12))).toBe(Date.UTC(2027, 1, 1));
    expect(nextUtcMonth(Date.UTC(2028, 1, 29, 12))).toBe(Date.UTC(2028, 2, 1));
  });

  it('cross December into the next year', () => {
    expect(nextUtcMonth(Date.UTC(2026, 11, 31, 23, 59, 59, 999))).toBe(Date.UTC(2027, 0, 1));
    expect(nextUtcMonth(Date.UTC(2026, 11, 1))).toBe(Date.UTC(2027, 0, 1));
  });

  it("tell a member at a month's last moment that the monthly budget starts over in a millisecond, and the daily one too", () => {
    const rooms = budgetRooms(budgets({ server_daily_usd: 5, server_monthly_usd: 50 }), spent(), LAST_MOMENT_OF_NOVEMBER);
    expect(rooms.map((room) => [room.budget, room.resetsAt])).toEqual([
      ['server_daily_usd', FIRST_OF_DECEMBER],
      ['server_monthly_usd', FIRST_OF_DECEMBER],
    ]);
  });
});

describe('alert thresholds', () => {
  const serverBudgets = budgets({ member_daily_usd: 1, server_daily_usd: 100, server_monthly_usd: 1000 });
  const reached = (serverToday: number, serverMonth = 0) =>
    reachedThresholds(serverBudgets, spent({ serverToday, serverMonth })).map((entry) => `${entry.budget} ${entry.threshold}%`);

  it('reach 80% at exactly 80% of a server budget, not at 79.99%', () => {
    expect(reached(79.99 * USD_TICKS)).toEqual([]);
    expect(reached(80 * USD_TICKS - 1)).toEqual([]);
    expect(reached(80 * USD_TICKS)).toEqual(['server_daily_usd 80%']);
  });

  it('reach 100% at exactly the budget, with 80% reached too', () => {
    expect(reached(100 * USD_TICKS - 1)).toEqual(['server_daily_usd 80%']);
    expect(reached(100 * USD_TICKS)).toEqual(['server_daily_usd 80%', 'server_daily_usd 100%']);
    expect(reached(150 * USD_TICKS)).toEqual(['server_daily_usd 80%', 'server_daily_usd 100%']);
  });

  it('count the monthly budget apart, and never a member budget', () => {
    expect(reached(0, 800 * USD_TICKS)).toEqual(['server_monthly_usd 80%']);
    expect(reachedThresholds(serverBudgets, spent({ memberToday: 5 * USD_TICKS }))).toEqual([]);
    expect(reachedThresholds(NO_BUDGETS, spent({ serverToday: 1e15, serverMonth: 1e15 }))).toEqual([]);
    expect(reachedThresholds(serverBudgets, spent({ serverMonth: undefined }))).toEqual([]);
  });
});
