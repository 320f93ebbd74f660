// Discord's locale codes: a user's and a server's language, and the keys of a command's localizations
// (README.md, "Locales"). Anything else is refused where Discord refuses it.

export const DISCORD_LOCALES: ReadonlySet<string> = new Set([
  'id',
  'da',
  'de',
  'en-GB',
  'en-US',
  'es-ES',
  'es-419',
  'fr',
  'hr',
  'it',
  'lt',
  'hu',
  'nl',
  'no',
  'pl',
  'pt-BR',
  'ro',
  'fi',
  'sv-SE',
  'vi',
  'tr',
  'cs',
  'el',
  'bg',
  'ru',
  'uk',
  'hi',
  'th',
  'zh-CN',
  'ja',
  'zh-TW',
  'ko',
]);

/** What a new user and a new server speak unless a test says otherwise. */
export const DEFAULT_LOCALE = 'en-US';

/** `locale` when it is one of Discord's codes; a test that names another learns so at once. */
export function discordLocale(locale: string | undefined): string {
  if (locale === undefined) return DEFAULT_LOCALE;
  if (!DISCORD_LOCALES.has(locale)) throw new Error(`${locale} is not one of Discord's locale codes (${[...DISCORD_LOCALES].join(', ')})`);
  return locale;
}
