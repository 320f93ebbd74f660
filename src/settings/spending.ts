import { USD_TICKS } from '../gateway/spec.ts';
import { ownValue } from '../lib/json.ts';
import type { Logger } from '../lib/log.ts';
import type { BotMetrics } from '../lib/metrics.ts';
import { notice, refuse, type Notice, type Outcome } from '../wording/notice.ts';
import { dayKey } from '../lib/day-key.ts';
import { LimitReachedError, type LimitQuery, type MemberTask, type SpendReservation, type TaskCost } from '../ports/guild-policy.ts';
import type { VideoEstimateRequest } from '../ports/guild-policy.ts';
import type { VoiceBudgetLeft, VoiceSpending, VoiceUse } from '../ports/voice-spend.ts';
import { parseMarker, type Collection, type Store } from '../store/index.ts';
import {
  budgetRooms,
  budgetName,
  checkBudgets,
  spentBudgetNotice,
  type BudgetRoom,
  reachedThresholds,
  spentBudget,
  usdToUsdTicks,
  type Spent,
} from './budgets.ts';
import type { Budgets, GuildSettings } from './guild-settings.ts';
import { discordRelativeTime, evaluateLimits, type LimitVerdict } from './limits.ts';
import { estimateVideoUsdTicks, voiceUsdTicksPerSecond, type PriceTable } from './prices.ts';
import { isUserInstallScope } from '../ports/user-install.ts';
import { checkUserInstallDay, userInstallRoom, type UserInstallLimits, type UserInstallRoom } from './user-installs.ts';
import { UsageLedger, memberUsage, monthKey, noUsage, spentFrom, totalUsage, type Settlement, type UsageCount } from './usage.ts';

// What a server's key spends, and what it may: estimates from the price table, reservations against
// the budgets at submission, the real cost in their place when a video finishes, voice sessions
// counted by the time they are open, and alerts when the server reaches 80% and 100% of a budget.

export interface SpendingOptions {
  store: Store;
  log: Logger;
  prices: PriceTable;
  /** The server's settings, as stored (limits, budgets, alert channel). */
  settings(guildId: string): Promise<GuildSettings>;
  /** Posts an alert in a server's alert channel, worded for the server; default none. */
  postAlert?: (guildId: string, channelId: string, alert: Notice<'budget.alert.used-all' | 'budget.alert.reached'>) => Promise<unknown>;
  metrics?: Pick<BotMetrics, 'spend'>;
  /**
   * What a member may make per UTC day through their own install of the app (USER_INSTALL_DAILY_VIDEOS,
   * USER_INSTALL_DAILY_USD), counted under their user-install scope; default no limit.
   */
  userInstallLimits?: UserInstallLimits;
}

const NO_USER_INSTALL_LIMITS: UserInstallLimits = { dailyVideos: 0, dailyUsd: 0 };

/** An alert marker outlives the longest period it is for (a month). */
const ALERT_KEPT_MS = 40 * 24 * 3600_000;

/** What `/usage` shows: the member's own day and month, and (for server managers) the server's. */
export interface UsageView {
  now: number;
  member: { today: UsageCount; month: UsageCount };
  /** What is left of each budget that is set, tightest first. */
  budgets: BudgetRoom[];
  server?: {
    today: Record<string, UsageCount>;
    month: Record<string, UsageCount>;
    days: { day: string; videoUsd: number; voiceUsd: number }[];
  };
  /** For a member's own install of the app: what is left of its daily limits (in place of a server's budgets). */
  userInstall?: UserInstallRoom;
}

export class Spending implements VoiceSpending {
  readonly #options: SpendingOptions;
  readonly #ledger: UsageLedger;
  readonly #alerts: Collection<true>;

  constructor(options: SpendingOptions) {
    this.#options = options;
    this.#ledger = new UsageLedger(options.store, options.log);
    this.#alerts = options.store.collection('budget_alerts', parseMarker);
  }

  get ledger(): UsageLedger {
    return this.#ledger;
  }

