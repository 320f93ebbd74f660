import { once } from 'node:events';
import {
  ApplicationCommandType,
  ApplicationIntegrationType,
  ChatInputCommandInteraction,
  Client,
  ContextMenuCommandBuilder,
  Events,
  GatewayIntentBits,
  InteractionContextType,
  MessageContextMenuCommandInteraction,
  MessageFlags,
  PermissionFlagsBits,
  REST,
  Routes,
  SlashCommandBuilder,
  type Interaction,
} from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startDiscordStandIn,
  USER_INSTALL_FOLLOW_UP_LIMIT,
  type DiscordStandIn,
  type InteractionHandle,
  type TestGuild,
  type User,
} from '../src/index.ts';
import { codesAt, refusal } from './refusals.ts';

// User installs against the real discord.js: commands registered with `integration_types` and `contexts`,
// a user who installed the app for themselves running them in the bot's DM, in a server the bot is not
// in and in a DM between users, and what the bot can and cannot do there (answer through the interaction,
// not post in the channel; DM a user only where Discord lets it).

let discord: DiscordStandIn;
let home: TestGuild;
let foreign: TestGuild;
let rest: REST;
let client: Client;
/** The bot's answer to one interaction (by id), and what settles with its result. */
let awaited:
  | {
      id: string;
      handler: (interaction: Interaction) => Promise<unknown>;
      resolve: (value: unknown) => void;
      reject: (error: unknown) => void;
    }
  | undefined;

/** Starts an interaction with `handler` as the bot's answer to it, and resolves with what the handler returned. */
function handled<T>(handler: (interaction: Interaction) => Promise<T>, start: () => InteractionHandle): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const handle = start();
    awaited = { id: handle.record.id, handler, resolve: (value) => resolve(value as T), reject };
  });
}

const EVERYWHERE = [InteractionContextType.Guild, InteractionContextType.BotDM, InteractionContextType.PrivateChannel];
const make = new SlashCommandBuilder()
  .setName('make')
  .setDescription('Makes something')
  .addStringOption((option) => option.setName('prompt').setDescription('What to make'))
  .setIntegrationTypes(ApplicationIntegrationType.GuildInstall, ApplicationIntegrationType.UserInstall)
  .setContexts(...EVERYWHERE);
/** Server-only: no integration_types (Discord's default, GUILD_INSTALL) and the GUILD context alone. */
const config = new SlashCommandBuilder()
  .setName('config')
  .setDescription('Server settings')
  .setDefaultMemberPermissions(PermissionFlagsBits.ManageGuild)
  .setContexts(InteractionContextType.Guild);
const animate = new ContextMenuCommandBuilder()
  .setName('Animate image')
  .setType(ApplicationCommandType.Message)
  .setIntegrationTypes(ApplicationIntegrationType.GuildInstall, ApplicationIntegrationType.UserInstall)
  .setContexts(...EVERYWHERE);

let alice: User;
let bob: User;
let carol: User;

beforeAll(async () => {
  discord = await startDiscordStandIn();
  home = discord.createGuild({ locale: 'de' });
  foreign = discord.createGuild({ withBot: false, locale: 'fr' });
  // alice installed the app and is only in a server without the bot; bob is in the bot's server; carol is in neither.
  alice = discord.createUser({ guildId: foreign.id, name: 'alice', locale: 'ja' });
  discord.installAppForUser(alice);
  bob = discord.createUser({ guildId: home.id, name: 'bob' });
  carol = discord.createUser({ name: 'carol' });
  rest = new REST({ api: discord.apiUrl }).setToken(discord.botToken);
  client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: discord.apiUrl } });
  client.on(Events.InteractionCreate, (interaction) => {
    // Interactions a test runs without a handler (only to look at their payload) go unanswered.
    const current = awaited;
    if (current?.id !== interaction.id) return;
    current.handler(interaction).then(current.resolve, current.reject);
  });
  const ready = once(client, Events.ClientReady);
  await client.login(discord.botToken);
  await ready;
  await rest.put(Routes.applicationCommands(discord.applicationId), { body: [make.toJSON(), config.toJSON(), animate.toJSON()] });
}, 30_000);

afterAll(async () => {
  await client?.destroy();
  await discord?.close();
});

