import { describe, expect, it } from 'vitest';
import { MESSAGE_LIMITS } from '../../src/discord/message-limits.ts';
import { ENGLISH, SUPPORTED_LOCALES, formatList, t, type Locale } from '../../src/i18n/index.ts';
import {
  describePrices,
  describeServerSettings,
  describeServerSettingsMessages,
  describeUnavailableModel,
  describeVoiceSettings,
  type ShownFacts,
} from '../../src/interactions/settings-answers.ts';
import { VOICE_LIMITS } from '../../src/ports/voice-settings-schema.ts';
import type { VoiceSettings } from '../../src/ports/voice-settings.ts';
import { defaultVoiceSettings } from '../../src/settings/voice-settings.ts';
import { BLOCKED_WORDS_LIMITS } from '../../src/settings/blocked-words.ts';
import { usdToUsdTicks } from '../../src/settings/budgets.ts';
import { defaultGuildSettings, HISTORY_KEPT, type GuildSettings } from '../../src/settings/guild-settings.ts';
import { discordRelativeTime } from '../../src/settings/limits.ts';
import { DEFAULT_PRICES, parsePrices } from '../../src/settings/prices.ts';
import { keyNotice } from '../../src/settings/service.ts';
import { formatCostIn } from '../../src/wording/cost.ts';
import { word } from '../../src/wording/notice.ts';

// How `/config show` words budgets and prices, and every /config answer within one Discord message,
// whatever the server, the operator's PRICES_FILE or the admins' input hold, in every language.

