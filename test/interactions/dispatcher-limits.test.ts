import { keepLines } from '../support/kept-lines.ts';
import { once } from 'node:events';
import { Client, Events, GatewayIntentBits, MessageFlags, SlashCommandBuilder } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerPrivately } from '../../src/discord/answer.ts';
import { suggest } from '../../src/discord/autocomplete.ts';
import type { Command } from '../../src/interactions/command.ts';
import { createDispatcher } from '../../src/interactions/dispatcher.ts';
import type { JsonRecord } from '../../src/lib/json.ts';
import { createLogger, type Logger, type LogLevel } from '../../src/lib/log.ts';
import { type DiscordStandIn, startDiscordStandIn, type TestGuild } from 'discord-standin';

// Answers over Discord's limits, through the real dispatcher: one Discord refuses (400 / 50035) reaches
// the member as "too long to show", not "something went wrong", and the log names Discord's fields; the
// limits an answer is checked against are logged at the operator's LOG_LEVEL; autocomplete keeps within
// its limits. The real discord.js against the stand-in, in this process.

const EPHEMERAL = 64;
const TOO_LONG = "This answer is too long for Discord to show, so it was not sent. If it keeps happening, tell the bot's operator.";

let discord: DiscordStandIn;
let guild: TestGuild;
let client: Client;
const logged: JsonRecord[] = [];
/** LOG_LEVEL, as the dispatcher's log reads it when an interaction comes. */
let level: LogLevel = 'info';

/** A log at `level` as it stands when each line's logger is made (the dispatcher makes one per interaction). */
function logAtLevel(fields: Record<string, unknown> = {}): Logger {
  const current = () =>
    createLogger({
      level,
      fields,
      write: keepLines(logged),
    });
  return {
    debug: (message, more) => current().debug(message, more),
    info: (message, more) => current().info(message, more),
    warn: (message, more) => current().warn(message, more),
    error: (message, more) => current().error(message, more),
    child: (more) => logAtLevel({ ...fields, ...more }),
  };
}

const long: Command<{ log: Logger }> = {
  data: new SlashCommandBuilder()
    .setName('long')
    .setDescription('answers at length')
    .addStringOption((option) => option.setName('how').setDescription('reply or private').setRequired(true))
    .addStringOption((option) => option.setName('model').setDescription('a model').setAutocomplete(true)),
  async execute(interaction) {
    const content = 'x'.repeat(2001);
    // Straight to Discord, as a handler may: Discord refuses it with 50035.
    if (interaction.options.getString('how', true) === 'reply') await interaction.reply({ content, flags: MessageFlags.Ephemeral });
    else await answerPrivately(interaction, content);
  },
  async autocomplete(interaction) {
    // The first a value too long to choose (Discord takes values of 100 characters at most), then 29 long names.
    const choices = Array.from({ length: 30 }, (_, index) => ({
      name: `model ${index} ${'with a very long name '.repeat(8)}`,
      value: index === 0 ? 'v'.repeat(101) : `model-${index}`,
    }));
    await suggest(interaction, choices);
  },
};

beforeAll(async () => {
  discord = await startDiscordStandIn();
  guild = discord.createGuild();
  const dispatcher = createDispatcher(new Map([['long', long]]), { log: logAtLevel() });
  client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: discord.apiUrl } });
  client.on(Events.InteractionCreate, (interaction) => void dispatcher.handle(interaction));
  const ready = once(client, Events.ClientReady);
  await client.login(discord.botToken);
  await ready;
  await client.application!.commands.set([long.data.toJSON()]);
}, 30_000);

afterAll(async () => {
  await client?.destroy();
  await discord?.close();
});

function run(how: string) {
  return discord.runCommand({ user: guild.member, guildId: guild.id, channelId: guild.textChannelId, command: 'long', options: { how } });
}

describe('an answer Discord refuses as an invalid form (50035)', () => {
  it('reaches the member as too long to show, and the log names the field Discord named', async () => {
    const handle = run('reply');
    const reply = await handle.reply();
    expect(reply.content).toBe(TOO_LONG);
    expect(reply.flags & EPHEMERAL).toBe(EPHEMERAL);
    expect(logged.filter((line) => line.msg === 'interaction handler failed')).toEqual([]);
    const refused = logged.filter((line) => line.interaction === handle.record.id && String(line.msg).startsWith('Discord refused'));
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ level: 'warn', command: 'long', fields: ['data.content: BASE_TYPE_MAX_LENGTH'] });
  });
});

describe('an answer over a limit, found before it is sent', () => {
  it('is logged through the dispatcher’s log, naming the interaction, at the operator’s LOG_LEVEL', async () => {
    level = 'warn';
    const shown = run('private');
    expect((await shown.reply()).content).toBe(TOO_LONG);
    expect(logged.filter((line) => line.interaction === shown.record.id && line.limit === 'content')).toHaveLength(1);

    level = 'error';
    const hidden = run('private');
    expect((await hidden.reply()).content).toBe(TOO_LONG);
    expect(logged.filter((line) => line.interaction === hidden.record.id)).toEqual([]);
    level = 'info';
  });
});

describe('autocomplete with 30 suggestions of long names', () => {
  it('offers the first 25 Discord takes, each name within 100 characters', async () => {
    const choices = await discord.autocomplete({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'long',
      options: { how: 'reply', model: '' },
      focused: 'model',
    });
    expect(choices).toHaveLength(25);
    expect(choices.map((choice) => choice.name.length).every((length) => length <= 100)).toBe(true);
    expect(choices.map((choice) => choice.value)).toEqual(Array.from({ length: 25 }, (_, index) => `model-${index + 1}`));
  });
});
