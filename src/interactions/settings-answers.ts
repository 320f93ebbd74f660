import { MESSAGE_LIMITS } from '../discord/message-limits.ts';
import { RESOLUTIONS, type Layer } from '../gateway/spec.ts';
import { ENGLISH, formatList, formatNumber, languageName, t, translator, type Locale } from '../i18n/index.ts';
import { shorten } from '../lib/text.ts';
import { BLOCKED_WORDS_LIMITS } from '../settings/blocked-words.ts';
import { usdToUsdTicks } from '../settings/budgets.ts';
import type { UnavailableModel } from '../settings/config-options.ts';
import type { GuildSettings, ServerRules } from '../settings/guild-settings.ts';
import { ANY_MODEL, type PriceTable } from '../settings/prices.ts';
import type { SettingsService } from '../settings/service.ts';
import { SERVER_LANGUAGE } from '../settings/voice-settings.ts';
import type { VoiceSettings } from '../ports/voice-settings.ts';
import { formatCostIn } from '../wording/cost.ts';
import { word } from '../wording/notice.ts';

// What /config and /voice settings say of a server's settings, in the admin's language: `/config show`,
// what every change answers with, a default model the key cannot use, and the voice settings. The
// settings part gives the facts; this words them, and fits each answer in one Discord message.

/**
 * What /config shows of what grows with the server or the admins' input, so that every answer fits
 * Discord's 2,000 characters in every language: a model id (a key's models, a default, PRICES_FILE's),
 * roles per feature, and one change of the history (a change can name a model).
 */
const MODEL_SHOWN = 60;
const ROLES_SHOWN = 3;
/** The channels where /video may be used that /config show names (`/config rules` names them all). */
const VIDEO_CHANNELS_SHOWN = 2;
const HISTORY_CHANGE_SHOWN = 80;
const HISTORY_SHOWN = 5;
/** Instructions may be 2000 characters, as long as a whole Discord message: /voice settings shows their start. */
const INSTRUCTIONS_PREVIEW = 500;

/** What `/config show` says beyond the stored settings, worded: facts the service knows. */
export interface ShownFacts {
  /** The server can use a gateway key (its own or the operator's). */
  hasKey: boolean;
  canStoreKeys: boolean;
  keyInUse: string;
  defaultLayer: Layer;
  /** The prices estimates are made with, one line each: as many as fit are shown. */
  prices: readonly string[];
}

/** `/config show`: the prices estimates use, one line per model the table names (/config shows as many as fit). */
export function describePrices(table: PriceTable, locale: Locale = ENGLISH): string[] {
  const name = (model: string) => (model === ANY_MODEL ? t(locale, 'prices.any-model') : `\`${shorten(model, MODEL_SHOWN)}\``);
  // Prices under a cent keep four decimals: a fraction of a cent per second adds up.
  const usd = (amount: number) => {
    const digits = amount < 0.01 && amount > 0 ? 4 : 2;
    return formatNumber(locale, amount, {
      style: 'currency',
      currency: 'USD',
      minimumFractionDigits: digits,
      maximumFractionDigits: digits,
    });
  };
  return [
    ...[...table.video].map(([model, prices]) =>
      t(locale, 'prices.video', {
        model: name(model),
        rates: RESOLUTIONS.map((resolution) =>
          t(locale, 'prices.per-second', { price: usd(prices.perSecondUsd[resolution]), resolution }),
        ).join(', '),
      }),
    ),
    ...[...table.voice].map(([model, prices]) => t(locale, 'prices.voice', { model: name(model), price: usd(prices.perMinuteUsd) })),
  ];
}

/** The history's newest changes, as many as fit in `room` characters (HISTORY_SHOWN at most), under their heading; none: nothing. */
function historyLines(locale: Locale, history: GuildSettings['history'], room: number): string[] {
  const lines = [t(locale, 'config.show.history')];
  for (const entry of history.slice(0, HISTORY_SHOWN)) {
    const line = `<t:${Math.floor(entry.at / 1000)}:R> <@${entry.by}> ${shorten(entry.change, HISTORY_CHANGE_SHOWN)}`;
    if ([...lines, line].join('\n').length > room) break;
    lines.push(line);
  }
  return lines.length > 1 ? lines : [];
}

