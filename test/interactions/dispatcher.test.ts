import { keepLines } from '../support/kept-lines.ts';
import { EventEmitter, once } from 'node:events';
import {
  ActionRowBuilder,
  ApplicationCommandType,
  ButtonBuilder,
  ButtonStyle,
  Client,
  ContextMenuCommandBuilder,
  Events,
  GatewayIntentBits,
  MessageFlags,
  SlashCommandBuilder,
} from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Command } from '../../src/interactions/command.ts';
import { createDispatcher } from '../../src/interactions/dispatcher.ts';
import type { JsonRecord } from '../../src/lib/json.ts';
import { createLogger, type Logger } from '../../src/lib/log.ts';
import { type DiscordStandIn, type Message, startDiscordStandIn, type TestGuild } from 'discord-standin';
import { waitUntil } from '../../src/lib/wait-until.ts';
import { refuse } from '../../src/wording/notice.ts';

// A handler that throws: whatever it had already answered, the user alone reads "something went wrong"
// (ephemeral, flag 64), the channel keeps nothing of it, and the log line carries the same reference.
// The real discord.js against the stand-in, with the real dispatcher, in this process.

const EPHEMERAL = 64;

let discord: DiscordStandIn;
let guild: TestGuild;
let client: Client;
const logged: JsonRecord[] = [];
/** Emits 'line' for every line logged. */
const logLines = new EventEmitter();
/** The 'late' answer waits at this gate, so a test can let the interaction expire before the handler fails. */
const lateGate = { entered: Promise.withResolvers<void>(), release: Promise.withResolvers<void>() };

const boom: Command<{ log: Logger }> = {
  data: new SlashCommandBuilder()
    .setName('boom')
    .setDescription('fails after answering as told')
    .addStringOption((option) => option.setName('answer').setDescription('none, public, ephemeral, late').setRequired(true)),
  async execute(interaction) {
    const answer = interaction.options.getString('answer', true);
    if (answer === 'public') await interaction.deferReply();
    if (answer === 'ephemeral') await interaction.deferReply({ flags: MessageFlags.Ephemeral });
    if (answer === 'late') {
      await interaction.deferReply();
      lateGate.entered.resolve();
      await lateGate.release.promise;
    }
    throw new Error('the command failed');
  },
  async button(interaction) {
    await interaction.deferUpdate();
    throw new Error('the button failed');
  },
};

/** Who reached the guarded command's handler, and what the server's role rules were asked. */
const guardedRuns: string[] = [];
const featureQuestions: { feature: string; roles: readonly string[]; isServerManager: boolean }[] = [];

const guarded: Command<{ log: Logger }> = {
  data: new SlashCommandBuilder()
    .setName('guarded')
    .setDescription('declares what a member needs')
    .addSubcommand((sub) => sub.setName('admin').setDescription('for server admins'))
    .addSubcommand((sub) => sub.setName('feature').setDescription('follows the role rules of video')),
  requires: (interaction) =>
    interaction.isChatInputCommand() && interaction.options.getSubcommand() === 'admin' ? { manageServer: true } : { feature: 'video' },
  async execute(interaction, services) {
    guardedRuns.push(interaction.user.id);
    services.log.info('guarded command ran');
    await interaction.reply({ content: 'done', flags: MessageFlags.Ephemeral });
  },
};

/** A message command (the Apps menu on a message), for server admins. */
const quote: Command<{ log: Logger }> = {
  data: new ContextMenuCommandBuilder().setName('Quote').setType(ApplicationCommandType.Message),
  requires: () => ({ manageServer: true }),
  async messageCommand(interaction) {
    await interaction.reply({ content: `quoted: ${interaction.targetMessage.content}`, flags: MessageFlags.Ephemeral });
  },
};

beforeAll(async () => {
  discord = await startDiscordStandIn();
  guild = discord.createGuild();
  const log = createLogger({
    write: keepLines(logged, () => logLines.emit('line')),
  });
  const dispatcher = createDispatcher(
    new Map([
      ['boom', boom],
      ['guarded', guarded],
      ['Quote', quote],
    ]),
    { log },
    {
      featureAccess: (_guildId, feature, roles, isServerManager) => {
        featureQuestions.push({ feature, roles, isServerManager });
        return Promise.resolve(isServerManager ? { ok: true } : refuse('access.roles-only', { command: '/video', roles: 'testers' }));
      },
    },
  );
  client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: discord.apiUrl } });
  client.on(Events.InteractionCreate, (interaction) => void dispatcher.handle(interaction));
  const ready = once(client, Events.ClientReady);
  await client.login(discord.botToken);
  await ready;
  await client.application!.commands.set([boom.data.toJSON(), guarded.data.toJSON(), quote.data.toJSON()]);
}, 30_000);

afterAll(async () => {
  await client?.destroy();
  await discord?.close();
});

function referenceIn(message: Message): string {
  const reference = /^Something went wrong \(ref ([A-Z0-9]{6})\)/.exec(message.content)?.[1];
  if (!reference) throw new Error(`no reference in "${message.content}"`);
  return reference;
}

function loggedFailure(reference: string): JsonRecord | undefined {
  return logged.find((line) => line.msg === 'interaction handler failed' && line.reference === reference);
}

function runBoom(answer: string) {
  return discord.runCommand({
    user: guild.member,
    guildId: guild.id,
    channelId: guild.textChannelId,
    command: 'boom',
    options: { answer },
  });
}