describe('registering commands for user installs', () => {
  it('keeps integration_types and contexts as given, and defaults integration_types to the server install', () => {
    const byName = new Map(discord.commands().map((command) => [command.name, command]));
    expect(byName.get('make')).toMatchObject({ integration_types: [0, 1], contexts: [0, 1, 2] });
    expect(byName.get('config')).toMatchObject({ integration_types: [0], contexts: [0] });
    expect(byName.get('Animate image')).toMatchObject({ type: 3, integration_types: [0, 1] });
  });

  it('refuses values Discord does not have, and lists that are not lists, with 50035 at each path', async () => {
    const refused = await refusal(
      rest.put(Routes.applicationCommands(discord.applicationId), {
        body: [
          { ...make.toJSON(), integration_types: [0, 2] },
          { ...config.toJSON(), contexts: [0, 3] },
          { ...make.toJSON(), name: 'other', contexts: 'everywhere' },
        ],
      }),
    );
    expect(refused).toMatchObject({ status: 400, code: 50035 });
    expect(codesAt(refused.errors, 0, 'integration_types', 1)).toEqual(['BASE_TYPE_CHOICES']);
    expect(codesAt(refused.errors, 1, 'contexts', 1)).toEqual(['BASE_TYPE_CHOICES']);
    expect(codesAt(refused.errors, 2, 'contexts')).toEqual(['LIST_TYPE_CONVERT']);
    // Refused whole: what was registered stays.
    expect(discord.commands().map((command) => command.name)).toEqual(['make', 'config', 'Animate image']);
  });
});

describe('a user install in the bot DM', () => {
  it('reaches discord.js as a DM command with its context and owners; a follow-up carries a file', async () => {
    const channelId = discord.botDmChannel(alice);
    let handle: InteractionHandle | undefined;
    const seen = await handled(
      async (interaction) => {
        if (!(interaction instanceof ChatInputCommandInteraction)) throw new Error('not a slash command');
        await interaction.deferReply();
        await interaction.followUp({ content: 'here it is', files: [{ attachment: Buffer.from('video bytes'), name: 'clip.mp4' }] });
        await interaction.editReply('done');
        return {
          context: interaction.context,
          owners: {
            guild: interaction.authorizingIntegrationOwners[ApplicationIntegrationType.GuildInstall],
            user: interaction.authorizingIntegrationOwners[ApplicationIntegrationType.UserInstall],
          },
          guildId: interaction.guildId,
          member: interaction.member,
          user: interaction.user.id,
          locale: interaction.locale,
          guildLocale: interaction.guildLocale,
          attachFiles: interaction.appPermissions.has(PermissionFlagsBits.AttachFiles),
          channelId: interaction.channelId,
        };
      },
      () => (handle = discord.runCommand({ user: alice, channelId, command: 'make', options: { prompt: 'a cat' } })),
    );
    expect(seen).toEqual({
      context: InteractionContextType.BotDM,
      owners: { guild: '0', user: alice.id },
      guildId: null,
      member: null,
      user: alice.id,
      locale: 'ja',
      guildLocale: null,
      attachFiles: true,
      channelId,
    });
    expect(handle?.interaction.channel).toMatchObject({ id: channelId, type: 1 });
    const followUp = await handle!.waitForFollowUp(() => true);
    expect(followUp.attachments.map((attachment) => attachment.filename)).toEqual(['clip.mp4']);
    expect((await handle!.reply()).content).toBe('done');
    // The bot's DM is the bot's: its interaction messages are there for the test to read.
    expect(discord.directMessages(alice.id).map((message) => message.content)).toEqual(expect.arrayContaining(['here it is', 'done']));
  });

  it('refuses edits with the token once it expired: 401 / 50027', async () => {
    const channelId = discord.botDmChannel(alice);
    let handle!: InteractionHandle;
    const refused = await handled(
      async (interaction) => {
        if (!(interaction instanceof ChatInputCommandInteraction)) throw new Error('not a slash command');
        await interaction.deferReply();
        discord.expireInteraction(handle);
        return refusal(interaction.editReply('too late'));
      },
      () => (handle = discord.runCommand({ user: alice, channelId, command: 'make' })),
    );
    expect(refused).toMatchObject({ status: 401, code: 50027 });
  });

  it('offers a server-only command nowhere but servers', () => {
    expect(() => discord.runCommand({ user: bob, channelId: discord.botDmChannel(bob), command: 'config' })).toThrow(/no \/config/);
    expect(() => discord.runCommand({ user: alice, channelId: foreign.textChannelId, command: 'config' })).toThrow(/no \/config/);
    // carol can't reach the bot's DM: no shared server, no install.
    expect(() => discord.runCommand({ user: carol, channelId: discord.botDmChannel(carol), command: 'make' })).toThrow(/cannot reach/);
  });
});

