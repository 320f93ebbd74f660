import { isRecord } from '../lib/json.ts';
import { DISCORD_LOCALES } from '../world/locales.ts';
import { FieldErrorList, badLength, fieldError, type FieldErrors, type FieldPath } from './errors.ts';

// Application commands as Discord checks them when they are registered (README.md, "Command
// registration"): names and descriptions, and their localizations, within Discord's lengths and its rule
// for slash command names, keyed by Discord's locale codes. A bulk overwrite with any broken one is
// refused whole, 400 / 50035, each problem at its path (`0.options.1.name_localizations.de`).

/** A slash command; user (2) and message (3) commands have free-text names and no description. */
const CHAT_INPUT = 1;

/** Subcommand and subcommand group: options that hold options. */
const NESTING_OPTION_TYPES: readonly number[] = [1, 2];

/** Where a command may be installed: to a server (GUILD_INSTALL) and to a user (USER_INSTALL). */
export const INTEGRATION_TYPES: readonly number[] = [0, 1];
/** Where a command may be used: a server (GUILD), the bot's DM (BOT_DM), other DMs and group DMs (PRIVATE_CHANNEL). */
export const INTERACTION_CONTEXTS: readonly number[] = [0, 1, 2];

export const COMMAND_LIMITS = {
  name: { min: 1, max: 32 },
  description: { min: 1, max: 100 },
  choiceName: { min: 1, max: 100 },
} as const;

/**
 * A slash command's (and any option's) name, in every language: letters, digits, `-` and `_`, and lowercase
 * where the letter has a lowercase form. Message and user commands' names are free text.
 */
const CHAT_INPUT_NAME = /^[-_\p{L}\p{N}\p{sc=Deva}\p{sc=Thai}]{1,32}$/u;

function invalidName(path: FieldPath): FieldErrors {
  return fieldError(path, 'APPLICATION_COMMAND_INVALID_NAME', 'Command name is invalid');
}

function unknownLocale(path: FieldPath): FieldErrors {
  return fieldError(path, 'BASE_TYPE_CHOICES', `Value must be one of (${[...DISCORD_LOCALES].map((code) => `'${code}'`).join(', ')}).`);
}

function within(text: string, bounds: { min: number; max: number }): boolean {
  return text.length >= bounds.min && text.length <= bounds.max;
}

function isChatInputName(name: string): boolean {
  return CHAT_INPUT_NAME.test(name) && name === name.toLowerCase();
}

class CommandChecker {
  readonly #found = new FieldErrorList();

  get errors(): FieldErrors | undefined {
    return this.#found.errors;
  }

  command(command: unknown, path: FieldPath): void {
    if (!isRecord(command)) return;
    const chatInput = command.type === undefined || command.type === CHAT_INPUT;
    // Discord names a broken localized command name at `name_localizations` itself, an option's at its locale.
    this.#name(command, path, chatInput, [...path, 'name_localizations']);
    this.#choiceList(command.integration_types, [...path, 'integration_types'], INTEGRATION_TYPES, false);
    this.#choiceList(command.contexts, [...path, 'contexts'], INTERACTION_CONTEXTS, true);
    if (command.dm_permission !== undefined && command.dm_permission !== null && typeof command.dm_permission !== 'boolean')
      this.#found.add(fieldError([...path, 'dm_permission'], 'BASE_TYPE_BOOLEAN', 'Must be either true or false.'));
    if (chatInput) {
      this.#description(command, path);
      this.#options(command.options, [...path, 'options']);
    }
  }

