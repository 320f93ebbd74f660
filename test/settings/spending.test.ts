import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { USD_TICKS } from '../../src/gateway/spec.ts';
import { GatewayClientPool } from '../../src/gateway/pool.ts';
import { dayKey } from '../../src/lib/day-key.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { isRecord } from '../../src/lib/json.ts';
import { LimitReachedError, type MemberTask, type SpendReservation, type TaskCost } from '../../src/ports/guild-policy.ts';
import { BUDGET_NAMES, type Budgets } from '../../src/settings/guild-settings.ts';
import { budgetChange } from '../../src/settings/config-options.ts';
import { DEFAULT_PRICES } from '../../src/settings/prices.ts';
import { SettingsService } from '../../src/settings/service.ts';
import { formatUsage } from '../../src/settings/usage-report.ts';
import { monthKey } from '../../src/settings/usage.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { ENGLISH, resolveLocale, t, type Locale } from '../../src/i18n/index.ts';
import { formatCostIn, formatEstimateIn } from '../../src/wording/cost.ts';
import { budgetName } from '../../src/settings/budgets.ts';
import { word } from '../../src/wording/notice.ts';

// What a server's key spends, on the real stores: reservations against the budgets at submission (two
// members, and two workers, against the last dollar), what a finished task counts, voice metering,
// the 80% / 100% alerts once each across workers and restarts, and /usage as a member reads it. On the
// shared Redis each test uses a server of its own and deletes its records after; nothing is flushed.

const SHARED_REDIS = 'redis://127.0.0.1:6379';
const CENTS = USD_TICKS / 100;
const DAY = Date.UTC(2026, 10, 17, 15);
const MIDNIGHT_AFTER = Date.UTC(2026, 10, 18);
const FIRST_OF_DECEMBER = Date.UTC(2026, 11, 1);
const VOICE_MODEL = 'svc-voice-1';

const opened: Store[] = [];
const pools: GatewayClientPool[] = [];
const directories: string[] = [];
/** Records on the shared collections a test may have written: [collection, id], deleted after it. */
const written: [collection: string, id: string][] = [];
/** The url of the test's stores, where its records are deleted. */
let location: string | undefined;

afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
  await Promise.all(opened.splice(0).map((store) => store.close()));
  const leftovers = written.splice(0);
  if (location?.startsWith('redis://') && leftovers.length > 0) {
    const janitor = await openStore(location, silentLogger);
    const collections = new Map<string, ReturnType<Store['collection']>>();
    for (const [name, id] of leftovers) {
      let collection = collections.get(name);
      if (!collection) collections.set(name, (collection = janitor.collection(name, (raw) => raw)));
      await collection.delete(id);
    }
    await janitor.close();
  }
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
  location = undefined;
});

function sqliteUrl(): string {
  const directory = mkdtempSync(join(tmpdir(), 'spending-'));
  directories.push(directory);
  return `sqlite://${join(directory, 'bot.sqlite')}`;
}

async function open(url: string): Promise<Store> {
  const store = await openStore(url, silentLogger);
  opened.push(store);
  location = url;
  return store;
}

/** What a worker posted in alert channels, and counted as spent for the operator's metric. */
interface Observed {
  alerts: { channelId: string; content: string }[];
  metrics: string[];
}

/** A worker's settings service as the bot builds it, posting alerts into `observed` (no request reaches a gateway). */
async function worker(url: string, observed: Observed = { alerts: [], metrics: [] }): Promise<SettingsService> {
  const clients = new GatewayClientPool({ baseUrl: 'http://127.0.0.1:9', log: silentLogger });
  pools.push(clients);
  return new SettingsService({
    store: await open(url),
    clients,
    log: silentLogger,
    operatorKey: undefined,
    defaultLayer: 'compat',
    gatewayVendor: 'svc',
    encryptionSecret: undefined,
    prices: DEFAULT_PRICES,
    postAlert: (_guildId, channelId, alert) => {
      observed.alerts.push({ channelId, content: word(ENGLISH, alert) });
      return Promise.resolve();
    },
    metrics: { spend: (feature, kind, usd) => observed.metrics.push(`${feature} ${kind} ${usd}`) },
  });
}

