import { ENGLISH, SUPPORTED_LOCALES, t, type Locale } from '../../src/i18n/index.ts';
import { describe, expect, it } from 'vitest';
import { MESSAGE_LIMITS } from '../../src/discord/message-limits.ts';
import {
  budgetChange,
  checkDefaultModel,
  describeServerSettings,
  type BudgetGiven,
  type ShownFacts,
} from '../../src/settings/config-options.ts';
import { defaultGuildSettings, HISTORY_KEPT, type GuildSettings } from '../../src/settings/guild-settings.ts';
import { discordRelativeTime } from '../../src/settings/limits.ts';
import { usdToTicks } from '../../src/settings/budgets.ts';
import { formatCostIn } from '../../src/wording/cost.ts';
import { DEFAULT_PRICES, describePrices, parsePrices } from '../../src/settings/prices.ts';
import { keyNotice } from '../../src/settings/service.ts';
import { word } from '../../src/wording/notice.ts';

// `/config budget`: what it refuses (naming the option), what it keeps, the words the server's history
// records, and how `/config show` shows budgets and prices; every /config answer within one Discord message,
// whatever the server, the operator's PRICES_FILE or the admins' input hold, in every language.

const CHANNEL = '400000000000000004';
const OTHER_CHANNEL = '400000000000000005';

function given(options: Partial<BudgetGiven>): BudgetGiven {
  return {
    member_daily_usd: null,
    server_daily_usd: null,
    server_monthly_usd: null,
    confirm_over_usd: null,
    alertChannelId: null,
    clearAlertChannel: false,
    ...options,
  };
}

/** The change applied to `settings`, or the refusal's words. */
function applied(options: Partial<BudgetGiven>, settings: GuildSettings = defaultGuildSettings()) {
  const request = budgetChange(ENGLISH, given(options));
  if (!request.ok) return { refused: request.message };
  return { description: request.description, spending: request.change(settings).spending };
}

describe('/config budget', () => {
  it('asks for at least one option', () => {
    expect(applied({})).toEqual({
      refused:
        'Give at least one of `member_daily_usd`, `server_daily_usd`, `server_monthly_usd`, `alert_channel`, `confirm_over_usd`, or `clear_alert_channel`.',
    });
  });

  it.each([
    ['member_daily_usd', -1],
    ['server_daily_usd', 1_000_001],
    ['server_monthly_usd', Number.NaN],
    ['confirm_over_usd', Number.POSITIVE_INFINITY],
  ] as const)('refuses %s = %d naming the option, changing nothing', (option, value) => {
    expect(applied({ [option]: value })).toEqual({ refused: `\`${option}\` must be an amount in dollars from 0 (none) to 1,000,000.` });
  });

  it('refuses a budget under half a cent rather than turning it into no budget', () => {
    expect(applied({ server_daily_usd: 0.004 })).toEqual({ refused: '`server_daily_usd` must be at least $0.01 (or 0 for none).' });
    expect(applied({ confirm_over_usd: 0.001 })).toEqual({ refused: '`confirm_over_usd` must be at least $0.01 (or 0 for none).' });
    expect(applied({ server_daily_usd: 0.005 }).spending?.budgets.server_daily_usd).toBe(0.01);
  });

  it('keeps dollars to the cent, as the admin reads them back, and the options left out as they were', () => {
    const first = applied({ member_daily_usd: 1.234, server_daily_usd: 20, confirm_over_usd: 2.1 });
    expect(first).toEqual({
      description: 'set budgets: $1.23 per member a day, $20.00 for the server a day, confirm videos over $2.10',
      spending: { budgets: { member_daily_usd: 1.23, server_daily_usd: 20, server_monthly_usd: 0 }, confirmOverUsd: 2.1 },
    });
    const settings = { ...defaultGuildSettings(), spending: first.spending! };
    expect(applied({ server_monthly_usd: 300.999, server_daily_usd: 0 }, settings)).toEqual({
      description: 'set budgets: no budget for the server a day, $301.00 for the server a month',
      spending: { budgets: { member_daily_usd: 1.23, server_daily_usd: 0, server_monthly_usd: 301 }, confirmOverUsd: 2.1 },
    });
    expect(applied({ confirm_over_usd: 0 }, settings).description).toBe('set budgets: no confirmation');
  });

  it('sets the alert channel, keeps it while other options change, and clears it', () => {
    const set = applied({ alertChannelId: CHANNEL });
    expect(set).toMatchObject({ description: `set budgets: alerts in <#${CHANNEL}>`, spending: { alertChannelId: CHANNEL } });
    const withAlerts = { ...defaultGuildSettings(), spending: set.spending! };
    expect(applied({ server_daily_usd: 5 }, withAlerts).spending).toMatchObject({ alertChannelId: CHANNEL });
    expect(applied({ alertChannelId: OTHER_CHANNEL }, withAlerts).spending).toMatchObject({ alertChannelId: OTHER_CHANNEL });
    const cleared = applied({ clearAlertChannel: true }, withAlerts);
    expect(cleared.description).toBe('set budgets: no alerts');
    expect(cleared.spending).not.toHaveProperty('alertChannelId');
    expect(applied({ alertChannelId: CHANNEL, clearAlertChannel: true })).toEqual({
      refused: 'Give `alert_channel` or `clear_alert_channel`, not both.',
    });
  });
});

