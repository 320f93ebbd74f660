import { IntlMessageFormat } from 'intl-messageformat';
import type englishCatalog from './catalogs/en.json';
import { readCatalogFiles, type Catalog } from './catalog-files.ts';
import { PARSE_OPTIONS } from './check.ts';
import { chooseLocale, ENGLISH, type Audience, type Locale } from './locale.ts';
import type { MessagePlaceholders } from './message-values.ts';

// What the bot says, in the member's or the server's language: ICU MessageFormat messages from the catalogs
// (src/i18n/catalogs/<locale>.json), formatted by intl-messageformat, so plurals, numbers and dates follow
// each language's rules. `npm run check` keeps the catalogs in step (scripts/check-catalogs).

export { ENGLISH, type Audience, type Locale } from './locale.ts';
export { formatDate, formatDuration, formatList, formatNumber, formatRelativeTime, formatUsd, languageName } from './format.ts';

/** A message of the catalogs: the English catalog's keys, so a typo is a type error. */
export type MessageKey = keyof typeof englishCatalog;

/** What a message's placeholders are filled with. */
export type MessageValues = Readonly<Record<string, string | number | Date>>;

/**
 * The values `t()` takes after a key: none for a message without placeholders, else each of its own
 * (message-values.ts, generated from the English catalog), so a value left out fails the type check. A key
 * chosen at run time among several takes what any of them takes.
 */
export type ValuesOf<K extends MessageKey> = K extends MessageKey
  ? MessagePlaceholders[K] extends undefined
    ? []
    : [values: MessagePlaceholders[K]]
  : never;

export type Translate = <K extends MessageKey>(key: K, ...values: ValuesOf<K>) => string;

const CATALOG_DIRECTORY = new URL('./catalogs/', import.meta.url);

const loaded = readCatalogFiles(CATALOG_DIRECTORY);
// A catalog that cannot be read stops the start, loudly; whether the catalogs agree is `npm run check`'s.
if (loaded.problems.length > 0) throw new Error(`unreadable message catalogs:\n${loaded.problems.join('\n')}`);
const CATALOGS = new Map([...loaded.catalogs].map(([locale, catalog]) => [locale as Locale, catalog] as const));
if (!CATALOGS.has(ENGLISH)) throw new Error(`no ${ENGLISH}.json among the message catalogs`);

/** Every locale the bot speaks, English first. */
export const SUPPORTED_LOCALES: readonly Locale[] = [ENGLISH, ...[...CATALOGS.keys()].filter((locale) => locale !== ENGLISH)];

/** The locales besides English: those a command's name and description are localized in. */
export const TRANSLATED_LOCALES: readonly Locale[] = SUPPORTED_LOCALES.slice(1);

/** The languages the bot speaks, as tags a setting may choose among (a voice conversation's language): the parts take no reader's locale. */
export const SPOKEN_LANGUAGES: readonly string[] = SUPPORTED_LOCALES;

/**
 * The language to speak, from an interaction's `locale` (the member's) and `guild_locale` (the server's):
 * `'member'` for a private answer, `'channel'` for what everyone in the channel reads; English when the bot
 * speaks neither.
 */
export function resolveLocale(
  interactionLocale: string | null | undefined,
  guildLocale: string | null | undefined,
  audience: Audience,
): Locale {
  return chooseLocale(interactionLocale, guildLocale, audience, SUPPORTED_LOCALES);
}

/** Whether a key built at run time (a command's path) names a message. */
export function isMessageKey(key: string): key is MessageKey {
  return Object.hasOwn(CATALOGS.get(ENGLISH) ?? {}, key);
}

const compiled = new Map<string, IntlMessageFormat>();

function compiledMessage(locale: Locale, key: MessageKey): IntlMessageFormat {
  const cacheKey = `${locale}\u0000${key}`;
  let format = compiled.get(cacheKey);
  if (!format) {
    // The check keeps every key in every catalog; English stands in should one ever be missing.
    const catalog: Catalog | undefined = CATALOGS.get(locale);
    const [source, sourceLocale] =
      catalog && Object.hasOwn(catalog, key) ? [catalog[key], locale] : [CATALOGS.get(ENGLISH)?.[key], ENGLISH];
    if (source === undefined) throw new Error(`no message ${key} in the catalogs`);
    format = new IntlMessageFormat(source, sourceLocale, undefined, { ignoreTag: PARSE_OPTIONS.ignoreTag });
    compiled.set(cacheKey, format);
  }
  return format;
}

/** The message `key` in `locale`, its placeholders filled from `values`; a placeholder left without a value throws. */
export function t<K extends MessageKey>(locale: Locale, key: K, ...values: ValuesOf<K>): string {
  return tChosenKey(locale, key, values[0]);
}

/**
 * `t` for a key chosen at run time among keys whose placeholders differ (a command's description, found
 * from its path): no type holds its values, so a missing one is caught only as `t` catches it, by throwing.
 */
export function tChosenKey(locale: Locale, key: MessageKey, values?: MessageValues): string {
  const formatted = compiledMessage(locale, key).format<string>(values);
  return Array.isArray(formatted) ? formatted.join('') : String(formatted);
}

/** `t` bound to one locale, for code that says several things to the same reader. */
export function translator(locale: Locale): Translate {
  return (key, ...values) => t(locale, key, ...values);
}