  estimate(request: VideoEstimateRequest): number {
    return estimateVideoUsdTicks(this.#options.prices, request);
  }

  /**
   * Whether one more video of `estimateUsdTicks` fits the limits and the daily budgets now, from the day's
   * record alone (read only): the monthly budget is checked when admit() reserves, in the same step.
   */
  async checkLimits(query: LimitQuery): Promise<LimitVerdict> {
    if (isUserInstallScope(query.guildId)) {
      const day = await this.#ledger.day(query.guildId, query.now);
      return checkUserInstallDay(this.#userInstallLimits, memberUsage(day, query.userId), query.estimateUsdTicks, query.now);
    }
    const { limits, spending } = await this.#options.settings(query.guildId);
    const day = await this.#ledger.day(query.guildId, query.now);
    const member = memberUsage(day, query.userId);
    const server = totalUsage(day.users);
    const counted = evaluateLimits(limits, {
      activeTasksOfUser: query.activeTasksOfUser,
      userTasksToday: member.tasks,
      serverTasksToday: server.tasks,
      now: query.now,
    });
    if (!counted.ok) return counted;
    return checkBudgets(spending.budgets, spentFrom(day, query.userId), query.estimateUsdTicks, query.now);
  }

  async #spent(guildId: string, userId: string, at: number, budgets: Budgets): Promise<Spent> {
    return this.#ledger.spent(guildId, userId, at, budgets.server_monthly_usd > 0);
  }

  get #userInstallLimits(): UserInstallLimits {
    return this.#options.userInstallLimits ?? NO_USER_INSTALL_LIMITS;
  }