/** The prices line with as many of `prices` as fit in `room` characters, then how many more there are and where; and how many it names. */
function pricesLine(locale: Locale, prices: readonly string[], room: number): { line: string; shown: number } {
  const line = (shown: number) => {
    const more = prices.length - shown;
    const parts = [...prices.slice(0, shown), ...(more > 0 ? [t(locale, 'prices.more', { count: more })] : [])];
    return t(locale, 'config.show.prices', { prices: parts.join('; ') });
  };
  let shown = 0;
  while (shown < prices.length && line(shown + 1).length <= room) shown++;
  return { line: line(shown), shown };
}

/**
 * What follows the settings in `room` characters: the newest changes in at most half, the prices in the rest;
 * `whole`: at least the newest change and one price got in (or there are none).
 */
function pricesAndHistory(
  locale: Locale,
  history: GuildSettings['history'],
  prices: readonly string[],
  room: number,
): { lines: string[]; whole: boolean } {
  const changes = historyLines(locale, history, Math.floor(room / 2));
  const priced = pricesLine(locale, prices, room - changes.join('\n').length - (changes.length > 0 ? '\n'.length : 0));
  const whole = (history.length === 0 || changes.length > 0) && (prices.length === 0 || priced.shown > 0);
  return { lines: [priced.line, ...changes], whole };
}

/**
 * `/config show`'s first line: what stands between this server and a working bot, in one look (a gateway
 * key for /video and /voice, the operator's encryption secret for a key of the server's own), or that
 * nothing does.
 */
function missingLine(locale: Locale, facts: ShownFacts): string {
  const missing: string[] = [];
  if (!facts.hasKey) missing.push(t(locale, 'config.show.missing.key'));
  if (!facts.canStoreKeys) missing.push(t(locale, 'config.show.missing.secret'));
  return missing.length === 0 ? t(locale, 'config.show.missing-none') : t(locale, 'config.show.missing', { missing: missing.join('; ') });
}

/**
 * `/config show`'s line of the moderators' rules: counts, the first channels where /video may be used and the
 * log channel, so that it stays one short line however many rules there are (`/config rules` shows them all).
 */
function rulesLine(locale: Locale, rules: ServerRules): string {
  const say = translator(locale);
  const { blockedWords, videoChannels, denied, logChannelId } = rules;
  if (blockedWords.length === 0 && videoChannels.length === 0 && denied.length === 0 && logChannelId === undefined)
    return say('config.show.rules-none');
  const shown = videoChannels.slice(0, VIDEO_CHANNELS_SHOWN).map((id) => `<#${id}>`);
  const more = videoChannels.length - shown.length;
  return say('config.show.rules', {
    words: blockedWords.length,
    where:
      videoChannels.length === 0
        ? say('config.show.rules-anywhere')
        : say('config.show.rules-only-in', {
            channels: formatList(locale, more > 0 ? [...shown, say('config.show.more-channels', { count: more })] : shown),
          }),
    denied: denied.length,
    log: logChannelId === undefined ? say('config.show.rules-no-log') : say('config.show.rules-log', { channel: `<#${logChannelId}>` }),
  });
}

