import { USD_TICKS } from '../gateway/spec.ts';
import { notice, type Notice, type Outcome } from '../wording/notice.ts';
import { BUDGET_NAMES, type BudgetName, type Budgets } from './guild-settings.ts';
import { discordRelativeTime, nextUtcMidnight } from './limits.ts';

// Whether a cost fits a server's budgets in dollars, decided from amounts alone (no store, no clock) so
// the arithmetic can be tested at its edges: the last cent, a day's and a month's first moment. Budgets
// are for video and voice together; a day is a UTC day and a month a UTC month. Amounts are ticks
// (1 USD = 10^10), whole for videos, so "exactly the budget" is exact.

/** What has been spent (counted, estimated and reserved for videos still being made), in ticks. */
export interface Spent {
  memberToday: number;
  serverToday: number;
  /** Undefined when it was not read (no monthly budget to check). */
  serverMonth: number | undefined;
}

export interface BudgetRoom {
  budget: BudgetName;
  limitUsdTicks: number;
  leftUsdTicks: number;
  /** When the budget starts over. */
  resetsAt: number;
}

export function usdToUsdTicks(usd: number): number {
  return Math.round(usd * USD_TICKS);
}

/** The first moment of the UTC month after `at`: when monthly budgets start over. */
export function nextUtcMonth(at: number): number {
  const date = new Date(at);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
}

export function hasBudgets(budgets: Budgets): boolean {
  return BUDGET_NAMES.some((name) => budgets[name] > 0);
}

function spentAgainst(budget: BudgetName, spent: Spent): number | undefined {
  if (budget === 'member_daily_usd') return spent.memberToday;
  if (budget === 'server_daily_usd') return spent.serverToday;
  return spent.serverMonth;
}

/** What is left of each budget that is set (and whose spend is known), tightest first. */
export function budgetRooms(budgets: Budgets, spent: Spent, now: number): BudgetRoom[] {
  return BUDGET_NAMES.flatMap((budget): BudgetRoom[] => {
    const used = spentAgainst(budget, spent);
    if (!(budgets[budget] > 0) || used === undefined) return [];
    const limitUsdTicks = usdToUsdTicks(budgets[budget]);
    const resetsAt = budget === 'server_monthly_usd' ? nextUtcMonth(now) : nextUtcMidnight(now);
    return [{ budget, limitUsdTicks, leftUsdTicks: Math.max(0, limitUsdTicks - used), resetsAt }];
  }).sort((a, b) => a.leftUsdTicks - b.leftUsdTicks);
}

/** The budget, inside a sentence: "your daily budget on this server ($1.00)". */
export function budgetName(room: Pick<BudgetRoom, 'budget' | 'limitUsdTicks'>): Notice<'budget.name'> {
  return notice('budget.name', { budget: room.budget, amount: { phrase: 'cost', usdTicks: room.limitUsdTicks } });
}

/**
 * Whether `costUsdTicks` more fits every budget: one that brings the spend to exactly a budget fits. The
 * refusal names the budget, what is left and when it starts over.
 */
export function checkBudgets(budgets: Budgets, spent: Spent, costUsdTicks: number, now: number): Outcome<object, { room?: BudgetRoom }> {
  const over = budgetRooms(budgets, spent, now).find((room) => costUsdTicks > room.leftUsdTicks);
  if (!over) return { ok: true };
  return {
    ok: false,
    room: over,
    notice: notice('budget.video-would-pass', {
      estimate: { phrase: 'estimate', usdTicks: costUsdTicks },
      budgetName: budgetName(over),
      left: { phrase: 'cost', usdTicks: over.leftUsdTicks },
      budget: over.budget,
      resets: discordRelativeTime(over.resetsAt),
    }),
  };
}

/** Whether any budget is used up: nothing more can start, not even a voice conversation. */
export function spentBudget(budgets: Budgets, spent: Spent, now: number): BudgetRoom | undefined {
  return budgetRooms(budgets, spent, now).find((room) => room.leftUsdTicks <= 0);
}

/** "Your daily budget on this server ($1.00) is used up; it starts over in 3 hours." */
export function spentBudgetNotice(room: BudgetRoom): Notice<'budget.used-up'> {
  return notice('budget.used-up', {
    budget: room.budget,
    amount: { phrase: 'cost', usdTicks: room.limitUsdTicks },
    resets: discordRelativeTime(room.resetsAt),
  });
}

/** The share of a server budget an alert is posted at, once each per day or month. */
export const ALERT_THRESHOLDS = [80, 100] as const;
export type AlertThreshold = (typeof ALERT_THRESHOLDS)[number];

/** The server budgets whose spend has reached a threshold (each with the highest one reached). */
export function reachedThresholds(
  budgets: Budgets,
  spent: Spent,
): { budget: BudgetName; threshold: AlertThreshold; spentUsdTicks: number }[] {
  return (['server_daily_usd', 'server_monthly_usd'] as const).flatMap((budget) => {
    const used = spentAgainst(budget, spent);
    if (!(budgets[budget] > 0) || used === undefined) return [];
    const limit = usdToUsdTicks(budgets[budget]);
    return ALERT_THRESHOLDS.filter((threshold) => used * 100 >= limit * threshold).map((threshold) => ({
      budget,
      threshold,
      spentUsdTicks: used,
    }));
  });
}