describe('a user install in a server without the bot', () => {
  it('answers through the interaction only: the channel post is 50001, follow-ups stop at five', async () => {
    let handle!: InteractionHandle;
    const seen = await handled(
      async (interaction) => {
        if (!(interaction instanceof ChatInputCommandInteraction)) throw new Error('not a slash command');
        await interaction.reply({ content: 'working', flags: MessageFlags.Ephemeral });
        const post = await refusal(
          interaction.client.rest.post(Routes.channelMessages(interaction.channelId), { body: { content: 'hi' } }),
        );
        for (let sent = 0; sent < USER_INSTALL_FOLLOW_UP_LIMIT; sent++) await interaction.followUp(`part ${sent + 1}`);
        const sixth = await refusal(interaction.followUp('one too many'));
        return {
          post,
          sixth,
          context: interaction.context,
          owners: { guildId: interaction.authorizingIntegrationOwners.guildId, userId: interaction.authorizingIntegrationOwners.userId },
          guildId: interaction.guildId,
          inRawGuild: interaction.inRawGuild(),
          guildLocale: interaction.guildLocale,
          sendMessages: interaction.appPermissions.has(PermissionFlagsBits.SendMessages),
        };
      },
      () => (handle = discord.runCommand({ user: alice, channelId: foreign.textChannelId, command: 'make' })),
    );
    expect(seen).toMatchObject({
      post: { status: 403, code: 50001 },
      sixth: { status: 400, code: 40094 },
      context: InteractionContextType.Guild,
      guildId: foreign.id,
      inRawGuild: true,
      guildLocale: 'fr',
      sendMessages: false,
    });
    // Only the user's install: the server has not installed the app.
    expect(seen.owners).toEqual({ guildId: null, userId: alice.id });
    expect(handle.interaction.guild).toEqual({ id: foreign.id, locale: 'fr', features: [] });
    expect(handle.followUps).toHaveLength(USER_INSTALL_FOLLOW_UP_LIMIT);
    // The bot is not in that server: no GUILD_CREATE, and no MESSAGE_CREATE for what it said there.
    expect(client.guilds.cache.has(foreign.id)).toBe(false);
    expect(client.guilds.cache.has(home.id)).toBe(true);
  });

  it('names both installs where a member of the bot server installed the app too, and only the server where the command is server-only', () => {
    discord.installAppForUser(bob);
    try {
      const both = discord.runCommand({ user: bob, channelId: home.textChannelId, command: 'make' });
      expect(both.interaction.authorizing_integration_owners).toEqual({ '0': home.id, '1': bob.id });
      const serverOnly = discord.runCommand({ user: bob, channelId: home.textChannelId, command: 'config' });
      expect(serverOnly.interaction.authorizing_integration_owners).toEqual({ '0': home.id });
    } finally {
      discord.uninstallAppForUser(bob);
    }
  });
});

describe('a user install in a DM between users', () => {
  it('runs a message command from the Apps menu there, in context 2, without the bot in the channel', async () => {
    const dm = discord.createPrivateChannel({ users: [alice, carol] });
    const message = discord.postMessage({ user: carol, channelId: dm.id, content: 'look at this' });
    const seen = await handled(
      async (interaction) => {
        if (!(interaction instanceof MessageContextMenuCommandInteraction)) throw new Error('not a message command');
        await interaction.reply({ content: 'animating', files: [{ attachment: Buffer.from('gif'), name: 'a.gif' }] });
        const post = await refusal(interaction.client.rest.post(Routes.channelMessages(dm.id), { body: { content: 'hi' } }));
        return { context: interaction.context, target: interaction.targetMessage.content, guildId: interaction.guildId, post };
      },
      () => discord.runMessageCommand({ user: alice, message, command: 'Animate image' }),
    );
    expect(seen).toEqual({
      context: InteractionContextType.PrivateChannel,
      target: 'look at this',
      guildId: null,
      post: expect.objectContaining({ status: 403, code: 50001 }),
    });
    // carol has not installed the app: Discord offers her nothing there.
    expect(() => discord.runCommand({ user: carol, channelId: dm.id, command: 'make' })).toThrow(/no \/make/);
  });
});

describe('the bot DMs users', () => {
  it('reaches a user who installed the app or shares a server; not a stranger (50278) or closed DMs (50007)', async () => {
    await client.users.send(alice.id, { content: 'your video', files: [{ attachment: Buffer.from('mp4'), name: 'v.mp4' }] });
    const delivered = await discord.waitForDirectMessage(alice.id, (message) => message.content === 'your video');
    expect(delivered.attachments.map((attachment) => attachment.filename)).toEqual(['v.mp4']);
    await client.users.send(bob.id, 'hello');
    expect(discord.directMessages(bob.id).map((message) => message.content)).toContain('hello');
    expect(await refusal(client.users.send(carol.id, 'hello'))).toMatchObject({ status: 403, code: 50278 });
    discord.closeDirectMessages(bob.id);
    expect(await refusal(client.users.send(bob.id, 'again'))).toMatchObject({ status: 403, code: 50007 });
    discord.openDirectMessages(bob.id);
  });
});
