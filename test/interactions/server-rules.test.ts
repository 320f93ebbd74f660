import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ActionRowBuilder,
  ButtonBuilder,
  ButtonStyle,
  ChannelType,
  Client,
  Events,
  GatewayIntentBits,
  type ThreadChannel,
} from 'discord.js';
import { type DiscordStandIn, type InteractionHandle, type Message, startDiscordStandIn, type TestGuild, type User } from 'discord-standin';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import animateImage from '../../commands/animate-image.ts';
import config from '../../commands/config.ts';
import videoCommand from '../../commands/video.ts';
import { answerPrivately } from '../../src/discord/answer.ts';
import { GatewayClientPool } from '../../src/gateway/pool.ts';
import type { Command } from '../../src/interactions/command.ts';
import { createDispatcher } from '../../src/interactions/dispatcher.ts';
import type { HandledInteraction } from '../../src/interactions/requirements.ts';
import { silentLogger, type Logger } from '../../src/lib/log.ts';
import type { LoggedRefusal } from '../../src/ports/moderation-log.ts';
import type { ServerRules } from '../../src/settings/guild-settings.ts';
import { DEFAULT_PRICES } from '../../src/settings/prices.ts';
import { SettingsService } from '../../src/settings/service.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { uploadFormId, videoActionId } from '../../src/video/actions.ts';

// The moderators' rules where members meet the bot: the real dispatcher, the real command modules'
// declarations (/video, Animate image, /config) and the real settings service on a real SQLite file,
// wired as src/app.ts wires them; each handler only says it was reached. A denied member is refused every
// command, button and form, privately, while another member is served; /video and the message commands
// are kept to the server's video channels (a thread counting as its channel), buttons under a card are not.
// The real discord.js against the Discord stand-in, in this process.

const EPHEMERAL = 64;
const DENIED = 'You may not use this bot on this server: a moderator has denied it.';
/** A channel of the server's that is not the stand-in's text channel (only its id matters to the rule). */
const VIDEO_CHANNEL = '1300000000000000001';
const OTHER_VIDEO_CHANNEL = '1300000000000000002';

let discord: DiscordStandIn;
let guild: TestGuild;
let client: Client;
let directory: string;
let store: Store;
let clients: GatewayClientPool;
let settings: SettingsService;
let other: User;
let thread: ThreadChannel;
let card: Message;
/** Who reached a handler, and with what. */
const reached: { user: string; what: string }[] = [];
/** What the dispatcher told the server's moderation log. */
const logged: LoggedRefusal[] = [];

/** The command module with its handlers replaced by one that says it was reached: what it requires is its own. */
function reachable(command: Command): Command<{ log: Logger }> {
  const reach = async (interaction: HandledInteraction) => {
    reached.push({ user: interaction.user.id, what: interaction.isCommand() ? interaction.commandName : interaction.customId });
    await answerPrivately(interaction, 'reached');
  };
  return {
    data: command.data,
    ...(command.requires ? { requires: (interaction: HandledInteraction) => command.requires?.(interaction) } : {}),
    ...(command.answers ? { answers: (interaction: HandledInteraction) => command.answers?.(interaction) ?? 'private' } : {}),
    ...(command.execute ? { execute: reach } : {}),
    ...(command.messageCommand ? { messageCommand: reach } : {}),
    ...(command.button ? { button: reach } : {}),
    ...(command.modal ? { modal: reach } : {}),
  };
}