  #name(node: Readonly<Record<string, unknown>>, path: FieldPath, chatInput: boolean, badLocalizedNameAt?: FieldPath): void {
    const name = typeof node.name === 'string' ? node.name : '';
    if (!within(name, COMMAND_LIMITS.name)) this.#found.add(badLength([...path, 'name'], COMMAND_LIMITS.name.min, COMMAND_LIMITS.name.max));
    else if (chatInput && !isChatInputName(name)) this.#found.add(invalidName([...path, 'name']));
    this.#localizations(node.name_localizations, [...path, 'name_localizations'], COMMAND_LIMITS.name, (text, at) => {
      if (chatInput && !isChatInputName(text)) this.#found.add(invalidName(badLocalizedNameAt ?? at));
    });
  }

  /** A list of enum values (`integration_types`, `contexts`): absent is the default, null only where `nullable`. */
  #choiceList(list: unknown, path: FieldPath, allowed: readonly number[], nullable: boolean): void {
    if (list === undefined || (list === null && nullable)) return;
    if (!Array.isArray(list)) {
      this.#found.add(fieldError(path, 'LIST_TYPE_CONVERT', 'Only iterables may be used in a ListType'));
      return;
    }
    list.forEach((value: unknown, index) => {
      if (typeof value !== 'number' || !allowed.includes(value))
        this.#found.add(fieldError([...path, index], 'BASE_TYPE_CHOICES', `Value must be one of {${allowed.join(', ')}}.`));
    });
  }

  #description(node: Readonly<Record<string, unknown>>, path: FieldPath): void {
    const description = typeof node.description === 'string' ? node.description : '';
    const bounds = COMMAND_LIMITS.description;
    if (!within(description, bounds)) this.#found.add(badLength([...path, 'description'], bounds.min, bounds.max));
    this.#localizations(node.description_localizations, [...path, 'description_localizations'], bounds);
  }

  /** A localization map: Discord's locale codes only, each text (null: none for that locale) within `bounds`. */
  #localizations(
    map: unknown,
    path: FieldPath,
    bounds: { min: number; max: number },
    checkText?: (text: string, at: FieldPath) => void,
  ): void {
    if (!isRecord(map)) return;
    for (const [locale, text] of Object.entries(map)) {
      const at = [...path, locale];
      if (!DISCORD_LOCALES.has(locale)) this.#found.add(unknownLocale(at));
      else if (text === null) continue;
      else if (typeof text !== 'string' || !within(text, bounds)) this.#found.add(badLength(at, bounds.min, bounds.max));
      else checkText?.(text, at);
    }
  }

  #options(options: unknown, path: FieldPath): void {
    if (!Array.isArray(options)) return;
    options.forEach((option: unknown, index) => {
      if (!isRecord(option)) return;
      const at = [...path, index];
      this.#name(option, at, true);
      this.#description(option, at);
      if (Array.isArray(option.choices)) {
        option.choices.forEach((choice: unknown, choiceIndex) => {
          if (!isRecord(choice)) return;
          const choiceAt = [...at, 'choices', choiceIndex];
          const name = typeof choice.name === 'string' ? choice.name : '';
          const bounds = COMMAND_LIMITS.choiceName;
          if (!within(name, bounds)) this.#found.add(badLength([...choiceAt, 'name'], bounds.min, bounds.max));
          this.#localizations(choice.name_localizations, [...choiceAt, 'name_localizations'], bounds);
        });
      }
      if (typeof option.type === 'number' && NESTING_OPTION_TYPES.includes(option.type)) this.#options(option.options, [...at, 'options']);
    });
  }
}

/** What Discord would refuse in a bulk overwrite's commands, at each one's path; undefined: it takes them. */
export function commandErrors(commands: readonly unknown[]): FieldErrors | undefined {
  const checker = new CommandChecker();
  commands.forEach((command, index) => checker.command(command, [index]));
  return checker.errors;
}

/**
 * Where a registered command is offered, as Discord reads its fields: a server's own commands only in
 * that server through its install; a global one through `integration_types` (default `[0]`, GUILD_INSTALL)
 * in `contexts` (default all three; without `contexts`, the deprecated `dm_permission: false` takes the
 * bot's DM away).
 */
export function commandReach(command: Readonly<Record<string, unknown>>): { integrationTypes: number[]; contexts: number[] } {
  if (typeof command.guild_id === 'string') return { integrationTypes: [0], contexts: [0] };
  const numbers = (value: unknown): number[] | undefined =>
    Array.isArray(value) ? value.filter((item: unknown): item is number => typeof item === 'number') : undefined;
  const contexts = numbers(command.contexts) ?? (command.dm_permission === false ? [0, 2] : [...INTERACTION_CONTEXTS]);
  return { integrationTypes: numbers(command.integration_types) ?? [0], contexts };
}
