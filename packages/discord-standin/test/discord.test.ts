import { once } from 'node:events';
import {
  ActionRowBuilder,
  ApplicationCommandType,
  ButtonBuilder,
  ButtonStyle,
  Client,
  ContextMenuCommandBuilder,
  DiscordAPIError,
  Events,
  GatewayIntentBits,
  GuildMember,
  MessageFlags,
  ModalBuilder,
  PermissionFlagsBits,
  Role,
  SlashCommandBuilder,
  TextInputBuilder,
  TextInputStyle,
  type Interaction,
  type TextChannel,
} from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDiscordStandIn, type DiscordStandIn, type TestGuild, type User } from '../src/index.ts';

// The stand-in against the real discord.js client, in this process: everything the bot relies on.

let discord: DiscordStandIn;
let guild: TestGuild;
let client: Client;
/** What the next interaction should do; each test sets it. */
let onInteraction: (interaction: Interaction) => Promise<void> = async () => {};

const probe = new SlashCommandBuilder()
  .setName('probe')
  .setDescription('every option type')
  .addSubcommand((sub) =>
    sub
      .setName('all')
      .setDescription('all types')
      .addStringOption((option) => option.setName('text').setDescription('s').setRequired(true).setAutocomplete(true))
      .addIntegerOption((option) => option.setName('count').setDescription('i'))
      .addNumberOption((option) => option.setName('ratio').setDescription('n'))
      .addBooleanOption((option) => option.setName('flag').setDescription('b'))
      .addUserOption((option) => option.setName('who').setDescription('u'))
      .addChannelOption((option) => option.setName('where').setDescription('c'))
      .addRoleOption((option) => option.setName('role').setDescription('r'))
      .addAttachmentOption((option) => option.setName('file').setDescription('a')),
  )
  .addSubcommandGroup((group) =>
    group
      .setName('group')
      .setDescription('a subcommand group')
      .addSubcommand((sub) =>
        sub
          .setName('inner')
          .setDescription('in the group')
          .addMentionableOption((option) => option.setName('target').setDescription('m').setRequired(true)),
      ),
  );

const onMessage = new ContextMenuCommandBuilder().setName('Probe message').setType(ApplicationCommandType.Message);

beforeAll(async () => {
  discord = await startDiscordStandIn({ responseDeadlineMs: 1500, heartbeatIntervalMs: 500 });
  guild = discord.createGuild({ attachmentSizeLimit: 1000 });
  client = new Client({ intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildVoiceStates], rest: { api: discord.apiUrl } });
  client.on(Events.InteractionCreate, (interaction) => {
    void onInteraction(interaction);
  });
  const ready = once(client, Events.ClientReady);
  await client.login(discord.botToken);
  await ready;
  await client.application!.commands.set([probe.toJSON(), onMessage.toJSON()]);
}, 30_000);

afterAll(async () => {
  await client?.destroy();
  await discord?.close();
});

function channel(): TextChannel {
  const found = client.channels.cache.get(guild.textChannelId);
  if (!found?.isTextBased() || found.isDMBased() || !('send' in found)) throw new Error('no text channel');
  return found as TextChannel;
}