/** A server id no other test (or earlier run) uses, whose records on `moments`' days and months are deleted after. */
function newGuild(...moments: number[]): string {
  const guild = `9${BigInt(`0x${randomUUID().replaceAll('-', '').slice(0, 14)}`).toString()}`;
  written.push(['guild_settings', guild]);
  for (const at of [DAY, ...moments]) {
    written.push(['usage_days', `${guild}:${dayKey(at)}`], ['usage_months', `${guild}:${monthKey(at)}`]);
    for (const budget of BUDGET_NAMES)
      for (const period of [dayKey(at), monthKey(at)])
        for (const threshold of [80, 100]) written.push(['budget_alerts', `${guild}:${budget}:${period}:${threshold}`]);
  }
  return guild;
}

function member(index: number): string {
  return `30000000000000${String(index).padStart(4, '0')}`;
}

/** `/config budget` as an admin uses it. */
async function setBudgets(settings: SettingsService, guild: string, budgets: Partial<Budgets>, alertChannelId?: string): Promise<void> {
  const request = budgetChange({
    member_daily_usd: budgets.member_daily_usd ?? null,
    server_daily_usd: budgets.server_daily_usd ?? null,
    server_monthly_usd: budgets.server_monthly_usd ?? null,
    confirm_over_usd: null,
    alertChannelId: alertChannelId ?? null,
    clearAlertChannel: false,
  });
  if (!request.ok) throw new Error(word(ENGLISH, request.notice));
  await settings.update(guild, member(0), request.description, request.change);
}

function memberTask(guildId: string, userId: string, createdAt = DAY): MemberTask {
  return { guildId, userId, createdAt };
}

/** A task id no other test uses, deleted after. */
function taskId(guild: string, name: string): string {
  const id = `${guild}-${name}`;
  written.push(['usage_costed_tasks', id]);
  return id;
}

function finished(
  task: MemberTask,
  id: string,
  reservation: SpendReservation | undefined,
  outcome: { costUsdTicks?: number; madeVideo: boolean },
): TaskCost {
  return { ...task, taskId: id, reservation, costUsdTicks: outcome.costUsdTicks, madeVideo: outcome.madeVideo };
}

/** What each submission came to: its reservation, or the words it was refused in. */
/** The submissions admitted, and the refusals as a member reading `locale` reads them. */
async function submitted(
  submissions: Promise<SpendReservation>[],
  locale: Locale = ENGLISH,
): Promise<{ admitted: SpendReservation[]; refused: string[] }> {
  const outcomes = await Promise.allSettled(submissions);
  const refused = outcomes.flatMap((outcome) => {
    if (outcome.status === 'fulfilled') return [];
    const error: unknown = outcome.reason;
    if (!(error instanceof LimitReachedError)) throw error;
    return [word(locale, error.notice)];
  });
  return { admitted: outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : [])), refused };
}

/** What /usage shows `userId` (a server manager: with the server's part). */
async function usageText(settings: SettingsService, guild: string, userId: string, at = DAY): Promise<string> {
  return formatUsage(ENGLISH, await settings.spending.usage(guild, userId, true, at));
}