describe('a handler that throws', () => {
  it('before answering: an ephemeral reply with the reference of the log line', async () => {
    const run = runBoom('none');
    const reply = await run.reply();
    expect(reply.flags & EPHEMERAL).toBe(EPHEMERAL);
    expect(loggedFailure(referenceIn(reply))).toBeDefined();
  });

  it('after a public defer: the public "thinking" reply is deleted and the message comes as an ephemeral follow-up', async () => {
    const run = runBoom('public');
    const followUp = await run.waitForFollowUp((message) => message.content.startsWith('Something went wrong'));
    expect(followUp.flags & EPHEMERAL).toBe(EPHEMERAL);
    expect(run.record.original?.deleted).toBe(true);
    expect(
      discord
        .messages(guild.textChannelId)
        .filter((message) => message.interaction?.id === run.record.id && (message.flags & EPHEMERAL) === 0),
    ).toEqual([]);
    expect(loggedFailure(referenceIn(followUp))).toBeDefined();
  });

  it('after an ephemeral defer: the private placeholder itself shows the message', async () => {
    const run = runBoom('ephemeral');
    const reply = await run.waitForReply((message) => message.content.startsWith('Something went wrong'));
    expect(reply.flags & EPHEMERAL).toBe(EPHEMERAL);
    expect(run.followUps).toEqual([]);
    expect(loggedFailure(referenceIn(reply))).toBeDefined();
  });

  it('after a deferUpdate on a button: the message with the button stays as it was, the user gets an ephemeral follow-up', async () => {
    const row = new ActionRowBuilder<ButtonBuilder>().addComponents(
      new ButtonBuilder().setCustomId('boom:go').setLabel('Go').setStyle(ButtonStyle.Primary),
    );
    const channel = client.channels.cache.get(guild.textChannelId);
    if (!channel?.isSendable()) throw new Error('the text channel is not cached');
    const sent = await channel.send({ content: 'a card with a button', components: [row] });
    const source = discord.messages(guild.textChannelId).find((message) => message.id === sent.id)!;
    const before = { content: source.content, components: structuredClone(source.components) };

    const click = discord.clickButton({ user: guild.member, message: source, customId: 'boom:go' });
    const followUp = await click.waitForFollowUp((message) => message.content.startsWith('Something went wrong'));
    expect(followUp.flags & EPHEMERAL).toBe(EPHEMERAL);
    expect(source.deleted).toBe(false);
    expect({ content: source.content, components: source.components }).toEqual(before);
    expect(loggedFailure(referenceIn(followUp))).toBeDefined();
  });

  it('after its interaction expired: the same reference is logged with a warning that nobody could be told, and the next command is served', async () => {
    const run = runBoom('late');
    await lateGate.entered.promise;
    discord.expireInteraction(run);
    lateGate.release.resolve();
    const untold = await waitUntil({
      check: () => logged.find((entry) => entry.msg === 'could not tell the user about a failed interaction'),
      subscribe: (wake) => {
        logLines.on('line', wake);
        return () => logLines.off('line', wake);
      },
      timeoutMs: 5000,
      timeoutError: () => new Error('the dispatcher never logged that it could not tell the user'),
    });
    expect(untold.level).toBe('warn');
    expect(untold.interaction).toBe(run.record.id);
    expect(typeof untold.reference === 'string' && loggedFailure(untold.reference)?.interaction).toBe(run.record.id);
    expect(run.followUps).toEqual([]);

    const next = await runBoom('none').reply();
    expect(loggedFailure(referenceIn(next))).toBeDefined();
  });
});

describe("a command's requirements", () => {
  function runGuarded(subcommand: string, user = guild.member) {
    return discord.runCommand({ user, guildId: guild.id, channelId: guild.textChannelId, command: 'guarded', subcommand });
  }

  it('refuses a member without Manage Server privately, in the one wording, before the handler runs', async () => {
    const refused = await runGuarded('admin').reply();
    expect(refused).toMatchObject({ flags: EPHEMERAL, content: '`/guarded admin` needs the **Manage Server** permission.' });
    expect(guardedRuns).not.toContain(guild.member.id);
    expect((await runGuarded('admin', guild.admin).reply()).content).toBe('done');
    expect(guardedRuns).toEqual([guild.admin.id]);
  });

  it('hands the handler a log whose every line names the interaction, so one grep follows it', async () => {
    const run = runGuarded('admin', guild.admin);
    await run.reply();
    expect(logged.filter((line) => line.msg === 'guarded command ran').map((line) => line.interaction)).toContain(run.record.id);
  });

  it("asks the server's role rules with the member's roles, and passes their refusal on privately", async () => {
    const refused = await runGuarded('feature').reply();
    expect(refused).toMatchObject({
      flags: EPHEMERAL,
      content: 'On this server, /video is for members with testers. Ask a server admin if you need it.',
    });
    expect(featureQuestions.at(-1)).toEqual({
      feature: 'video',
      roles: expect.arrayContaining([guild.memberRoleId]),
      isServerManager: false,
    });
    expect(guardedRuns).not.toContain(guild.member.id);
  });
});

describe('a message command', () => {
  it('reaches its handler with the message it was picked on, after its requirements, which name it as members saw it', async () => {
    const posted = discord.postMessage({ user: guild.member, channelId: guild.textChannelId, content: 'hello there' });
    const refused = await discord.runMessageCommand({ user: guild.member, message: posted, command: 'Quote' }).reply();
    expect(refused).toMatchObject({ flags: EPHEMERAL, content: '**Quote** needs the **Manage Server** permission.' });
    const quoted = await discord.runMessageCommand({ user: guild.admin, message: posted, command: 'Quote' }).reply();
    expect(quoted.content).toBe('quoted: hello there');
  });
});