describe('login and the gateway', () => {
  it('caches the server, its channels and roles before clientReady', () => {
    const cached = client.guilds.cache.get(guild.id);
    expect(cached?.channels.cache.map((entry) => entry.name).sort()).toEqual(['Voice', 'general']);
    expect(cached?.roles.cache.has(guild.id)).toBe(true);
    expect(cached?.members.cache.has(client.user!.id)).toBe(true);
  });

  it('records the registered commands, global and per server', async () => {
    expect(discord.commands().map((command) => [command.name, command.type])).toEqual([
      ['probe', 1],
      ['Probe message', 3],
    ]);
    await client.application!.commands.set([probe.toJSON()], guild.id);
    expect(discord.commands(guild.id)).toEqual([expect.objectContaining({ name: 'probe', guild_id: guild.id })]);
    const fetched = await client.application!.commands.fetch({ guildId: guild.id });
    expect([...fetched.values()].map((command) => command.name)).toEqual(['probe']);
  });

  it('refuses a wrong token, so login fails', async () => {
    const intruder = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: discord.apiUrl } });
    try {
      await expect(intruder.login('MTIz.wrong.token')).rejects.toThrow();
    } finally {
      await intruder.destroy();
    }
  });

  it('shows simulated users joining and leaving voice in the voice state cache', async () => {
    const joined = once(client, Events.VoiceStateUpdate);
    discord.joinVoice(guild.member, guild.id, guild.voiceChannelId);
    await joined;
    expect(client.guilds.cache.get(guild.id)?.voiceStates.cache.get(guild.member.id)?.channelId).toBe(guild.voiceChannelId);
    const left = once(client, Events.VoiceStateUpdate);
    discord.leaveVoice(guild.member, guild.id);
    await left;
    expect(client.guilds.cache.get(guild.id)?.voiceStates.cache.get(guild.member.id)?.channelId ?? null).toBeNull();
  });

  it('shows a permission taken from the bot as its member overwrite on the channel, and gives it back', async () => {
    const cachedGuild = client.guilds.cache.get(guild.id)!;
    const voiceChannel = () => cachedGuild.channels.cache.get(guild.voiceChannelId)!;
    const me = cachedGuild.members.me!;
    const updated = once(client, Events.ChannelUpdate);
    discord.denyBotPermission(guild.voiceChannelId, 'connect');
    await updated;
    expect(voiceChannel().permissionsFor(me).has(PermissionFlagsBits.Connect)).toBe(false);
    expect(voiceChannel().permissionsFor(me).has(PermissionFlagsBits.Speak)).toBe(true);
    const restored = once(client, Events.ChannelUpdate);
    discord.restoreBotPermissions(guild.voiceChannelId);
    await restored;
    expect(voiceChannel().permissionsFor(me).has(PermissionFlagsBits.Connect)).toBe(true);
  });

  it('resumes after a dropped connection and receives what it missed', async () => {
    const resumed = once(client, Events.ShardResume);
    discord.dropGatewayConnection();
    const late = discord.createGuild({ name: 'joined-while-away' });
    await resumed;
    await discord.waitFor(() => (client.guilds.cache.has(late.id) ? true : undefined), 5000, 'the missed GUILD_CREATE');
  });

  it('reconnects when a heartbeat goes unanswered', async () => {
    const resumed = once(client, Events.ShardResume);
    discord.withholdHeartbeatAck();
    await resumed;
    expect(discord.gatewayConnected).toBe(true);
  });
});