describe.each([
  ['sqlite', sqliteUrl],
  ['redis', () => SHARED_REDIS],
])('spending on %s', (_kind, url) => {
  it('admits exactly one of two members submitting at once against the last dollar of the server budget', async () => {
    const settings = await worker(url());
    const guild = newGuild();
    await setBudgets(settings, guild, { server_daily_usd: 1 });
    await settings.recordSubmission(memberTask(guild, member(1)), 60 * CENTS);

    const { admitted, refused } = await submitted([
      settings.recordSubmission(memberTask(guild, member(2)), 40 * CENTS),
      settings.recordSubmission(memberTask(guild, member(3)), 40 * CENTS),
    ]);
    expect(admitted).toEqual([{ estimateUsdTicks: 40 * CENTS, month: false }]);
    expect(refused).toEqual([
      `This video (about $0.40) would pass this server's daily budget ($1.00): $0.00 is left today. It starts over <t:${MIDNIGHT_AFTER / 1000}:R>.`,
    ]);
  });

  it("refuses a submission past the daily or the monthly budget in the member's language", async () => {
    const settings = await worker(url());
    const guild = newGuild();
    await setBudgets(settings, guild, { server_daily_usd: 1, server_monthly_usd: 1.5 });
    await settings.recordSubmission(memberTask(guild, member(1)), 80 * CENTS);
    const daily = await submitted(
      [settings.recordSubmission(memberTask(guild, member(2)), 40 * CENTS)],
      resolveLocale('de', undefined, 'member'),
    );
    const nextDay = await submitted(
      [settings.recordSubmission(memberTask(guild, member(2), MIDNIGHT_AFTER), 80 * CENTS)],
      resolveLocale('fr', undefined, 'member'),
    );
    written.push(['usage_days', `${guild}:${dayKey(MIDNIGHT_AFTER)}`]);
    const refusal = (
      code: string,
      budget: 'server_daily_usd' | 'server_monthly_usd',
      limitUsd: number,
      leftUsd: number,
      resets: number,
    ) => {
      const locale = resolveLocale(code, undefined, 'member');
      return t(locale, 'budget.video-would-pass', {
        estimate: formatEstimateIn(locale, (budget === 'server_daily_usd' ? 40 : 80) * CENTS),
        budgetName: word(locale, budgetName({ budget, limitUsdTicks: limitUsd * USD_TICKS })),
        left: formatCostIn(locale, leftUsd * USD_TICKS),
        budget,
        resets: `<t:${resets / 1000}:R>`,
      });
    };
    expect(daily.refused).toEqual([refusal('de', 'server_daily_usd', 1, 0.2, MIDNIGHT_AFTER)]);
    expect(nextDay.refused).toEqual([refusal('fr', 'server_monthly_usd', 1.5, 0.7, FIRST_OF_DECEMBER)]);
    expect(daily.refused[0]).toContain('Tagesbudget');
  });

  it('admits exactly up to the budget when two workers admit many members at once', async () => {
    const here = url();
    const first = await worker(here);
    const second = await worker(here);
    const guild = newGuild();
    await setBudgets(first, guild, { server_daily_usd: 1.2, server_monthly_usd: 2 });
    const round = (count: number, offset: number) =>
      submitted(
        Array.from({ length: count }, (_, index) =>
          (index % 2 === 0 ? first : second).recordSubmission(memberTask(guild, member(offset + index)), 40 * CENTS),
        ),
      );
    // $1.20 a day: three videos of $0.40, the third bringing the spend to exactly the budget.
    const today = await round(10, 1);
    expect(today.admitted).toHaveLength(3);
    expect(today.refused).toHaveLength(7);
    expect(today.refused[0]).toContain("this server's daily budget ($1.20)");
    // The next day, the month's $2.00 holds: two more, not three.
    const nextDay = await submitted(
      Array.from({ length: 10 }, (_, index) =>
        (index % 2 === 0 ? first : second).recordSubmission(memberTask(guild, member(20 + index), MIDNIGHT_AFTER), 40 * CENTS),
      ),
    );
    written.push(['usage_days', `${guild}:${dayKey(MIDNIGHT_AFTER)}`]);
    expect(nextDay.admitted).toHaveLength(2);
    // A refusal names the monthly budget; one that met a submission the month was about to refuse names the daily one.
    expect(nextDay.refused).toContain(
      `This video (about $0.40) would pass this server's monthly budget ($2.00): $0.00 is left this month. It starts over <t:${FIRST_OF_DECEMBER / 1000}:R>.`,
    );
    for (const refusal of nextDay.refused) expect(refusal).toMatch(/this server's (monthly budget \(\$2\.00\)|daily budget \(\$1\.20\))/);
    // Refused ones count nowhere: the day shows the videos admitted, not the attempts.
    expect(await usageText(second, guild, member(1), MIDNIGHT_AFTER)).toContain(
      '**Server today (Nov 18, 2026 UTC)**: 2 videos, $0.00, $0.80 reserved for videos in progress; no voice',
    );
  });

  it('gives a refunded task its estimate back, and a refused submission too', async () => {
    const settings = await worker(url());
    const guild = newGuild();
    await setBudgets(settings, guild, { member_daily_usd: 1 });
    const task = memberTask(guild, member(1));
    const reservation = await settings.recordSubmission(task, 60 * CENTS);
    expect((await submitted([settings.recordSubmission(task, 60 * CENTS)])).refused[0]).toContain(
      'your daily budget on this server ($1.00): $0.40 is left today',
    );

    // The gateway failed it: nothing was made, nothing is charged.
    await settings.recordCost(finished(task, taskId(guild, 'failed'), reservation, { madeVideo: false }));
    const again = await settings.recordSubmission(task, 60 * CENTS);
    // The gateway refused the submission itself: given back, and not counted as a video.
    await settings.releaseSubmission(task, again);
    await settings.recordSubmission(task, USD_TICKS);
    expect(await usageText(settings, guild, member(1))).toContain(
      '**Your usage today** (Nov 17, 2026 UTC): 2 videos, $0.00, $1.00 reserved for videos in progress; no voice',
    );
  });

  it('counts a finished task at its reported cost, or at its estimate marked as estimated, once however often it is seen', async () => {
    const here = url();
    const observed: Observed = { alerts: [], metrics: [] };
    const first = await worker(here, observed);
    const second = await worker(here, observed);
    const guild = newGuild();
    await setBudgets(first, guild, { member_daily_usd: 2 });
    const task = memberTask(guild, member(1));
    const pricedId = taskId(guild, 'priced');
    const silentId = taskId(guild, 'silent');
    const priced = await first.recordSubmission(task, 60 * CENTS);
    const silent = await first.recordSubmission(task, 40 * CENTS);

    const pricedCost = finished(task, pricedId, priced, { costUsdTicks: 25 * CENTS, madeVideo: true });
    const silentCost = finished(task, silentId, silent, { madeVideo: true });
    await Promise.all([
      first.recordCost(pricedCost),
      second.recordCost(pricedCost),
      first.recordCost(silentCost),
      second.recordCost(silentCost),
    ]);
    // A restart sees both finish again.
    const restarted = await worker(here, observed);
    await restarted.recordCost(pricedCost);
    await restarted.recordCost(silentCost);

    expect(await usageText(restarted, guild, member(1))).toContain(
      '**Your usage today** (Nov 17, 2026 UTC): 2 videos, $0.25 + about $0.40 estimated (1 without a reported cost); no voice',
    );
    // What is left is the budget less what was counted: $2.00 - $0.25 - $0.40.
    expect((await restarted.spending.usage(guild, member(1), false, DAY)).budgets).toEqual([
      { budget: 'member_daily_usd', limitUsdTicks: 200 * CENTS, leftUsdTicks: 135 * CENTS, resetsAt: MIDNIGHT_AFTER },
    ]);
    expect(observed.metrics.sort()).toEqual(['video estimated 0.4', 'video reported 0.25']);
  });

  it('reserves in the month record only with a monthly budget, and releases it there', async () => {
    const here = url();
    const settings = await worker(here);
    const reader = (await open(here)).collection('usage_months', (raw) => raw);
    const monthRecord = async (guild: string) => {
      const record = await reader.get(`${guild}:${monthKey(DAY)}`);
      return isRecord(record) ? record : undefined;
    };
    const daily = newGuild();
    await setBudgets(settings, daily, { server_daily_usd: 5 });
    await settings.recordSubmission(memberTask(daily, member(1)), 60 * CENTS);
    expect(await monthRecord(daily)).toBeUndefined();

    const monthly = newGuild();
    await setBudgets(settings, monthly, { server_monthly_usd: 1 });
    const task = memberTask(monthly, member(1));
    const kept = await settings.recordSubmission(task, 60 * CENTS);
    const released = await settings.recordSubmission(task, 30 * CENTS);
    expect([kept, released]).toEqual([
      { estimateUsdTicks: 60 * CENTS, month: true },
      { estimateUsdTicks: 30 * CENTS, month: true },
    ]);
    expect(await monthRecord(monthly)).toMatchObject({ reservedUsdTicks: 90 * CENTS });
    expect((await submitted([settings.recordSubmission(memberTask(monthly, member(2)), 20 * CENTS)])).refused[0]).toContain(
      "this server's monthly budget ($1.00): $0.10 is left this month",
    );

    await settings.releaseSubmission(task, released);
    expect(await monthRecord(monthly)).toMatchObject({ reservedUsdTicks: 60 * CENTS });
    await settings.recordCost(finished(task, taskId(monthly, 'kept'), kept, { costUsdTicks: 50 * CENTS, madeVideo: true }));
    expect(await monthRecord(monthly)).toMatchObject({
      reservedUsdTicks: 0,
      days: { '17': { videoUsdTicks: 50 * CENTS, voiceUsdTicks: 0 } },
    });
    expect(await settings.recordSubmission(memberTask(monthly, member(2)), 50 * CENTS)).toEqual({
      estimateUsdTicks: 50 * CENTS,
      month: true,
    });
  });

  it('starts a monthly budget over on the first moment of the month', async () => {
    const settings = await worker(url());
    const lastMoment = Date.UTC(2026, 10, 30, 23, 59, 59, 999);
    const guild = newGuild(lastMoment, FIRST_OF_DECEMBER);
    await setBudgets(settings, guild, { server_monthly_usd: 1 });
    await settings.recordSubmission(memberTask(guild, member(1), lastMoment), USD_TICKS);
    expect((await submitted([settings.recordSubmission(memberTask(guild, member(1), lastMoment), CENTS)])).refused[0]).toContain(
      `It starts over <t:${FIRST_OF_DECEMBER / 1000}:R>.`,
    );
    expect(await settings.recordSubmission(memberTask(guild, member(1), FIRST_OF_DECEMBER), USD_TICKS)).toMatchObject({ month: true });
  });

  it('posts the 80% and 100% alerts once each, from two workers at once and after a restart', async () => {
    const here = url();
    const observed: Observed = { alerts: [], metrics: [] };
    const first = await worker(here, observed);
    const second = await worker(here, observed);
    const guild = newGuild();
    const channel = '400000000000000004';
    await setBudgets(first, guild, { server_daily_usd: 10, server_monthly_usd: 20 }, channel);
    const spendOnBoth = (count: number, offset: number) =>
      Promise.all(
        Array.from({ length: count }, (_, index) =>
          (index % 2 === 0 ? first : second).recordSubmission(memberTask(guild, member(offset + index)), USD_TICKS),
        ),
      );

    await spendOnBoth(7, 1);
    expect(observed.alerts).toEqual([]);
    await spendOnBoth(2, 10);
    expect(observed.alerts.map((alert) => alert.channelId)).toEqual([channel]);
    expect(observed.alerts[0]!.content).toMatch(
      new RegExp(
        `^⚠️ This server has spent \\$(8|9)\\.00, 80% of this server's daily budget \\(\\$10\\.00\\)\\. It starts over <t:${MIDNIGHT_AFTER / 1000}:R>\\.$`,
      ),
    );
    await spendOnBoth(1, 20);
    expect(observed.alerts.slice(1)).toEqual([
      {
        channelId: channel,
        content: `🛑 This server has used all of this server's daily budget ($10.00): new videos and voice conversations are refused until it starts over <t:${MIDNIGHT_AFTER / 1000}:R>.`,
      },
    ]);

    // After a restart, voice still counted over the budget posts nothing again.
    const restarted = await worker(here, observed);
    await restarted.spending.meter({ guildId: guild, userId: member(1), model: VOICE_MODEL, ms: 60_000, at: DAY });
    expect(observed.alerts).toHaveLength(2);
    // The month's 80% ($16 of $20) is its own alert, reached the next day, once.
    const nextDay = DAY + 86_400_000;
    written.push(['usage_days', `${guild}:${dayKey(nextDay)}`]);
    for (const threshold of [80, 100]) written.push(['budget_alerts', `${guild}:server_daily_usd:${dayKey(nextDay)}:${threshold}`]);
    await Promise.all(
      Array.from({ length: 6 }, (_, index) =>
        (index % 2 === 0 ? first : restarted).recordSubmission(memberTask(guild, member(30 + index), nextDay), USD_TICKS),
      ),
    );
    expect(observed.alerts.slice(2).map((alert) => alert.content)).toEqual([
      `⚠️ This server has spent $16.05, 80% of this server's monthly budget ($20.00). It starts over <t:${FIRST_OF_DECEMBER / 1000}:R>.`,
    ]);
  });

  it("meters voice for the member and the server, in the day's and the month's records, and stops it at the budget", async () => {
    const here = url();
    const observed: Observed = { alerts: [], metrics: [] };
    const first = await worker(here, observed);
    const second = await worker(here, observed);
    const guild = newGuild();
    await setBudgets(first, guild, { member_daily_usd: 0.1, server_monthly_usd: 50 });
    const use = { guildId: guild, userId: member(1), model: VOICE_MODEL, at: DAY };

    expect(await first.spending.checkStart(guild, member(1), DAY)).toEqual({ ok: true });
    const [left] = await Promise.all([first.spending.meter({ ...use, ms: 30_000 }), second.spending.meter({ ...use, ms: 30_000 })]);
    expect(word(ENGLISH, left.reason!)).toBe(
      `Your daily budget on this server ($0.10) is used up; it starts over <t:${MIDNIGHT_AFTER / 1000}:R>.`,
    );
    // $0.05 a minute: a minute of $0.10 spent, or half of it when the other worker's half lands after.
    expect([60_000, 90_000]).toContain(Math.round(left.msLeft!));
    expect(Math.round((await second.spending.meter({ ...use, ms: 0 })).msLeft!)).toBe(60_000);
    // What the conversation says aloud, in its own language (/voice settings language).
    const french = resolveLocale('fr', undefined, 'member');
    expect(word(french, left.reason!)).toBe(
      t(french, 'budget.used-up', {
        budget: 'member_daily_usd',
        amount: formatCostIn(french, 10 * CENTS),
        resets: `<t:${MIDNIGHT_AFTER / 1000}:R>`,
      }),
    );

    await second.spending.meter({ ...use, ms: 60_000 });
    const refused = await first.spending.checkStart(guild, member(1), DAY);
    expect(refused.ok || word(ENGLISH, refused.notice)).toBe(
      `I cannot start a conversation: your daily budget on this server ($0.10) is used up; it starts over <t:${MIDNIGHT_AFTER / 1000}:R>.`,
    );
    // Another member is not held by this member's budget.
    expect(await first.spending.checkStart(guild, member(2), DAY)).toEqual({ ok: true });
    expect(await usageText(second, guild, member(1))).toContain(
      '**Your usage today** (Nov 17, 2026 UTC): 0 videos, $0.00; voice 2 min, about $0.10 (estimated)',
    );
    const view = await first.spending.usage(guild, member(1), true, DAY);
    expect(view.member.month).toMatchObject({ voiceMs: 120_000, voiceUsdTicks: 10 * CENTS });
    expect(view.server?.days.at(-1)).toEqual({ day: '2026-11-17', videoUsd: 0, voiceUsd: 0.1 });
    expect(view.budgets.map((budget) => [word(ENGLISH, budgetName(budget)), budget.leftUsdTicks])).toEqual([
      ['your daily budget on this server ($0.10)', 0],
      ["this server's monthly budget ($50.00)", 4990 * CENTS],
    ]);
    expect(observed.metrics).toEqual(['voice estimated 0.025', 'voice estimated 0.025', 'voice estimated 0.05']);
  });

  it('shows /usage to a member and, with the server, every member, today and this month', async () => {
    const settings = await worker(url());
    const earlier = Date.UTC(2026, 10, 3, 9);
    const guild = newGuild(earlier);
    await setBudgets(settings, guild, { member_daily_usd: 3, server_monthly_usd: 100 });
    const alice = memberTask(guild, member(1));
    const priced = await settings.recordSubmission(alice, 64 * CENTS);
    await settings.recordCost(finished(alice, taskId(guild, 'a1'), priced, { costUsdTicks: 64 * CENTS, madeVideo: true }));
    const silent = await settings.recordSubmission(alice, 40 * CENTS);
    await settings.recordCost(finished(alice, taskId(guild, 'a2'), silent, { madeVideo: true }));
    await settings.recordSubmission(alice, 48 * CENTS);
    await settings.spending.meter({ guildId: guild, userId: member(1), model: VOICE_MODEL, ms: 600_000, at: DAY });
    const bobEarlier = memberTask(guild, member(2), earlier);
    const bobs = await settings.recordSubmission(bobEarlier, 3 * USD_TICKS);
    await settings.recordCost(finished(bobEarlier, taskId(guild, 'b1'), bobs, { costUsdTicks: 3 * USD_TICKS, madeVideo: true }));

    expect(await usageText(settings, guild, member(1))).toBe(
      [
        '**Your usage today** (Nov 17, 2026 UTC): 3 videos, $0.64 + about $0.40 estimated (1 without a reported cost), $0.48 reserved for videos in progress; voice 10 min, about $0.50 (estimated)',
        '**Your usage this month** (November 2026): 3 videos, $0.64 + about $0.40 estimated (1 without a reported cost), $0.48 reserved for videos in progress; voice 10 min, about $0.50 (estimated)',
        `**Budgets:** your daily budget on this server ($3.00): $0.98 left, starts over <t:${MIDNIGHT_AFTER / 1000}:R>; this server's monthly budget ($100.00): $94.98 left, starts over <t:${FIRST_OF_DECEMBER / 1000}:R>`,
        '',
        '**Server today (Nov 17, 2026 UTC)**: 3 videos, $0.64 + about $0.40 estimated (1 without a reported cost), $0.48 reserved for videos in progress; voice 10 min, about $0.50 (estimated)',
        `<@${member(1)}>: 3 videos, $0.64 + about $0.40 estimated (1 without a reported cost), $0.48 reserved for videos in progress; voice 10 min, about $0.50 (estimated)`,
        '',
        '**Server this month (November 2026)**: 4 videos, $3.64 + about $0.40 estimated (1 without a reported cost), $0.48 reserved for videos in progress; voice 10 min, about $0.50 (estimated)',
        `<@${member(2)}>: 1 video, $3.00; no voice`,
        `<@${member(1)}>: 3 videos, $0.64 + about $0.40 estimated (1 without a reported cost), $0.48 reserved for videos in progress; voice 10 min, about $0.50 (estimated)`,
      ].join('\n'),
    );
    // A member without Manage Server sees their own lines only.
    const own = formatUsage(ENGLISH, await settings.spending.usage(guild, member(2), false, DAY));
    expect(own).toContain('**Your usage today** (Nov 17, 2026 UTC): 0 videos, $0.00; no voice');
    expect(own).toContain('**Your usage this month** (November 2026): 1 video, $3.00; no voice');
    expect(own).not.toContain('Server');
  });

  it("charts the server's spend per day across a month's end", async () => {
    const settings = await worker(url());
    const lastOfOctober = Date.UTC(2026, 9, 31, 22);
    const firstOfNovember = Date.UTC(2026, 10, 1, 1);
    const asked = Date.UTC(2026, 10, 2, 12);
    const guild = newGuild(lastOfOctober, firstOfNovember, asked);
    const october = memberTask(guild, member(1), lastOfOctober);
    const reservation = await settings.recordSubmission(october, 64 * CENTS);
    await settings.recordCost(finished(october, taskId(guild, 'oct'), reservation, { costUsdTicks: 64 * CENTS, madeVideo: true }));
    await settings.spending.meter({ guildId: guild, userId: member(1), model: VOICE_MODEL, ms: 120_000, at: firstOfNovember });

    expect(await settings.spending.ledger.spendByDay(guild, asked, 5)).toEqual([
      { day: '2026-10-29', spend: { videoUsdTicks: 0, voiceUsdTicks: 0 } },
      { day: '2026-10-30', spend: { videoUsdTicks: 0, voiceUsdTicks: 0 } },
      { day: '2026-10-31', spend: { videoUsdTicks: 64 * CENTS, voiceUsdTicks: 0 } },
      { day: '2026-11-01', spend: { videoUsdTicks: 0, voiceUsdTicks: 10 * CENTS } },
      { day: '2026-11-02', spend: { videoUsdTicks: 0, voiceUsdTicks: 0 } },
    ]);
    const days = (await settings.spending.usage(guild, member(1), true, asked)).server!.days;
    expect(days).toHaveLength(30);
    expect(days.filter((day) => day.videoUsd + day.voiceUsd > 0)).toEqual([
      { day: '2026-10-31', videoUsd: 0.64, voiceUsd: 0 },
      { day: '2026-11-01', videoUsd: 0, voiceUsd: 0.1 },
    ]);
    // This month's report no longer counts October's video.
    expect(await usageText(settings, guild, member(1), asked)).toContain(
      '**Your usage this month** (November 2026): 0 videos, $0.00; voice 2 min, about $0.10 (estimated)',
    );
  });
});
