import { ApplicationCommandOptionType, ApplicationCommandType } from 'discord.js';
import { describe, expect, it } from 'vitest';
import { loadCommands } from '../../src/interactions/registry.ts';
import { isRecord } from '../../src/lib/json.ts';

// Every command as it is registered (the JSON registerCommands() sends) carries its names and descriptions in
// German, French, Spanish (Spain), Brazilian Portuguese and Japanese, each within Discord's rules, so Discord
// takes the registration and shows each member their language.

const LOCALES = ['de', 'fr', 'es-ES', 'pt-BR', 'ja'] as const;
type Locale = (typeof LOCALES)[number];

/** Discord's rule for a slash command's, subcommand's and option's name, in every language. */
const CHAT_INPUT_NAME = /^[-_\p{L}\p{N}\p{sc=Deva}\p{sc=Thai}]{1,32}$/u;
const MAX_NAME = 32;
const MAX_DESCRIPTION = 100;
const MAX_CHOICE_NAME = 100;

/** A name or description, how it reads in English and in each locale. */
interface Localized {
  where: string;
  english: string;
  byLocale: Partial<Record<Locale, unknown>>;
}

function localizedField(node: Readonly<Record<string, unknown>>, field: 'name' | 'description', where: string): Localized {
  const map = node[`${field}_localizations`];
  return {
    where: `${where} ${field}`,
    english: typeof node[field] === 'string' ? node[field] : '',
    byLocale: isRecord(map) ? Object.fromEntries(LOCALES.map((locale) => [locale, map[locale]])) : {},
  };
}

interface Walked {
  chatInputNames: Localized[];
  messageCommandNames: Localized[];
  descriptions: Localized[];
  choiceNames: Localized[];
  /** Names side by side at one level (a command's subcommands, a subcommand's options), which must differ in every language. */
  siblings: Localized[][];
}

function walkOptions(options: unknown, where: string, walked: Walked): void {
  const nodes = Array.isArray(options) ? options.filter(isRecord) : [];
  const names: Localized[] = [];
  for (const node of nodes) {
    const here = `${where} ${String(node.name)}`;
    const name = localizedField(node, 'name', here);
    names.push(name);
    walked.chatInputNames.push(name);
    walked.descriptions.push(localizedField(node, 'description', here));
    const choices = Array.isArray(node.choices) ? node.choices.filter(isRecord) : [];
    walked.choiceNames.push(...choices.map((choice) => localizedField(choice, 'name', `${here} choice ${String(choice.value)}`)));
    if (node.type === ApplicationCommandOptionType.Subcommand || node.type === ApplicationCommandOptionType.SubcommandGroup)
      walkOptions(node.options, here, walked);
  }
  walked.siblings.push(names);
}

async function registered(): Promise<Walked> {
  const walked: Walked = { chatInputNames: [], messageCommandNames: [], descriptions: [], choiceNames: [], siblings: [] };
  // As the body of registerCommands()'s request reads: plain JSON.
  const body: unknown = JSON.parse(JSON.stringify([...(await loadCommands()).values()].map((command) => command.data.toJSON())));
  const commands = Array.isArray(body) ? body.filter(isRecord) : [];
  const topLevel: Localized[] = [];
  for (const command of commands) {
    const where = `/${String(command.name)}`;
    const name = localizedField(command, 'name', where);
    if (command.type === ApplicationCommandType.Message) {
      walked.messageCommandNames.push(name);
      continue;
    }
    topLevel.push(name);
    walked.chatInputNames.push(name);
    walked.descriptions.push(localizedField(command, 'description', where));
    walkOptions(command.options, where, walked);
  }
  walked.siblings.push(topLevel);
  return walked;
}

/** Each text that breaks `rule`, as `where (locale): text`. */
function breaking(fields: readonly Localized[], rule: (text: string, locale: Locale) => boolean): string[] {
  return fields.flatMap((field) =>
    LOCALES.flatMap((locale) => {
      const text = field.byLocale[locale];
      return typeof text === 'string' && rule(text, locale) ? [] : [`${field.where} (${locale}): ${JSON.stringify(text)}`];
    }),
  );
}

describe('the registered commands', () => {
  it('name every command, subcommand, option and choice in all five languages, within Discord’s rules', async () => {
    const { chatInputNames, messageCommandNames, choiceNames } = await registered();
    expect(chatInputNames.length).toBeGreaterThan(70);
    expect(messageCommandNames.map((name) => name.english)).toEqual(['Animate image', 'Edit video', 'Extend video']);
    // Lowercase where the language has case; letters, digits, - and _ only.
    expect(breaking(chatInputNames, (name, locale) => CHAT_INPUT_NAME.test(name) && name === name.toLocaleLowerCase(locale))).toEqual([]);
    // Message commands (the Apps menu) may have spaces and capitals.
    expect(breaking(messageCommandNames, (name) => name.length <= MAX_NAME && name.trim() !== '')).toEqual([]);
    expect(breaking(choiceNames, (name) => name.length >= 1 && name.length <= MAX_CHOICE_NAME)).toEqual([]);
    expect(choiceNames.length).toBeGreaterThan(20);
  });

  it('describe every command, subcommand and option in all five languages, in 1 to 100 characters', async () => {
    const { descriptions } = await registered();
    expect(breaking(descriptions, (text) => text.length >= 1 && text.length <= MAX_DESCRIPTION)).toEqual([]);
    expect(descriptions.filter((description) => description.english.length < 1 || description.english.length > MAX_DESCRIPTION)).toEqual(
      [],
    );
  });

  it('never give two commands, subcommands or options side by side one name in a language', async () => {
    const { siblings } = await registered();
    const clashes = siblings.flatMap((level) =>
      LOCALES.flatMap((locale) => {
        const names = level.map((name) => name.byLocale[locale]);
        return names
          .filter((name, index) => names.indexOf(name) !== index)
          .map((name) => `${locale}: ${String(name)} in ${level[0]?.where ?? ''}`);
      }),
    );
    expect(clashes).toEqual([]);
  });

  it('are translated, not English copied into each language', async () => {
    const { descriptions } = await registered();
    // A few technical words read the same in several languages ("prompt", "budget"), but a description never does.
    const untranslated = descriptions.filter((description) =>
      LOCALES.some((locale) => description.byLocale[locale] === description.english),
    );
    expect(untranslated.map((description) => description.where)).toEqual([]);
  });
});