  async admit(task: MemberTask, estimateUsdTicks: number): Promise<SpendReservation> {
    if (isUserInstallScope(task.guildId)) {
      // A member's own install: the operator's limits for one member, and no server's budgets or alerts.
      const verdict = await this.#ledger.admitOnDay(task.guildId, task.userId, task.createdAt, estimateUsdTicks, (usage) =>
        checkUserInstallDay(this.#userInstallLimits, memberUsage(usage, task.userId), estimateUsdTicks, task.createdAt),
      );
      if (!verdict.ok) throw new LimitReachedError(verdict.notice);
      return verdict.reservation;
    }
    const { limits, spending } = await this.#options.settings(task.guildId);
    const verdict = await this.#ledger.admitSubmission(
      task.guildId,
      task.userId,
      task.createdAt,
      limits,
      spending.budgets,
      estimateUsdTicks,
    );
    if (!verdict.ok) throw new LimitReachedError(verdict.notice);
    await this.#alertIfReached(task.guildId, spending, task.createdAt, verdict.spent);
    return verdict.reservation;
  }

  async release(task: MemberTask, reservation: SpendReservation): Promise<void> {
    await this.#ledger.releaseSubmission(task.guildId, task.userId, task.createdAt, reservation);
  }

  /**
   * Replaces a finished task's reservation with its cost (once per task, however often it is seen): what
   * the gateway reported; its estimate when the gateway made a video without reporting a cost (never
   * free); nothing for a task that made no video (failures and timeouts are refunded).
   */
  async settle(cost: TaskCost): Promise<void> {
    const reported = cost.costUsdTicks;
    const settlement: Settlement =
      reported !== undefined && reported > 0
        ? { kind: 'reported', usdTicks: reported }
        : reported === undefined && cost.madeVideo
          ? { kind: 'estimated', usdTicks: cost.reservation?.estimateUsdTicks ?? 0 }
          : { kind: 'refunded' };
    // Nothing reserved and nothing to count.
    if (settlement.kind === 'refunded' && !cost.reservation?.estimateUsdTicks) return;
    const spent = await this.#ledger.settle(cost.guildId, cost.userId, cost.taskId, cost.createdAt, cost.reservation, settlement);
    if (!spent) return;
    if (settlement.kind !== 'refunded') this.#options.metrics?.spend('video', settlement.kind, settlement.usdTicks / USD_TICKS);
    await this.#alertIfReached(cost.guildId, (await this.#options.settings(cost.guildId)).spending, cost.createdAt, spent);
  }

  // ---- Voice -----------------------------------------------------------------------------------

  async checkStart(guildId: string, userId: string, now: number): Promise<Outcome> {
    const { spending } = await this.#options.settings(guildId);
    const used = spentBudget(spending.budgets, await this.#spent(guildId, userId, now, spending.budgets), now);
    if (!used) return { ok: true };
    return refuse('voice.budget.cannot-start', { budgetName: budgetName(used), resets: discordRelativeTime(used.resetsAt) });
  }

  async meter(use: VoiceUse): Promise<VoiceBudgetLeft> {
    const { spending } = await this.#options.settings(use.guildId);
    const perMs = voiceUsdTicksPerSecond(this.#options.prices, use.model) / 1000;
    const usdTicks = Math.round(use.ms * perMs);
    let spent: Spent;
    if (use.ms > 0) {
      spent = await this.#ledger.meterVoice(use.guildId, use.userId, use.at, use.ms, usdTicks);
      this.#options.metrics?.spend('voice', 'estimated', usdTicks / USD_TICKS);
      await this.#alertIfReached(use.guildId, spending, use.at, spent);
    } else {
      spent = await this.#spent(use.guildId, use.userId, use.at, spending.budgets);
    }
    const tightest = budgetRooms(spending.budgets, spent, use.at)[0];
    const counted = use.ms > 0 ? { usdTicks } : {};
    if (!tightest || perMs === 0) return { msLeft: undefined, ...counted };
    return { msLeft: tightest.leftUsdTicks / perMs, reason: spentBudgetNotice(tightest), ...counted };
  }

  // ---- Alerts ----------------------------------------------------------------------------------

  /** Posts once per budget, period and threshold (80%, 100%), whichever worker sees it first, restarts included. */
  async #alertIfReached(guildId: string, spending: GuildSettings['spending'], at: number, spent: Spent): Promise<void> {
    const post = this.#options.postAlert;
    if (!post) return;
    try {
      const channelId = spending.alertChannelId;
      if (channelId === undefined) return;
      for (const reached of reachedThresholds(spending.budgets, spent)) {
        const period = reached.budget === 'server_monthly_usd' ? monthKey(at) : dayKey(at);
        const { created } = await this.#alerts.setIfAbsent(
          `${guildId}:${reached.budget}:${period}:${reached.threshold}`,
          true,
          ALERT_KEPT_MS,
        );
        if (!created) continue;
        const room = budgetRooms(spending.budgets, spent, at).find((candidate) => candidate.budget === reached.budget);
        if (!room) continue;
        const values = { budgetName: budgetName(room), resets: discordRelativeTime(room.resetsAt) };
        await post(
          guildId,
          channelId,
          reached.threshold === 100
            ? notice('budget.alert.used-all', values)
            : notice('budget.alert.reached', {
                ...values,
                spent: { phrase: 'cost', usdTicks: reached.spentUsdTicks },
                share: reached.threshold / 100,
              }),
        );
      }
    } catch (error) {
      // The spend is counted either way: an alert that cannot be posted is logged, not a failed video.
      this.#options.log.warn('could not post a budget alert', { guild: guildId, error });
    }
  }

  // ---- Usage -----------------------------------------------------------------------------------

  /** `/usage`: the member's day and month, what is left of each budget, and the server's when asked. */
  async usage(guildId: string, userId: string, withServer: boolean, now = Date.now()): Promise<UsageView> {
    const { spending } = await this.#options.settings(guildId);
    const [today, month, spent, days] = await Promise.all([
      this.#ledger.day(guildId, now),
      this.#ledger.month(guildId, now),
      this.#ledger.spent(guildId, userId, now, spending.budgets.server_monthly_usd > 0),
      withServer ? this.#ledger.spendByDay(guildId, now, 30) : Promise.resolve([]),
    ]);
    const view: UsageView = {
      now,
      member: { today: memberUsage(today, userId), month: ownValue(month, userId) ?? noUsage() },
      budgets: budgetRooms(spending.budgets, spent, now),
    };
    if (isUserInstallScope(guildId)) view.userInstall = userInstallRoom(this.#userInstallLimits, view.member.today, now);
    if (withServer) {
      view.server = {
        today: today.users,
        month,
        days: days.map(({ day, spend }) => ({ day, videoUsd: spend.videoUsdTicks / USD_TICKS, voiceUsd: spend.voiceUsdTicks / USD_TICKS })),
      };
    }
    return view;
  }
}

export { usdToUsdTicks };
