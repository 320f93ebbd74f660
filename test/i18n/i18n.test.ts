import { describe, expect, it } from 'vitest';
import { USD_TICKS } from '../../src/gateway/spec.ts';
import {
  ENGLISH,
  SUPPORTED_LOCALES,
  TRANSLATED_LOCALES,
  formatDate,
  formatDuration,
  formatUsd,
  resolveLocale,
  t,
  translator,
} from '../../src/i18n/index.ts';
import { formatCost, formatCostIn, formatEstimate, formatEstimateIn } from '../../src/wording/cost.ts';

// The bot speaks each member's language in private and the server's in a channel, English when it has
// neither; plurals, numbers, dollars, dates and durations follow each language's rules.

const ISSUE_LOCALES = ['de', 'fr', 'es-ES', 'pt-BR', 'ja'];
/** A supported locale, as the bot comes by one: from Discord's code. */
const locale = (code: string) => resolveLocale(code, undefined, 'member');
const [de, fr, esES, ptBR, ja] = [locale('de'), locale('fr'), locale('es-ES'), locale('pt-BR'), locale('ja')];
/** Intl keeps an amount and its currency together with a no-break space. */
const NBSP = '\u00a0';

describe('the languages', () => {
  it('are English and the five the bot is translated into', () => {
    expect(SUPPORTED_LOCALES[0]).toBe(ENGLISH);
    expect([...TRANSLATED_LOCALES].sort()).toEqual([...ISSUE_LOCALES].sort());
  });

  it("answer a member in the member's language and post in the server's", () => {
    expect(resolveLocale('de', 'fr', 'member')).toBe('de');
    expect(resolveLocale('de', 'fr', 'channel')).toBe('fr');
    expect(resolveLocale('pt-BR', undefined, 'member')).toBe('pt-BR');
  });

  it("fall back to the other one, then to English, when the bot does not speak Discord's locale", () => {
    expect(resolveLocale('ko', 'ja', 'member')).toBe('ja');
    expect(resolveLocale('ja', 'ko', 'channel')).toBe('ja');
    expect(resolveLocale('ko', 'zh-CN', 'member')).toBe(ENGLISH);
    expect(resolveLocale(undefined, null, 'channel')).toBe(ENGLISH);
  });

  it("read every English and Spanish variant Discord has as the bot's English and Spain's Spanish", () => {
    expect(resolveLocale('en-US', 'de', 'member')).toBe(ENGLISH);
    expect(resolveLocale('en-GB', 'de', 'member')).toBe(ENGLISH);
    expect(resolveLocale('es-419', 'en-US', 'member')).toBe('es-ES');
  });
});

describe('a message', () => {
  it('takes its plural form from the language', () => {
    const english = translator(ENGLISH);
    expect(english('command.choice.seconds', { seconds: 1 })).toBe('1 second');
    expect(english('command.choice.seconds', { seconds: 8 })).toBe('8 seconds');
    expect(t(de, 'command.choice.seconds', { seconds: 1 })).toBe('1 Sekunde');
    // French counts 0 and 1 as singular; Japanese has no plural.
    expect(t(fr, 'command.choice.seconds', { seconds: 0 })).toBe('0 seconde');
    expect(t(ja, 'command.choice.seconds', { seconds: 2 })).toBe('2 秒');
  });

  it('formats its numbers in the language', () => {
    expect(t(de, 'command.config.storage.keep_days.description', { maxDays: 10_000 })).toContain('höchstens 10.000');
    expect(t(ENGLISH, 'command.config.storage.keep_days.description', { maxDays: 10_000 })).toContain('at most 10,000');
  });

  it('refuses to go out with a placeholder left unfilled', () => {
    // @ts-expect-error: the type check refuses it first (message-values.ts); a key chosen at run time is caught here.
    expect(() => t(fr, 'cost.about')).toThrow(/amount/);
  });
});

describe('numbers, dollars, dates and durations', () => {
  it('bill in dollars in every language, the currency the gateway charges in', () => {
    for (const locale of SUPPORTED_LOCALES) expect(formatUsd(locale, 1234.5), locale).toMatch(/\$/);
    expect(formatUsd(de, 1234.5)).toBe(`1.234,50${NBSP}$`);
    expect(formatUsd(ptBR, 0.42)).toBe(`US$${NBSP}0,42`);
  });

  it("write the bot's days in UTC, whatever the machine's time zone", () => {
    const zone = process.env.TZ;
    process.env.TZ = 'Pacific/Auckland';
    try {
      // 23:30 UTC on 4 March is already 5 March in Auckland; the bot's budgets and reports count UTC days.
      expect(formatDate(de, Date.UTC(2025, 2, 4, 23, 30))).toBe('04.03.2025, 23:30');
      expect(formatDate(ja, new Date(Date.UTC(2025, 2, 4, 23, 30)), { dateStyle: 'long' })).toBe('2025年3月4日');
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });

  it('say a duration with its units and plurals, its empty units left out', () => {
    expect(formatDuration(ENGLISH, 3605)).toBe('1 hour, 5 seconds');
    expect(formatDuration(de, 3665)).toBe('1 Stunde, 1 Minute und 5 Sekunden');
    expect(formatDuration(fr, 120)).toBe('2 minutes');
    expect(formatDuration(esES, 0)).toBe('0 segundos');
    expect(formatDuration(ja, 61, 'short')).toBe('1 分 1 秒');
  });

  it('word a cost under a cent as under a cent, never as nothing, and an estimate as about', () => {
    expect(formatCost(0)).toBe('$0.00');
    expect(formatCost(1)).toBe('under $0.01');
    expect(formatCost(0.42 * USD_TICKS)).toBe('$0.42');
    expect(formatCost(1234.5 * USD_TICKS)).toBe('$1,234.50');
    expect(formatEstimate(0.4 * USD_TICKS)).toBe('about $0.40');
    expect(formatEstimate(1)).toBe('under $0.01');
    expect(formatCostIn(fr, 0.42 * USD_TICKS)).toBe(`0,42${NBSP}$US`);
    expect(formatCostIn(de, 1)).toBe(`unter 0,01${NBSP}$`);
    expect(formatEstimateIn(ja, 0.4 * USD_TICKS)).toBe('約 $0.40');
  });
});