beforeAll(async () => {
  discord = await startDiscordStandIn();
  guild = discord.createGuild();
  other = discord.createUser({ guildId: guild.id, name: 'other' });
  directory = mkdtempSync(join(tmpdir(), 'server-rules-'));
  store = await openStore(`sqlite://${join(directory, 'bot.sqlite')}`, silentLogger);
  clients = new GatewayClientPool({ baseUrl: 'http://127.0.0.1:9', log: silentLogger });
  settings = new SettingsService({
    store,
    clients,
    log: silentLogger,
    operatorKey: undefined,
    defaultLayer: 'compat',
    gatewayVendor: 'svc',
    encryptionSecret: undefined,
    prices: DEFAULT_PRICES,
  });
  const commands = [videoCommand, animateImage, config];
  const dispatcher = createDispatcher(
    new Map(commands.map((command) => [command.data.name, reachable(command)])),
    { log: silentLogger },
    {
      featureAccess: (guildId, feature, roles, isManager) => settings.mayUse(guildId, feature, roles, isManager),
      serverRules: (guildId) => settings.rules(guildId),
      moderationLog: { refused: (refusal) => logged.push(refusal) },
    },
  );
  client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: discord.apiUrl } });
  client.on(Events.InteractionCreate, (interaction) => void dispatcher.handle(interaction));
  const ready = once(client, Events.ClientReady);
  await client.login(discord.botToken);
  await ready;
  await client.application!.commands.set(commands.map((command) => command.data.toJSON()));
  const channel = await client.channels.fetch(guild.textChannelId);
  if (channel?.type !== ChannelType.GuildText) throw new Error('the text channel is not a server text channel');
  thread = await channel.threads.create({ name: 'videos of the day' });
  // A video's card with its buttons, as the bot posts one.
  const buttons = new ActionRowBuilder<ButtonBuilder>().addComponents(
    new ButtonBuilder().setCustomId(videoActionId('regenerate', 'vcard01')).setLabel('Regenerate').setStyle(ButtonStyle.Secondary),
    new ButtonBuilder().setCustomId(videoActionId('extend', 'vcard01')).setLabel('Extend').setStyle(ButtonStyle.Secondary),
  );
  const sent = await channel.send({ content: 'a video', components: [buttons] });
  card = discord.messages(guild.textChannelId).find((message) => message.id === sent.id)!;
}, 30_000);

afterEach(async () => {
  reached.length = 0;
  logged.length = 0;
  await setRules({ denied: [], videoChannels: [] });
});

afterAll(async () => {
  await client?.destroy();
  await discord?.close();
  await clients?.close();
  await store?.close();
  rmSync(directory, { recursive: true, force: true });
});

/** The server's rules, changed as `/config rules` changes them. */
async function setRules(rules: Partial<ServerRules>): Promise<void> {
  await settings.update(guild.id, guild.admin.id, 'changed the rules', (current) => ({
    ...current,
    rules: { ...current.rules, ...rules },
  }));
}

/** The first words the member reads: a private refusal, or the handler's "reached". */
async function answer(handle: InteractionHandle): Promise<{ private: boolean; content: string }> {
  const reply = await handle.waitForReply((message) => message.content !== '');
  return { private: (reply.flags & EPHEMERAL) === EPHEMERAL, content: reply.content };
}

const refused = (content: string) => ({ private: true, content });
const REACHED = { private: true, content: 'reached' };

function video(user: User, subcommand: string, options: Record<string, string> = {}, channelId = guild.textChannelId) {
  return discord.runCommand({ user, guildId: guild.id, channelId, command: 'video', subcommand, options });
}

function animate(user: User) {
  const posted = discord.postMessage({ user, channelId: guild.textChannelId, content: 'a picture', attachments: [] });
  return discord.runMessageCommand({ user, message: posted, command: 'Animate image' });
}

function submitForm(user: User, customId: string) {
  return discord.submitModal({ user, guildId: guild.id, channelId: guild.textChannelId, customId, fields: { prompt: 'a lake at dawn' } });
}

describe('a member the moderators denied', () => {
  it('is refused every command, button and form privately, and reaches no handler; another member is served', async () => {
    await setRules({ denied: [guild.member.id] });
    const asked = (user: User) => [
      video(user, 'generate', { prompt: 'a lake at dawn' }),
      video(user, 'status', { task: 'vcard01' }),
      // Opens a form at once: the rules are read in time for it.
      video(user, 'edit', { prompt: 'make it night' }),
      discord.clickButton({ user, message: card, customId: videoActionId('regenerate', 'vcard01') }),
      discord.clickButton({ user, message: card, customId: videoActionId('extend', 'vcard01') }),
      submitForm(user, videoActionId('extend-modal', 'vcard01')),
      submitForm(user, uploadFormId('edit', undefined)),
      animate(user),
      submitForm(user, 'Animate image:1400000000000000001'),
    ];
    for (const handle of asked(guild.member)) expect(await answer(handle)).toEqual(refused(DENIED));
    expect(reached).toEqual([]);
    // Each refusal logged once, naming what the member used.
    expect(logged.map(({ command }) => command).sort()).toEqual([
      '**Animate image**',
      '**Animate image**',
      '`/video edit`',
      '`/video generate`',
      '`/video status`',
      '`/video`',
      '`/video`',
      '`/video`',
      '`/video`',
    ]);
    for (const refusal of logged)
      expect(refusal).toMatchObject({ guildId: guild.id, userId: guild.member.id, what: 'command', why: { key: 'rules.refusal.denied' } });
    logged.length = 0;

    for (const handle of asked(other)) expect(await answer(handle)).toEqual(REACHED);
    expect(reached.map((reach) => reach.user)).toEqual(Array<string>(9).fill(other.id));
    expect(logged).toEqual([]);
  });

  it('is refused /config too when an admin, while another admin is served', async () => {
    const secondAdmin = discord.createUser({ guildId: guild.id, name: 'second-admin', roles: [guild.adminRoleId] });
    await setRules({ denied: [guild.admin.id] });
    const show = (user: User) =>
      discord.runCommand({ user, guildId: guild.id, channelId: guild.textChannelId, command: 'config', subcommand: 'show' });
    expect(await answer(show(guild.admin))).toEqual(refused(DENIED));
    expect(await answer(show(secondAdmin))).toEqual(REACHED);
    // A member without Manage Server is refused /config by a permission, not by a rule of the moderators': not logged.
    expect(await answer(show(other))).toEqual(refused('`/config show` needs the **Manage Server** permission.'));
    expect(logged.map(({ userId, why }) => [userId, why.key])).toEqual([[guild.admin.id, 'rules.refusal.denied']]);
  });
});