describe('/config show', () => {
  const facts: ShownFacts = {
    hasKey: true,
    canStoreKeys: true,
    keyInUse: "this server's own key",
    defaultLayer: 'compat',
    prices: describePrices(DEFAULT_PRICES),
  };
  const lineOf = (text: string, start: string) => text.split('\n').find((line) => line.startsWith(start));

  it('says when there are no budgets, and the prices in force', () => {
    const text = describeServerSettings(ENGLISH, defaultGuildSettings(), facts);
    expect(lineOf(text, '**Budgets**')).toBe(
      '**Budgets** (video and voice): no budget per member a day, no budget for the server a day, no budget a month; alerts not posted; no video waits for a confirmation',
    );
    expect(lineOf(text, '**Prices')).toBe(
      '**Prices used for estimates** (what the gateway reports is what counts): video, any model: $0.05/s at 480p, $0.08/s at 720p, $0.14/s at 1080p; voice, any model: $0.05/min',
    );
  });

  it('shows the budgets, the alert channel and the confirmation set, and prices from PRICES_FILE', () => {
    const settings = defaultGuildSettings();
    settings.spending = {
      budgets: { member_daily_usd: 1.5, server_daily_usd: 20, server_monthly_usd: 300 },
      alertChannelId: CHANNEL,
      confirmOverUsd: 2,
    };
    const parsed = parsePrices('{"video": {"svc-imagine-video-1.5": {"per_second_usd": {"720p": 0.1}}}}');
    const prices = parsed.ok ? describePrices(parsed.prices) : [];
    const text = describeServerSettings(ENGLISH, settings, { ...facts, prices });
    expect(lineOf(text, '**Budgets**')).toBe(
      `**Budgets** (video and voice): $1.50 per member a day, $20.00 for the server a day, $300.00 a month; alerts in <#${CHANNEL}>; videos estimated over $2.00 wait for their member's confirmation`,
    );
    expect(lineOf(text, '**Prices')).toContain(
      '; video, `svc-imagine-video-1.5`: $0.05/s at 480p, $0.10/s at 720p, $0.14/s at 1080p; voice',
    );
  });
});

/** A PRICES_FILE naming `count` video models and `count` voice models, with long ids. */
function manyPrices(count: number): string {
  const ids = Array.from({ length: count }, (_, index) => `provider-video-model-with-a-long-name-${String(index).padStart(3, '0')}`);
  return JSON.stringify({
    video: Object.fromEntries(ids.map((id) => [id, { per_second_usd: { '480p': 0.0123, '720p': 0.0456, '1080p': 0.0789 } }])),
    voice: Object.fromEntries(ids.map((id) => [id, { per_minute_usd: 0.0611 }])),
  });
}

/** Everything /config show has that grows, at its largest: a Discord server's 250 roles on each feature, the longest model an option takes. */
function crowdedSettings(): GuildSettings {
  const settings = defaultGuildSettings();
  const roles = Array.from({ length: 250 }, (_, index) => String(500000000000000000n + BigInt(index)));
  const longModel = 'm'.repeat(6000);
  settings.layer = 'native';
  settings.defaults = { model: longModel, resolution: '1080p', duration: 15, aspectRatio: '16:9', buttons: 'owner', variants: 4 };
  settings.storage = { keepDays: 30, publicLink: true };
  settings.roles = { video: roles, voice: roles };
  settings.limits = { concurrentPerUser: 10_000, dailyPerUser: 10_000, dailyPerServer: 10_000 };
  settings.spending = {
    budgets: { member_daily_usd: 999_999.99, server_daily_usd: 999_999.99, server_monthly_usd: 999_999.99 },
    alertChannelId: CHANNEL,
    confirmOverUsd: 999_999.99,
  };
  settings.history = Array.from({ length: HISTORY_KEPT }, (_, index) => ({
    at: Date.UTC(2026, 10, 29, 12, index),
    by: '300000000000000003',
    change: `set video defaults: ${longModel}`,
  }));
  return settings;
}