describe('interactions', () => {
  it('delivers a subcommand with every option type, including an attachment served over http', async () => {
    const seen = new Promise<Record<string, unknown>>((resolve) => {
      onInteraction = async (interaction) => {
        if (!interaction.isChatInputCommand()) return;
        const file = interaction.options.getAttachment('file', true);
        const bytes = Buffer.from(await (await fetch(file.url)).arrayBuffer());
        await interaction.reply({ content: 'ok', flags: MessageFlags.Ephemeral });
        resolve({
          sub: interaction.options.getSubcommand(),
          text: interaction.options.getString('text'),
          count: interaction.options.getInteger('count'),
          ratio: interaction.options.getNumber('ratio'),
          flag: interaction.options.getBoolean('flag'),
          who: interaction.options.getUser('who')?.id,
          where: interaction.options.getChannel('where')?.id,
          role: interaction.options.getRole('role')?.id,
          file: bytes.toString(),
          limit: interaction.attachmentSizeLimit,
        });
      };
    });
    const run = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'probe',
      subcommand: 'all',
      options: {
        text: 'hi',
        count: 3,
        ratio: 0.5,
        flag: true,
        who: guild.admin,
        where: guild.voiceChannelId,
        role: guild.adminRoleId,
        file: { filename: 'a.txt', bytes: Buffer.from('hello'), contentType: 'text/plain' },
      },
    });
    expect(await seen).toEqual({
      sub: 'all',
      text: 'hi',
      count: 3,
      ratio: 0.5,
      flag: true,
      who: guild.admin.id,
      where: guild.voiceChannelId,
      role: guild.adminRoleId,
      file: 'hello',
      limit: 1000,
    });
    expect(await run.response()).toMatchObject({ type: 4, data: { content: 'ok', flags: 64 } });
  });

  it('delivers a subcommand in a group, with a mentionable resolved as a member or as a role', async () => {
    const seen: Record<string, unknown>[] = [];
    onInteraction = async (interaction) => {
      if (!interaction.isChatInputCommand()) return;
      const target = interaction.options.getMentionable('target', true);
      seen.push({
        group: interaction.options.getSubcommandGroup(),
        sub: interaction.options.getSubcommand(),
        memberId: target instanceof GuildMember ? target.id : undefined,
        roleName: target instanceof Role ? target.name : undefined,
      });
      await interaction.reply({ content: 'ok', flags: MessageFlags.Ephemeral });
    };
    const run = (target: User | string) =>
      discord
        .runCommand({
          user: guild.member,
          guildId: guild.id,
          channelId: guild.textChannelId,
          command: 'probe',
          group: 'group',
          subcommand: 'inner',
          options: { target },
        })
        .response();
    await run(guild.admin);
    await run(guild.adminRoleId);
    expect(seen).toEqual([
      { group: 'group', sub: 'inner', memberId: guild.admin.id, roleName: undefined },
      { group: 'group', sub: 'inner', memberId: undefined, roleName: 'Admins' },
    ]);
  });

  it('shows a deferred reply as thinking until it is edited, and records follow-ups', async () => {
    onInteraction = async (interaction) => {
      if (!interaction.isChatInputCommand()) return;
      await interaction.deferReply();
      await interaction.editReply('done');
      await interaction.followUp({ content: 'more', flags: MessageFlags.Ephemeral });
    };
    const run = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'probe',
      subcommand: 'all',
      options: { text: 'x' },
    });
    expect((await run.response()).type).toBe(5);
    expect((await run.reply()).content).toBe('done');
    await discord.waitFor(() => run.followUps[0], 5000, 'a follow-up');
    expect(run.followUps[0]).toMatchObject({ content: 'more', flags: 64 });
  });

  it('takes files in a reply, and refuses an edit with a file over the server limit with 413 / 40005', async () => {
    const failure = new Promise<unknown>((resolve) => {
      onInteraction = async (interaction) => {
        if (!interaction.isChatInputCommand()) return;
        await interaction.reply({ content: 'clip', files: [{ attachment: Buffer.alloc(800, 2), name: 'clip.mp4' }] });
        await interaction
          .editReply({ files: [{ attachment: Buffer.alloc(1200, 2), name: 'big.mp4' }] })
          .then(() => resolve(undefined), resolve);
      };
    });
    const run = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'probe',
      subcommand: 'all',
      options: { text: 'x' },
    });
    const error = await failure;
    expect(error).toBeInstanceOf(DiscordAPIError);
    expect(error).toMatchObject({ status: 413, code: 40005 });
    const reply = await run.reply();
    expect(reply.attachments.map((attachment) => [attachment.filename, attachment.bytes.length])).toEqual([['clip.mp4', 800]]);
    expect(discord.uploads.at(-1)).toMatchObject({ messageId: reply.id, attachment: { filename: 'clip.mp4' } });
  });

  it('answers a first response after the deadline with 10062 Unknown interaction', async () => {
    const failure = new Promise<unknown>((resolve) => {
      onInteraction = async (interaction) => {
        if (!interaction.isChatInputCommand()) return;
        // `run` is set by then: the interaction reaches this handler over the gateway, after runCommand() returned.
        await discord.waitForResponseDeadline(run);
        await interaction.reply('too late').then(() => resolve(undefined), resolve);
      };
    });
    const run = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'probe',
      subcommand: 'all',
      options: { text: 'x' },
    });
    expect(await failure).toMatchObject({ code: 10062 });
  });

  it('refuses edits through an expired interaction token with 50027', async () => {
    let done!: (value: unknown) => void;
    const result = new Promise<unknown>((resolve) => (done = resolve));
    let expire!: () => void;
    const expired = new Promise<void>((resolve) => (expire = resolve));
    onInteraction = async (interaction) => {
      if (!interaction.isChatInputCommand()) return;
      await interaction.deferReply();
      await expired;
      await interaction.editReply('late').then(() => done(undefined), done);
    };
    const run = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'probe',
      subcommand: 'all',
      options: { text: 'x' },
    });
    await run.response();
    discord.expireInteraction(run);
    expire();
    expect(await result).toMatchObject({ code: 50027 });
  });

  it('routes a button click, a modal submit and autocomplete', async () => {
    const message = await channel().send({
      content: 'click',
      components: [
        new ActionRowBuilder<ButtonBuilder>().addComponents(
          new ButtonBuilder().setCustomId('probe:go').setLabel('Go').setStyle(ButtonStyle.Primary),
        ),
      ],
    });
    onInteraction = async (interaction) => {
      if (interaction.isButton()) {
        const modal = new ModalBuilder().setCustomId('probe:form').setTitle('Form');
        modal.addComponents(
          new ActionRowBuilder<TextInputBuilder>().addComponents(
            new TextInputBuilder().setCustomId('answer').setLabel('Answer').setStyle(TextInputStyle.Short),
          ),
        );
        await interaction.showModal(modal);
      } else if (interaction.isModalSubmit()) {
        await interaction.reply({ content: `got ${interaction.fields.getTextInputValue('answer')}`, flags: MessageFlags.Ephemeral });
      } else if (interaction.isAutocomplete()) {
        await interaction.respond([{ name: `${interaction.options.getFocused()}!`, value: 'v' }]);
      }
    };
    const stored = discord.messages(guild.textChannelId).find((entry) => entry.id === message.id)!;
    const click = discord.clickButton({ user: guild.member, message: stored, customId: 'probe:go' });
    expect(await click.modal()).toEqual({ customId: 'probe:form', inputs: ['answer'] });
    const submit = discord.submitModal({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      customId: 'probe:form',
      fields: { answer: '42' },
    });
    expect((await submit.reply()).content).toBe('got 42');
    const choices = await discord.autocomplete({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'probe',
      subcommand: 'all',
      options: { text: 'ca' },
      focused: 'text',
    });
    expect(choices).toEqual([{ name: 'ca!', value: 'v' }]);
  });
});

