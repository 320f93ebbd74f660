import type { Locale } from './locale.ts';

// Numbers, dollars, dates and durations as a locale writes them, through Intl (Node's full ICU): never a
// hand-made separator or unit. What a message says around them is the catalogs'.

/** Formatters are slow to build and cheap to use: one per locale and options. */
const numberFormats = new Map<string, Intl.NumberFormat>();
const dateFormats = new Map<string, Intl.DateTimeFormat>();
const listFormats = new Map<string, Intl.ListFormat>();
const relativeFormats = new Map<string, Intl.RelativeTimeFormat>();

function cached<F>(cache: Map<string, F>, locale: Locale, options: object, make: () => F): F {
  const key = `${locale}|${JSON.stringify(options)}`;
  let format = cache.get(key);
  if (!format) {
    format = make();
    cache.set(key, format);
  }
  return format;
}

export function formatNumber(locale: Locale, value: number, options: Intl.NumberFormatOptions = {}): string {
  return cached(numberFormats, locale, options, () => new Intl.NumberFormat(locale, options)).format(value);
}

/** Dollars (the gateway bills in USD whatever the member's language): `$1,234.50`, `1.234,50 $`, `1 234,50 $US`. */
export function formatUsd(locale: Locale, dollars: number): string {
  return formatNumber(locale, dollars, { style: 'currency', currency: 'USD' });
}

/** A moment in UTC (the bot's days and months are UTC), by default as the locale writes a date and a time. */
export function formatDate(
  locale: Locale,
  when: Date | number,
  options: Intl.DateTimeFormatOptions = { dateStyle: 'medium', timeStyle: 'short' },
): string {
  const withZone = { timeZone: 'UTC', ...options };
  return cached(dateFormats, locale, withZone, () => new Intl.DateTimeFormat(locale, withZone)).format(when);
}

const SECONDS_PER_UNIT = [
  ['hour', 3600],
  ['minute', 60],
  ['second', 1],
] as const;

/**
 * A length of time in whole seconds as the locale says it, its largest units first and empty ones left out:
 * `1 hour, 5 seconds`, `1 Stunde und 5 Sekunden`, `1 時間 5 秒`. Intl's units carry the plurals; Intl.DurationFormat
 * would do it in one step but Node 22 lacks it.
 */
export function formatDuration(locale: Locale, seconds: number, unitDisplay: 'long' | 'short' | 'narrow' = 'long'): string {
  let left = Math.max(0, Math.round(seconds));
  const parts: string[] = [];
  for (const [unit, size] of SECONDS_PER_UNIT) {
    const count = Math.floor(left / size);
    left -= count * size;
    if (count > 0) parts.push(formatNumber(locale, count, { style: 'unit', unit, unitDisplay }));
  }
  if (parts.length === 0) return formatNumber(locale, 0, { style: 'unit', unit: 'second', unitDisplay });
  const options: Intl.ListFormatOptions = { type: 'unit', style: unitDisplay };
  return cached(listFormats, locale, options, () => new Intl.ListFormat(locale, options)).format(parts);
}

/** A time from now as the locale says it: `in 3 hours`, `in 3 Stunden`, `3 時間後`. */
export function formatRelativeTime(locale: Locale, value: number, unit: Intl.RelativeTimeFormatUnit): string {
  const options: Intl.RelativeTimeFormatOptions = { numeric: 'always' };
  return cached(relativeFormats, locale, options, () => new Intl.RelativeTimeFormat(locale, options)).format(value, unit);
}

/** Items as the locale lists them: `a, b and c`, `a, b oder c` (`disjunction`), `a、b、c`. */
export function formatList(locale: Locale, items: readonly string[], type: 'conjunction' | 'disjunction' = 'conjunction'): string {
  const options: Intl.ListFormatOptions = { type, style: 'long' };
  return cached(listFormats, locale, options, () => new Intl.ListFormat(locale, options)).format(items);
}

/** A language's name in the reader's language: `German`, `allemand`, `ドイツ語`. */
export function languageName(reader: Locale, language: string): string {
  return new Intl.DisplayNames([reader], { type: 'language' }).of(language) ?? language;
}