/** `/config show`'s lines of the settings themselves, each whole (the prices and the history follow as room allows). */
function settingsLines(locale: Locale, settings: GuildSettings, facts: ShownFacts): string[] {
  const say = translator(locale);
  const roles = (ids: string[]) => {
    if (ids.length === 0) return say('config.show.everyone');
    const shown = ids.slice(0, ROLES_SHOWN).map((id) => `<@&${id}>`);
    const more = ids.length - shown.length;
    return formatList(locale, more > 0 ? [...shown, say('config.show.more-roles', { count: more })] : shown);
  };
  const limit = (value: number) => (value === 0 ? say('config.show.no-limit') : formatNumber(locale, value));
  const budget = (amount: number) => (amount === 0 ? say('config.show.no-budget') : formatCostIn(locale, usdToUsdTicks(amount)));
  const orDefault = (value: string | undefined) => value ?? say('config.show.gateway-default');
  const { defaults, storage, limits, spending } = settings;
  const { budgets } = spending;
  const before = [
    missingLine(locale, facts),
    say('config.show.key', { key: facts.keyInUse }),
    settings.layer === undefined
      ? say('config.show.layer-default', { layer: facts.defaultLayer })
      : say('config.show.layer', { layer: settings.layer }),
    say('config.show.defaults', {
      model: defaults.model === undefined ? say('config.show.latest') : shorten(defaults.model, MODEL_SHOWN),
      resolution: orDefault(defaults.resolution),
      duration:
        defaults.duration === undefined
          ? say('config.show.gateway-default')
          : formatNumber(locale, defaults.duration, { style: 'unit', unit: 'second', unitDisplay: 'narrow' }),
      aspectRatio: orDefault(defaults.aspectRatio),
    }),
    say('config.show.buttons', { who: defaults.buttons === 'owner' ? 'owner' : 'anyone' }),
    // Said only when a server turned it off: a crowded /config show in German has no room to spare for the default.
    ...(defaults.ping === 'off' ? [say('config.show.ping-off')] : []),
    say('config.show.storage', { days: storage.keepDays, publicLink: storage.publicLink ? 'yes' : 'no' }),
    say('config.show.roles', { video: roles(settings.roles.video), voice: roles(settings.roles.voice) }),
    rulesLine(locale, settings.rules),
    say('config.show.limits', {
      concurrent: limit(limits.concurrentPerUser),
      perMember: limit(limits.dailyPerUser),
      perServer: limit(limits.dailyPerServer),
    }),
    // Said only while a key serves the server: without one no video is sent, and the longest /config show (a
    // key that cannot be opened, in German) has no room to spare. Stated on the operator's key, it waits for
    // a key of the server's own: said so, not shown as in force.
    ...(facts.hasKey
      ? [
          say('config.show.key-concurrency', {
            stated: limits.keyConcurrency === undefined ? 'learned' : settings.key ? 'own' : 'unused',
            count: limits.keyConcurrency ?? 0,
          }),
        ]
      : []),
    say('config.show.budgets', {
      perMember: budget(budgets.member_daily_usd),
      perServer: budget(budgets.server_daily_usd),
      perMonth: budget(budgets.server_monthly_usd),
      alerts:
        spending.alertChannelId === undefined
          ? say('config.show.alerts-off')
          : say('config.show.alerts-in', { channel: `<#${spending.alertChannelId}>` }),
      confirm:
        spending.confirmOverUsd === 0
          ? say('config.show.confirm-none')
          : say('config.show.confirm-over', { amount: formatCostIn(locale, usdToUsdTicks(spending.confirmOverUsd)) }),
    }),
  ];
  return before;
}

/**
 * `/config show` in one message of `room` characters at most (what a message holds, less what the answer puts
 * before it), in the admin's language: the settings first, whole; then the newest changes in at most half of
 * what is left, and the prices in the rest.
 */
export function describeServerSettings(
  locale: Locale,
  settings: GuildSettings,
  facts: ShownFacts,
  room: number = MESSAGE_LIMITS.content,
): string {
  return fitted(locale, settings, facts, room).text;
}

/** describeServerSettings(), and whether the newest change and a price got in (else the answer is better in two messages). */
function fitted(locale: Locale, settings: GuildSettings, facts: ShownFacts, room: number): { text: string; whole: boolean } {
  const before = settingsLines(locale, settings, facts);
  const after = pricesAndHistory(locale, settings.history, facts.prices, room - before.join('\n').length - '\n'.length);
  // The bounds above keep the settings well within a message; this keeps an unforeseen worst case from being refused whole.
  return { text: shorten([...before, ...after.lines].join('\n'), room), whole: after.whole };
}