describe('message commands', () => {
  it("delivers a message command on a member's message with its attachments and embeds, and a modal from it", async () => {
    const picture = Buffer.from('89504e470d0a1a0a', 'hex');
    const posted = discord.postMessage({
      user: guild.admin,
      channelId: guild.textChannelId,
      content: 'look',
      attachments: [{ filename: 'cat.png', bytes: picture, contentType: 'image/png' }],
      embeds: [
        {
          type: 'image',
          url: 'https://example.com/dog.gif',
          thumbnail: { url: 'https://example.com/dog.gif', proxy_url: 'https://media.example/dog.gif' },
        },
      ],
    });
    expect(discord.uploads.some((upload) => upload.messageId === posted.id)).toBe(false);
    const seen = new Promise<Record<string, unknown>>((resolve) => {
      onInteraction = async (interaction) => {
        if (interaction.isMessageContextMenuCommand()) {
          const target = interaction.targetMessage;
          const attachment = target.attachments.first();
          const bytes = attachment ? Buffer.from(await (await fetch(attachment.url)).arrayBuffer()) : undefined;
          const modal = new ModalBuilder().setCustomId('probe:on-message').setTitle('Form');
          modal.addComponents(
            new ActionRowBuilder<TextInputBuilder>().addComponents(
              new TextInputBuilder().setCustomId('answer').setLabel('Answer').setStyle(TextInputStyle.Short),
            ),
          );
          await interaction.showModal(modal);
          resolve({
            name: interaction.commandName,
            target: interaction.targetId,
            author: target.author.id,
            content: target.content,
            attachment: attachment && { name: attachment.name, contentType: attachment.contentType, size: attachment.size, bytes },
            thumbnail: target.embeds[0]?.thumbnail?.proxyURL,
          });
        } else if (interaction.isModalSubmit()) {
          await interaction.reply({ content: `got ${interaction.fields.getTextInputValue('answer')}`, flags: MessageFlags.Ephemeral });
        }
      };
    });
    const run = discord.runMessageCommand({ user: guild.member, message: posted, command: 'Probe message' });
    expect(await seen).toEqual({
      name: 'Probe message',
      target: posted.id,
      author: guild.admin.id,
      content: 'look',
      attachment: { name: 'cat.png', contentType: 'image/png', size: picture.length, bytes: picture },
      thumbnail: 'https://media.example/dog.gif',
    });
    expect(await run.modal()).toEqual({ customId: 'probe:on-message', inputs: ['answer'] });
    const submit = discord.submitModal({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      customId: 'probe:on-message',
      fields: { answer: '7' },
    });
    expect((await submit.reply()).content).toBe('got 7');
  });

  it('runs a slash command only as a slash command, and a message command only on a message', () => {
    const posted = discord.postMessage({ user: guild.member, channelId: guild.textChannelId, content: 'plain' });
    expect(() => discord.runMessageCommand({ user: guild.member, message: posted, command: 'probe' })).toThrow(
      'probe is not a message command',
    );
    expect(() =>
      discord.runCommand({ user: guild.member, guildId: guild.id, channelId: guild.textChannelId, command: 'Probe message' }),
    ).toThrow('Probe message is not a slash command');
  });
});

