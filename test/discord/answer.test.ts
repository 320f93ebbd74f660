import { once } from 'node:events';
import { Client, Events, GatewayIntentBits, SlashCommandBuilder } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerPrivately, reportAnswersTo } from '../../src/discord/answer.ts';
import { createLogger } from '../../src/lib/log.ts';
import { type DiscordStandIn, startDiscordStandIn, type TestGuild } from 'discord-standin';

// An answer over one of Discord's limits would be refused whole (400 / 50035) and the member would hear
// only that something went wrong: it is not sent; the member reads, in their language, that it was too
// long to show, and the log names the limit. The real discord.js against the stand-in, in this process.

const EPHEMERAL = 64;

let discord: DiscordStandIn;
let guild: TestGuild;
let client: Client;
/** What the handler's log wrote, at the level it was given. */
const written: string[] = [];
const handlerLog = createLogger({ level: 'warn', write: (line) => written.push(line) });

const command = new SlashCommandBuilder()
  .setName('answer')
  .setDescription('answers with as many characters as asked')
  .addIntegerOption((option) => option.setName('length').setDescription('characters').setRequired(true));

beforeAll(async () => {
  discord = await startDiscordStandIn();
  guild = discord.createGuild();
  client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: discord.apiUrl } });
  client.on(Events.InteractionCreate, (interaction) => {
    if (!interaction.isChatInputCommand()) return;
    reportAnswersTo(interaction, handlerLog);
    void answerPrivately(interaction, 'x'.repeat(interaction.options.getInteger('length', true)));
  });
  const ready = once(client, Events.ClientReady);
  await client.login(discord.botToken);
  await ready;
  await client.application!.commands.set([command.toJSON()]);
}, 30_000);

afterAll(async () => {
  await client?.destroy();
  await discord?.close();
});

function ask(length: number, locale = 'en-US') {
  const user = discord.createUser({ guildId: guild.id, locale });
  return discord.runCommand({ user, guildId: guild.id, channelId: guild.textChannelId, command: 'answer', options: { length } }).reply();
}

describe('a private answer over a Discord limit', () => {
  it('is sent as it is up to 2,000 characters', async () => {
    const reply = await ask(2000);
    expect(reply.content).toBe('x'.repeat(2000));
    expect(reply.flags & EPHEMERAL).toBe(EPHEMERAL);
  });

  it('is replaced by a short answer in the member’s language, and the handler’s log names the limit', async () => {
    const reply = await ask(2001, 'fr');
    expect(reply.content).toBe(
      'Cette réponse est trop longue pour que Discord l’affiche, elle n’a donc pas été envoyée. Si cela se reproduit, préviens l’opérateur du bot.',
    );
    expect(reply.flags & EPHEMERAL).toBe(EPHEMERAL);
    const lines = written.filter((line) => line.includes('over a Discord limit'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 'warn',
      command: 'answer',
      field: 'content',
      limit: 'content',
      actual: 2001,
      max: 2000,
    });
    expect(lines[0]).not.toContain('xxx');
  });
});