/**
 * `/config show`, and what every change answers with (`lead`: that it was saved), in the admin's language:
 * one message when it leaves room for the newest change and a price; else (a crowded server in German, say)
 * the settings whole, then the prices and the newest changes in a message of their own.
 */
export function describeServerSettingsMessages(locale: Locale, settings: GuildSettings, facts: ShownFacts, lead?: string): string[] {
  const room = MESSAGE_LIMITS.content;
  const led = (text: string) => (lead === undefined ? text : `${lead}\n${text}`);
  const one = fitted(locale, settings, facts, room - (lead === undefined ? 0 : lead.length + '\n'.length));
  if (one.whole) return [led(one.text)];
  const lines = [...(lead === undefined ? [] : [lead]), ...settingsLines(locale, settings, facts)];
  const apart = pricesAndHistory(locale, settings.history, facts.prices, room);
  return [
    ...inMessages(
      lines.map((text) => ({ text, joiner: '\n' })),
      room,
    ),
    shorten(apart.lines.join('\n'), room),
  ];
}

/** What `/config show` says beyond the stored settings, worded in the admin's language. */
async function shownFacts(settings: SettingsService, guildId: string, locale: Locale): Promise<ShownFacts> {
  const facts = await settings.shownFacts(guildId);
  return { ...facts, keyInUse: word(locale, facts.keyInUse), prices: describePrices(facts.prices, locale) };
}

/** `/config show`: the server's settings and what stands between it and a working bot, in one message (two when crowded). */
export async function showServerSettings(settings: SettingsService, guildId: string, locale: Locale): Promise<string[]> {
  const [shown, facts] = await Promise.all([settings.get(guildId), shownFacts(settings, guildId, locale)]);
  return describeServerSettingsMessages(locale, shown, facts);
}

/**
 * What a change answers with: `saved` (that it was saved, in the admin's language), then the settings the
 * change wrote, in one message (two when crowded).
 */
export async function describeChange(
  settings: SettingsService,
  guildId: string,
  locale: Locale,
  saved: string,
  updated: GuildSettings,
): Promise<string[]> {
  return describeServerSettingsMessages(locale, updated, await shownFacts(settings, guildId, locale), saved);
}

/** A default model the server's key cannot use, naming as many of the key's models as fit in one message, then how many more. */
export function describeUnavailableModel(locale: Locale, { model, available }: UnavailableModel): string {
  const refusal = (shown: number) => {
    const names = available.slice(0, shown).map((name) => shorten(name, MODEL_SHOWN));
    const more = available.length - shown;
    if (more > 0) names.push(t(locale, 'config.defaults.more-models', { count: more }));
    return t(locale, 'config.defaults.model-unavailable', { model: shorten(model, MODEL_SHOWN), available: names.join(', ') });
  };
  let shown = 0;
  while (shown < available.length && refusal(shown + 1).length <= MESSAGE_LIMITS.content) shown++;
  return refusal(shown);
}

/**
 * `pieces` in messages of at most `room` characters, each piece whole (one longer than a message is
 * shortened), joined to the piece before it in the same message by its `joiner`.
 */
function inMessages(pieces: readonly { text: string; joiner: string }[], room: number): string[] {
  const messages: string[] = [];
  let message = '';
  for (const { text, joiner } of pieces) {
    const longer = message === '' ? text : `${message}${joiner}${text}`;
    if (longer.length <= room) {
      message = longer;
      continue;
    }
    if (message !== '') messages.push(message);
    message = shorten(text, room);
  }
  messages.push(message);
  return messages;
}

/** What separates the items of a list in `locale` (", " in English, "、" in Japanese), as its lists write it. */
function listSeparator(locale: Locale): string {
  return new Intl.ListFormat(locale, { type: 'conjunction' }).formatToParts(['a', 'b', 'c'])[1]?.value ?? ', ';
}

/** A blocked word as the rules show it: in code style, where no markdown or mention of it takes effect. */
function shownWord(word: string): string {
  return `\`${word.replaceAll('`', "'")}\``;
}