/** The facts at their longest: nothing works (an unreadable key, no encryption secret), and the prices given. */
function crowdedFacts(locale: Locale, prices: readonly string[]): ShownFacts {
  const own = t(locale, 'config.key.own', {
    lastFour: 'wxyz',
    by: '<@300000000000000003>',
    when: discordRelativeTime(Date.UTC(2026, 10, 29)),
  });
  return {
    hasKey: false,
    canStoreKeys: false,
    keyInUse: t(locale, 'config.key.in-use.broken', { own, why: word(locale, keyNotice('unreadable')) }),
    defaultLayer: 'compat',
    prices,
  };
}

describe('/config answers within one Discord message', () => {
  const parsed = parsePrices(manyPrices(50));
  if (!parsed.ok) throw new Error(parsed.message);
  const table = parsed.prices;
  const priceCount = table.video.size + table.voice.size;
  /** How many prices the line names, and how many more it says there are. */
  const counted = (locale: Locale, text: string) => {
    const line = text.split('\n').find((candidate) => candidate.startsWith(t(locale, 'config.show.prices', { prices: '' })));
    const shown =
      (line?.match(/`provider-video-model-with-a-long-name-\d+`/g) ?? []).length +
      (line?.split(t(locale, 'prices.any-model')).length ?? 1) -
      1;
    const more = [...Array(priceCount + 1).keys()].find((count) => line?.includes(t(locale, 'prices.more', { count })));
    return { shown, more };
  };

  it.each(SUPPORTED_LOCALES)("shows as many of 50 models' prices as fit, then how many more are in PRICES_FILE (%s)", (locale) => {
    const prices = describePrices(table, locale);
    const text = describeServerSettings(locale, crowdedSettings(), crowdedFacts(locale, prices));
    expect(text.length).toBeLessThanOrEqual(MESSAGE_LIMITS.content);
    const { shown, more } = counted(locale, text);
    expect(shown).toBeGreaterThan(0);
    expect(more).toBe(priceCount - shown);
    // The settings are there, whole, with the newest change at least.
    expect(text).toContain(t(locale, 'config.show.confirm-over', { amount: formatCostIn(locale, usdToTicks(999_999.99)) }));
    expect(text).toContain(t(locale, 'config.show.history'));
    expect(text.split('\n').filter((line) => line.startsWith('<t:')).length).toBeGreaterThan(0);
    expect(text).toContain(t(locale, 'config.show.more-roles', { count: 247 }));
  });

  it.each(SUPPORTED_LOCALES)('leaves room for what a change answers first (%s)', (locale) => {
    const saved = t(locale, 'config.layer.saved', { layer: 'native' });
    const room = MESSAGE_LIMITS.content - saved.length - 1;
    const text = describeServerSettings(locale, crowdedSettings(), crowdedFacts(locale, describePrices(table, locale)), room);
    expect(text.length).toBeLessThanOrEqual(room);
    expect(counted(locale, text).more).toBeGreaterThan(0);
  });

  it('names every price when they fit, with no "more"', () => {
    const text = describeServerSettings(ENGLISH, defaultGuildSettings(), crowdedFacts(ENGLISH, describePrices(DEFAULT_PRICES)));
    expect(text).not.toContain('more price');
    expect(text).toContain('voice, any model: $0.05/min');
  });

  it.each(SUPPORTED_LOCALES)("refuses a default model the key cannot use naming as many of the key's 500 models as fit (%s)", (locale) => {
    const available = Array.from({ length: 500 }, (_, index) => `provider-video-model-with-a-long-name-${index}`);
    const refusal = checkDefaultModel(locale, 'x'.repeat(6000), available) ?? '';
    expect(refusal.length).toBeLessThanOrEqual(MESSAGE_LIMITS.content);
    const named = (refusal.match(/provider-video-model-with-a-long-name-\d+/g) ?? []).length;
    expect(named).toBeGreaterThan(0);
    expect(refusal).toContain(t(locale, 'config.defaults.more-models', { count: 500 - named }));
  });
});
