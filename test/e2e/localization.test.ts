import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDiscordStandIn, type DiscordStandIn } from 'discord-standin';
import { EDIT_MAX_SECONDS, MAX_REFERENCE_AUDIO_SECONDS } from '../../src/gateway/spec.ts';
import { TRANSLATED_LOCALES, isMessageKey, resolveLocale, tChosenKey, type Locale, type MessageValues } from '../../src/i18n/index.ts';
import { isRecord } from '../../src/lib/json.ts';
import { STORAGE_MAX_DAYS } from '../../src/settings/guild-settings.ts';
import { BLOCKED_WORDS_LIMITS } from '../../src/settings/blocked-words.ts';
import { cleanupBotDirectories, startBotOn, type BotProcess } from '../support/bot-process.ts';

// The bot as a process registers its commands with Discord (the stand-in, which checks Discord's rules for
// localized names and descriptions) in German, French, Spanish (Spain), Brazilian Portuguese and Japanese:
// every command, subcommand, option and choice, in the catalogs' words.

const ISSUE_LOCALES = ['de', 'fr', 'es-ES', 'pt-BR', 'ja'];
const SUBCOMMAND_TYPES: readonly unknown[] = [1, 2];
/** The descriptions the bot fills from its limits. */
const DESCRIPTION_VALUES: Readonly<Record<string, MessageValues>> = {
  'command.video.generate.reference_audio.description': { seconds: MAX_REFERENCE_AUDIO_SECONDS },
  'command.video.edit.video.description': { seconds: EDIT_MAX_SECONDS },
  'command.config.storage.keep_days.description': { maxDays: STORAGE_MAX_DAYS },
  'command.config.rules.blocked_words_add.description': {
    max: BLOCKED_WORDS_LIMITS.rules,
    characters: BLOCKED_WORDS_LIMITS.ruleCharacters,
  },
};

let discord: DiscordStandIn;
let bot: BotProcess;

beforeAll(async () => {
  discord = await startDiscordStandIn();
  bot = startBotOn(discord);
  await bot.waitForLog((line) => line.msg === 'ready', 30_000);
}, 60_000);

afterAll(async () => {
  if (bot?.child.exitCode === null) await bot.stop();
  await discord?.close();
  cleanupBotDirectories();
});

/** One localized text of the registration: where it is, the catalog key it should come from, and its localizations. */
interface Registered {
  where: string;
  key: string | undefined;
  values: MessageValues;
  localizations: unknown;
}

/** Every name, description and choice name the stand-in holds, with the catalog key each is worded by. */
function registeredTexts(): Registered[] {
  const texts: Registered[] = [];
  const visit = (node: Readonly<Record<string, unknown>>, path: string, where: string) => {
    texts.push({ where: `${where} name`, key: `${path}.name`, values: {}, localizations: node.name_localizations });
    if (typeof node.description === 'string' && node.description !== '')
      texts.push({
        where: `${where} description`,
        key: `${path}.description`,
        values: DESCRIPTION_VALUES[`${path}.description`] ?? {},
        localizations: node.description_localizations,
      });
    for (const choice of Array.isArray(node.choices) ? node.choices.filter(isRecord) : []) {
      const value = typeof choice.value === 'string' || typeof choice.value === 'number' ? choice.value : '';
      // A worded choice has its own message, a number of seconds the shared one, a value shown as is none.
      const key =
        typeof value === 'number'
          ? 'command.choice.seconds'
          : isMessageKey(`${path}.choice.${value}`)
            ? `${path}.choice.${value}`
            : undefined;
      texts.push({ where: `${where} choice ${value}`, key, values: { seconds: value }, localizations: choice.name_localizations });
    }
    for (const option of Array.isArray(node.options) ? node.options.filter(isRecord) : []) {
      const name = String(option.name);
      visit(option, `${path}.${name}`, `${where} ${name}`);
    }
  };
  for (const command of discord.commands()) {
    const name = String(command.name);
    visit(command, `command.${name.toLowerCase().replaceAll(' ', '-')}`, command.type === 3 ? `"${name}"` : `/${name}`);
  }
  return texts;
}

describe('the registered commands', () => {
  it('were taken by Discord in one overwrite, options and subcommands nested as the bot defines them', () => {
    const puts = discord.requests.filter((request) => request.method === 'PUT' && request.path.endsWith('/commands'));
    expect(puts.map((request) => request.status)).toEqual([200]);
    const video = discord.commands().find((command) => command.name === 'video');
    const subcommands = Array.isArray(video?.options) ? video.options.filter(isRecord) : [];
    expect(subcommands.every((option) => SUBCOMMAND_TYPES.includes(option.type))).toBe(true);
  });

  it('carry every name, description and choice in all five languages, in the words of the catalogs', () => {
    expect([...TRANSLATED_LOCALES].sort()).toEqual([...ISSUE_LOCALES].sort());
    const texts = registeredTexts();
    expect(texts.length).toBeGreaterThan(200);
    const wrong: string[] = [];
    for (const text of texts) {
      const map = isRecord(text.localizations) ? text.localizations : {};
      for (const code of ISSUE_LOCALES) {
        const locale: Locale = resolveLocale(code, undefined, 'member');
        const got = map[code];
        const expected =
          text.key === undefined ? undefined : isMessageKey(text.key) ? tChosenKey(locale, text.key, text.values) : `a message ${text.key}`;
        if (typeof got !== 'string' || got === '') wrong.push(`${text.where} (${code}): none`);
        else if (expected !== undefined && got !== expected) wrong.push(`${text.where} (${code}): ${got}, the catalog says ${expected}`);
        else if (text.key === undefined && got !== map[ISSUE_LOCALES[0] ?? ''])
          wrong.push(`${text.where} (${code}): a value shown as is differs`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