/**
 * `/config rules` without options: the server's rules in full (every blocked word, channel and denied
 * member), in as many messages of at most `room` characters as they take. Each line is a heading and its
 * items; the items go into the messages whole, so a message ends between two words, never inside one.
 */
export function describeRules(locale: Locale, rules: ServerRules, room: number = MESSAGE_LIMITS.content): string[] {
  const say = translator(locale);
  const none = (what: 'words' | 'members' | 'log') => [say('config.rules.view.none', { what })];
  const lines: { heading: string; items: string[] }[] = [
    { heading: say('config.rules.view.title'), items: [] },
    {
      heading: say('config.rules.view.words', { count: rules.blockedWords.length, max: BLOCKED_WORDS_LIMITS.rules }),
      items: rules.blockedWords.length > 0 ? rules.blockedWords.map(shownWord) : none('words'),
    },
    {
      heading: say('config.rules.view.channels'),
      items: rules.videoChannels.length > 0 ? rules.videoChannels.map((id) => `<#${id}>`) : [say('config.rules.view.everywhere')],
    },
    {
      heading: say('config.rules.view.denied', { count: rules.denied.length }),
      items: rules.denied.length > 0 ? rules.denied.map((id) => `<@${id}>`) : none('members'),
    },
    { heading: say('config.rules.view.log'), items: rules.logChannelId === undefined ? none('log') : [`<#${rules.logChannelId}>`] },
  ];
  const separator = listSeparator(locale);
  return inMessages(
    lines.flatMap(({ heading, items }) => {
      const [first, ...rest] = items;
      return [
        { text: first === undefined ? heading : `${heading} ${first}`, joiner: '\n' },
        ...rest.map((item) => ({ text: item, joiner: separator })),
      ];
    }),
    room,
  );
}

function describeRespond(locale: Locale, settings: VoiceSettings): string {
  const names =
    settings.wakeWords.length > 0
      ? settings.wakeWords.map((word) => `"${word}"`).join(', ')
      : t(locale, 'voice.settings.show.display-name');
  return t(locale, 'voice.settings.show.respond', { mode: settings.respond, names });
}

/** `/voice settings`, and what every change answers with, in the member's language. */
export function describeVoiceSettings(locale: Locale, settings: VoiceSettings): string {
  const say = translator(locale);
  const long = settings.instructions.length > INSTRUCTIONS_PREVIEW;
  return [
    say('voice.settings.show.voice', { voice: settings.voice }),
    say('voice.settings.show.model', { model: settings.model }),
    say('voice.settings.show.turns', {
      mode: settings.turnDetection,
      threshold: formatNumber(locale, settings.vadThreshold),
      silence: formatNumber(locale, settings.silenceMs, { style: 'unit', unit: 'millisecond', unitDisplay: 'short' }),
    }),
    say('voice.settings.show.transcripts', { on: settings.transcripts ? 'yes' : 'no' }),
    say('voice.settings.show.idle', { minutes: settings.idleMinutes }),
    say('voice.settings.show.answers', { respond: describeRespond(locale, settings) }),
    say('voice.settings.show.tools', { on: settings.tools === false ? 'no' : 'yes' }),
    // ICU selectors take no hyphen.
    say('voice.settings.show.consent', { mode: settings.consent.replace('-', '_') }),
    say('voice.settings.show.language', {
      language: settings.language === undefined ? SERVER_LANGUAGE : languageName(locale, settings.language),
    }),
    say('voice.settings.show.instructions', {
      instructions: shorten(settings.instructions, INSTRUCTIONS_PREVIEW),
      long: long ? 'yes' : 'no',
      length: settings.instructions.length,
    }),
    settings.updatedBy
      ? say('voice.settings.show.changed', {
          by: `<@${settings.updatedBy}>`,
          when: `<t:${Math.floor((settings.updatedAt ?? 0) / 1000)}:R>`,
        })
      : '',
  ]
    .filter((line) => line !== '')
    .join('\n');
}
