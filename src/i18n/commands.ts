import type { APIApplicationCommandOptionChoice, LocalizationMap } from 'discord.js';
import { ENGLISH, TRANSLATED_LOCALES, isMessageKey, t, tChosenKey, type MessageKey, type MessageValues } from './index.ts';

// Commands in every language the bot speaks: Discord shows each member a command's, subcommand's, option's
// and choice's name and description in their own language when the registration carries it
// (`name_localizations`, `description_localizations`). The words are the catalogs' (`command.<path>.name`,
// `.description`, `.choice.<value>`); the English name is the code's, the one interactions carry, and the
// English catalog must say the same.

/** A command path with a name and a description in the catalogs: `command.video.generate`. */
export type DescribedKey = {
  [K in MessageKey]: K extends `${infer Path}.description` ? (`${Path}.name` extends MessageKey ? Path : never) : never;
}[MessageKey];

/** A command path with a name in the catalogs (a message command has no description): `command.animate-image`. */
export type NamedKey = { [K in MessageKey]: K extends `${infer Path}.name` ? Path : never }[MessageKey];

/** What every Discord command builder (command, subcommand, option) lets one set. */
export interface DescribedBuilder {
  readonly name: string;
  setDescription(description: string): unknown;
  setNameLocalizations(localizedNames: LocalizationMap | null): unknown;
  setDescriptionLocalizations(localizedDescriptions: LocalizationMap | null): unknown;
}

interface NamedBuilder {
  readonly name: string;
  setNameLocalizations(localizedNames: LocalizationMap | null): unknown;
}

/** `key` in every locale besides English, as Discord takes it. */
export function localizations(key: MessageKey, values?: MessageValues): LocalizationMap {
  return Object.fromEntries(TRANSLATED_LOCALES.map((locale) => [locale, tChosenKey(locale, key, values)]));
}

/** A path built at run time (a definition's), checked against the catalogs: a missing one stops the start. */
export function describedKey(path: string): DescribedKey {
  const name = `${path}.name`;
  const description = `${path}.description`;
  if (!isMessageKey(name) || !isMessageKey(description)) throw new Error(`no ${name} and ${description} in the message catalogs`);
  // Both keys exist, which is what DescribedKey says.
  return path as DescribedKey;
}

function checkedName(builder: NamedBuilder, key: NamedKey): MessageKey {
  const nameKey: MessageKey = `${key}.name`;
  const english = t(ENGLISH, nameKey);
  if (english !== builder.name)
    throw new Error(`${nameKey} is "${english}" in the English catalog, but the command is named "${builder.name}"`);
  return nameKey;
}

/**
 * `builder` (named already) with its English description and its name and description in every other locale,
 * from `key.name` and `key.description`; `values` fill the description's placeholders.
 */
export function localized<B extends DescribedBuilder>(builder: B, key: DescribedKey, values?: MessageValues): B {
  builder.setNameLocalizations(localizations(checkedName(builder, key)));
  const description: MessageKey = `${key}.description`;
  builder.setDescription(tChosenKey(ENGLISH, description, values));
  builder.setDescriptionLocalizations(localizations(description, values));
  return builder;
}

/** A message command (named already) with its name in every other locale: message commands have no description. */
export function localizedName<B extends NamedBuilder>(builder: B, key: NamedKey): B {
  builder.setNameLocalizations(localizations(checkedName(builder, key)));
  return builder;
}

/** A choice whose name is words (`key`, its placeholders filled from `values`), in every locale. */
export function localizedChoice<V extends string | number>(
  value: V,
  key: MessageKey,
  values?: MessageValues,
): APIApplicationCommandOptionChoice<V> {
  return { name: tChosenKey(ENGLISH, key, values), name_localizations: localizations(key, values), value };
}

/**
 * A choice shown as its value in every language (a resolution, a ratio, a layer's name): the same name in
 * each locale, so every choice carries every localization and a member never meets a half-translated list.
 */
export function literalChoice<V extends string>(value: V): APIApplicationCommandOptionChoice<V> {
  return { name: value, name_localizations: Object.fromEntries(TRANSLATED_LOCALES.map((locale) => [locale, value])), value };
}

/** The choice for a value of the option at `optionPath`, worded by `<optionPath>.choice.<value>`; none in the catalogs stops the start. */
export function catalogChoice(optionPath: string, value: string): APIApplicationCommandOptionChoice<string> {
  const key = `${optionPath}.choice.${value}`;
  if (!isMessageKey(key)) throw new Error(`no ${key} in the message catalogs`);
  return localizedChoice(value, key);
}