describe('video channels', () => {
  it('refuse /video and the message commands elsewhere, naming the channels as links', async () => {
    await setRules({ videoChannels: [VIDEO_CHANNEL, OTHER_VIDEO_CHANNEL] });
    const elsewhere = `is used in <#${VIDEO_CHANNEL}> or <#${OTHER_VIDEO_CHANNEL}> on this server.`;
    expect(await answer(video(guild.member, 'generate', { prompt: 'a lake' }))).toEqual(refused(`\`/video generate\` ${elsewhere}`));
    expect(await answer(video(guild.member, 'extend', { prompt: 'and then night', task: 'vcard01' }))).toEqual(
      refused(`\`/video extend\` ${elsewhere}`),
    );
    // Its form is not shown where it cannot be used, and its submission is refused there in any case.
    expect(await answer(video(guild.member, 'edit', { prompt: 'make it night' }))).toEqual(refused(`\`/video edit\` ${elsewhere}`));
    expect(await answer(submitForm(guild.member, uploadFormId('edit', undefined)))).toEqual(refused(`\`/video\` ${elsewhere}`));
    expect(await answer(animate(guild.member))).toEqual(refused(`**Animate image** ${elsewhere}`));
    expect(await answer(submitForm(guild.member, 'Animate image:1400000000000000002'))).toEqual(refused(`**Animate image** ${elsewhere}`));
    // A thread of another channel is that channel.
    expect(await answer(video(guild.member, 'generate', { prompt: 'a lake' }, thread.id))).toEqual(
      refused(`\`/video generate\` ${elsewhere}`),
    );
    // Every /video subcommand, not only those that make a video.
    expect(await answer(video(guild.member, 'status', { task: 'vcard01' }))).toEqual(refused(`\`/video status\` ${elsewhere}`));
    expect(await answer(video(guild.member, 'list'))).toEqual(refused(`\`/video list\` ${elsewhere}`));
    expect(await answer(video(guild.member, 'usage'))).toEqual(refused(`\`/video usage\` ${elsewhere}`));
    expect(reached).toEqual([]);
    expect(logged).toHaveLength(10);
    expect(logged[0]).toMatchObject({
      userId: guild.member.id,
      what: 'command',
      command: '`/video generate`',
      why: { key: 'rules.refusal.video-channels' },
    });
  });

  it('take a thread as its channel, and leave alone buttons and forms under a card posted elsewhere', async () => {
    await setRules({ videoChannels: [guild.textChannelId] });
    expect(await answer(video(guild.member, 'generate', { prompt: 'a lake' }, thread.id))).toEqual(REACHED);
    expect(await answer(video(guild.member, 'generate', { prompt: 'a lake' }))).toEqual(REACHED);

    await setRules({ videoChannels: [VIDEO_CHANNEL] });
    expect(
      await answer(discord.clickButton({ user: guild.member, message: card, customId: videoActionId('regenerate', 'vcard01') })),
    ).toEqual(REACHED);
    expect(await answer(discord.clickButton({ user: guild.member, message: card, customId: videoActionId('extend', 'vcard01') }))).toEqual(
      REACHED,
    );
    expect(await answer(submitForm(guild.member, videoActionId('extend-modal', 'vcard01')))).toEqual(REACHED);
    expect(reached).toHaveLength(5);
  });
});
