import { Locale as DiscordLocale } from 'discord.js';

// Which language the bot speaks to whom. Discord tells each interaction the member's language (`locale`)
// and, in a server, the server's (`guild_locale`); the bot speaks the one its catalogs have, English when
// it has neither.

declare const localeBrand: unique symbol;
/** A language the bot has a catalog for: the catalog's file name (`en`, `de`, `es-ES`…). Only resolveLocale() and the catalogs make one. */
export type Locale = string & { readonly [localeBrand]: true };

/** The catalog every other one is checked against, and the language of the commands' default names. */
export const ENGLISH = 'en' as Locale;

/** Discord's locale codes (`de`, `en-US`, `es-419`…): the names a catalog file may have, besides `en`. */
export const DISCORD_LOCALES: ReadonlySet<string> = new Set(Object.values(DiscordLocale));

/** Who reads what the bot is about to say: one member (a private answer), or everyone in a channel. */
export type Audience = 'member' | 'channel';

/** `de` of `de`, `es` of `es-419`. */
function language(code: string): string {
  return code.split('-')[0]?.toLowerCase() ?? '';
}

/**
 * The supported locale for a Discord locale code: the catalog of that name, else one of the same language
 * (`en-US` and `en-GB` read `en`, `es-419` reads `es-ES`: a Spanish reader is better served by Spain's Spanish
 * than by English), else none.
 */
export function supportedLocale(code: string | null | undefined, supported: readonly Locale[]): Locale | undefined {
  if (!code) return undefined;
  const exact = supported.find((locale) => locale.toLowerCase() === code.toLowerCase());
  return exact ?? supported.find((locale) => language(locale) === language(code));
}

/**
 * The language to speak: a member's private answer in the member's locale, a channel post in the server's;
 * the other when that one is not supported (or absent, outside a server), English when neither is.
 */
export function chooseLocale(
  memberLocale: string | null | undefined,
  guildLocale: string | null | undefined,
  audience: Audience,
  supported: readonly Locale[],
): Locale {
  const [first, second] = audience === 'member' ? [memberLocale, guildLocale] : [guildLocale, memberLocale];
  return supportedLocale(first, supported) ?? supportedLocale(second, supported) ?? ENGLISH;
}