describe('channel messages', () => {
  it('stores an upload within the server limit and refuses one over it with 413 / 40005', async () => {
    const fits = await channel().send({ files: [{ attachment: Buffer.alloc(900, 1), name: 'small.bin' }] });
    const stored = await discord.waitForMessage(guild.textChannelId, (message) => message.id === fits.id);
    expect(stored.attachments[0]?.bytes.length).toBe(900);
    const error = await channel()
      .send({ files: [{ attachment: Buffer.alloc(1100, 1), name: 'big.bin' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DiscordAPIError);
    expect(error).toMatchObject({ status: 413, code: 40005 });
  });

  it('answers a repeated nonce with enforce_nonce with the first message', async () => {
    const first = await channel().send({ content: 'once', nonce: 'nonce-1234', enforceNonce: true });
    const second = await channel().send({ content: 'once', nonce: 'nonce-1234', enforceNonce: true });
    expect(second.id).toBe(first.id);
    expect(discord.messages(guild.textChannelId).filter((message) => message.content === 'once')).toHaveLength(1);
  });

  it('makes discord.js wait out a 429 Retry-After, and retry a 5xx', async () => {
    discord.rateLimit({ method: 'POST', route: /\/channels\/\d+\/messages$/, times: 1, retryAfterSeconds: 1 });
    const started = Date.now();
    await channel().send('after the limit');
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    const limited = discord.requests.filter((request) => request.status === 429);
    expect(limited).toHaveLength(1);

    discord.failRoute({ method: 'POST', route: /\/channels\/\d+\/messages$/, times: 2, status: 502 });
    await channel().send('after the outage');
    expect(discord.requests.filter((request) => request.status === 502)).toHaveLength(2);
  });

  it('creates a thread from a message, and replies to a message', async () => {
    const message = await channel().send('transcripts');
    const answer = await message.reply('noted');
    expect(answer.reference?.messageId).toBe(message.id);
    expect(discord.messages(guild.textChannelId).find((entry) => entry.id === answer.id)?.messageReference).toEqual({
      message_id: message.id,
    });
    const thread = await message.startThread({ name: 'Voice transcripts' });
    expect(thread.parentId).toBe(guild.textChannelId);
    await thread.send('hello');
    await discord.waitForMessage(thread.id, (entry) => entry.content === 'hello');
  });
});