const CHANNEL = '400000000000000004';

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

  it("says how many videos at once the server's key takes: stated, learned, or stated for a key it does not use", () => {
    const settings = defaultGuildSettings();
    const line = (shown: GuildSettings) => lineOf(describeServerSettings(ENGLISH, shown, facts), '**Key concurrency');
    expect(line(settings)).toBe('**Key concurrency:** learned from the gateway');
    settings.limits = { ...settings.limits, keyConcurrency: 2 };
    expect(line(settings)).toBe("**Key concurrency:** learned from the gateway (the 2 at once stated is for a key of the server's own)");
    settings.key = { sealed: null, lastFour: 'wxyz', setBy: '300000000000000003', setAt: 0 };
    expect(line(settings)).toBe('**Key concurrency:** 2 at once (stated)');
    // A key that cannot be opened sends nothing: the line gives its room to the rest.
    expect(lineOf(describeServerSettings(ENGLISH, settings, { ...facts, hasKey: false }), '**Key concurrency')).toBeUndefined();
  });

  it('says when a server turned off the ping for a ready video, and nothing of it while it is on (the default)', () => {
    const settings = defaultGuildSettings();
    expect(lineOf(describeServerSettings(ENGLISH, settings, facts), '**Ping when')).toBeUndefined();
    settings.defaults = { ping: 'off' };
    expect(lineOf(describeServerSettings(ENGLISH, settings, facts), '**Ping when')).toBe(
      '**Ping when ready:** off: members are not told when their video is ready',
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
  // The server's own key, which cannot be opened (crowdedFacts): /config show leaves out the key concurrency stated for it.
  settings.key = { sealed: null, lastFour: 'wxyz', setBy: '300000000000000003', setAt: Date.UTC(2026, 10, 29) };
  settings.limits = { concurrentPerUser: 10_000, dailyPerUser: 10_000, dailyPerServer: 10_000, keyConcurrency: 100 };
  settings.spending = {
    budgets: { member_daily_usd: 999_999.99, server_daily_usd: 999_999.99, server_monthly_usd: 999_999.99 },
    alertChannelId: CHANNEL,
    confirmOverUsd: 999_999.99,
  };
  // The moderators' rules at their most: /config show counts them, names two channels and the log channel.
  settings.rules = {
    blockedWords: Array.from({ length: BLOCKED_WORDS_LIMITS.rules }, (_, index) => `word ${index}`),
    videoChannels: Array.from({ length: 500 }, (_, index) => String(400000000000000000n + BigInt(index))),
    denied: Array.from({ length: 10_000 }, (_, index) => String(600000000000000000n + BigInt(index))),
    logChannelId: CHANNEL,
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
    const messages = describeServerSettingsMessages(locale, crowdedSettings(), crowdedFacts(locale, prices));
    for (const message of messages) expect(message.length).toBeLessThanOrEqual(MESSAGE_LIMITS.content);
    const text = messages.join('\n');
    // The settings whole in the first message: the moderators' rules, and the budgets, the last of them.
    const channels = formatList(locale, [
      '<#400000000000000000>',
      '<#400000000000000001>',
      t(locale, 'config.show.more-channels', { count: 498 }),
    ]);
    expect(messages[0]).toContain(
      t(locale, 'config.show.rules', {
        words: 200,
        where: t(locale, 'config.show.rules-only-in', { channels }),
        denied: 10_000,
        log: t(locale, 'config.show.rules-log', { channel: `<#${CHANNEL}>` }),
      }),
    );
    expect(messages[0]).toContain(t(locale, 'config.show.confirm-over', { amount: formatCostIn(locale, usdToUsdTicks(999_999.99)) }));
    const { shown, more } = counted(locale, text);
    expect(shown).toBeGreaterThan(0);
    expect(more).toBe(priceCount - shown);
    // The settings are there, whole, with the newest change at least.
    expect(text).toContain(t(locale, 'config.show.confirm-over', { amount: formatCostIn(locale, usdToUsdTicks(999_999.99)) }));
    expect(text).toContain(t(locale, 'config.show.history'));
    expect(text.split('\n').filter((line) => line.startsWith('<t:')).length).toBeGreaterThan(0);
    expect(text).toContain(t(locale, 'config.show.more-roles', { count: 247 }));
  });

  it.each(SUPPORTED_LOCALES)(
    "shows a key concurrency stated on the operator's key, the longest it is said, with prices and history (%s)",
    (locale) => {
      const { key: _unused, ...settings } = crowdedSettings();
      const facts: ShownFacts = {
        ...crowdedFacts(locale, describePrices(table, locale)),
        hasKey: true,
        keyInUse: t(locale, 'config.key.in-use.operator'),
      };
      const messages = describeServerSettingsMessages(locale, settings, facts);
      for (const message of messages) expect(message.length).toBeLessThanOrEqual(MESSAGE_LIMITS.content);
      const text = messages.join('\n');
      expect(messages[0]).toContain(t(locale, 'config.show.key-concurrency', { stated: 'unused', count: 100 }));
      expect(counted(locale, text).shown).toBeGreaterThan(0);
      expect(text.split('\n').filter((line) => line.startsWith('<t:')).length).toBeGreaterThan(0);
    },
  );

  it.each(SUPPORTED_LOCALES)('answers a change with what it says first, the settings whole, then prices and changes (%s)', (locale) => {
    const saved = t(locale, 'config.layer.saved', { layer: 'native' });
    const messages = describeServerSettingsMessages(locale, crowdedSettings(), crowdedFacts(locale, describePrices(table, locale)), saved);
    for (const message of messages) expect(message.length).toBeLessThanOrEqual(MESSAGE_LIMITS.content);
    expect(messages[0]?.startsWith(`${saved}\n`)).toBe(true);
    const text = messages.join('\n');
    expect(text).toContain(t(locale, 'config.show.confirm-over', { amount: formatCostIn(locale, usdToUsdTicks(999_999.99)) }));
    const { shown, more } = counted(locale, text);
    expect(shown).toBeGreaterThan(0);
    expect(more).toBe(priceCount - shown);
    expect(text.split('\n').filter((line) => line.startsWith('<t:')).length).toBeGreaterThan(0);
  });

  it('answers in one message when everything fits', () => {
    const saved = t(ENGLISH, 'config.saved');
    const messages = describeServerSettingsMessages(
      ENGLISH,
      defaultGuildSettings(),
      crowdedFacts(ENGLISH, describePrices(DEFAULT_PRICES)),
      saved,
    );
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain('**Rules:** none');
    expect(messages[0]).toContain('voice, any model: $0.05/min');
  });

  it('names every price when they fit, with no "more"', () => {
    const text = describeServerSettings(ENGLISH, defaultGuildSettings(), crowdedFacts(ENGLISH, describePrices(DEFAULT_PRICES)));
    expect(text).not.toContain('more price');
    expect(text).toContain('voice, any model: $0.05/min');
  });

  it.each(SUPPORTED_LOCALES)("refuses a default model the key cannot use naming as many of the key's 500 models as fit (%s)", (locale) => {
    const available = Array.from({ length: 500 }, (_, index) => `provider-video-model-with-a-long-name-${index}`);
    const refusal = describeUnavailableModel(locale, { model: 'x'.repeat(6000), available });
    expect(refusal.length).toBeLessThanOrEqual(MESSAGE_LIMITS.content);
    const named = (refusal.match(/provider-video-model-with-a-long-name-\d+/g) ?? []).length;
    expect(named).toBeGreaterThan(0);
    expect(refusal).toContain(t(locale, 'config.defaults.more-models', { count: 500 - named }));
  });
});

describe('/voice settings at its largest', () => {
  // Everything the answer repeats from the settings at the most a change may set: the longest instructions,
  // ten wake words of the longest kind (emoji in them), a long model id, and the change's "saved" line and
  // next-join note around it.
  const largest: VoiceSettings = {
    ...defaultVoiceSettings('svc'),
    instructions: '🧑🏽‍🚀'.repeat(VOICE_LIMITS.instructionsLength / '🧑🏽‍🚀'.length),
    wakeWords: Array.from({ length: VOICE_LIMITS.wakeWords }, (_, index) => `${index}${'🦊'.repeat(19)}`),
    respond: 'when_named',
    model: `svc-realtime-${'x'.repeat(200)}`,
    language: 'ja',
    updatedBy: '400000000000000005',
    updatedAt: Date.UTC(2026, 10, 29),
  };

  it.each(SUPPORTED_LOCALES)('fits one message with its saved line and note in %s', (locale) => {
    const answer = `${t(locale, 'config.saved')}\n${describeVoiceSettings(locale, largest)}\n${t(locale, 'voice.settings.next-join')}`;
    expect(answer.length).toBeLessThanOrEqual(MESSAGE_LIMITS.content);
    // Each wake word is named whole.
    for (const wakeWord of largest.wakeWords) expect(answer).toContain(wakeWord);
  });
});
