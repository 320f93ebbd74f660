import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InteractionHandle, Message, TestGuild, User } from 'discord-standin';
import { MESSAGE_LIMITS } from '../../src/discord/message-limits.ts';
import { resolveLocale, t } from '../../src/i18n/index.ts';
import { isRecord } from '../../src/lib/json.ts';
import { startWorld, type World } from '../support/world.ts';

// Moderators' rules on the stand-ins (issue 36): an admin sets each of them with /config rules, sees them in
// /config show and its history, reads them in full with /config rules alone, and is refused privately,
// naming the option and the limit, past 200 blocked words, a word past 60 characters, denying the owner or
// themselves, a channel of the wrong kind and a log channel the bot cannot post in.

let world: World;
beforeAll(async () => {
  world = await startWorld();
}, 60_000);
afterAll(async () => {
  await world?.stop();
});

const EPHEMERAL = 64;

function rules(guild: TestGuild, user: User, options: Record<string, string | boolean> = {}): InteractionHandle {
  return world.discord.runCommand({
    user,
    guildId: guild.id,
    channelId: guild.textChannelId,
    command: 'config',
    subcommand: 'rules',
    options,
  });
}

async function show(guild: TestGuild): Promise<string> {
  return (
    await world.discord
      .runCommand({ user: guild.admin, guildId: guild.id, channelId: guild.textChannelId, command: 'config', subcommand: 'show' })
      .reply()
  ).content;
}

/** The private messages an interaction answered with (its reply, then its follow-ups), once they hold `last`. */
async function answersUntil(handle: InteractionHandle, last: string): Promise<Message[]> {
  await handle.reply();
  return world.discord.waitFor(
    () => {
      const all = [handle.record.original, ...handle.followUps].filter((message): message is Message => message !== undefined);
      return all.some((message) => message.content.includes(last)) ? all : undefined;
    },
    10_000,
    `an answer holding ${last}`,
  );
}

/** The server's owner, as Discord tells the bot (GET /guilds/{id}). */
async function ownerOf(guild: TestGuild): Promise<string> {
  const answer = await fetch(`${world.discord.apiUrl}/guilds/${guild.id}`, { headers: { Authorization: `Bot ${world.discord.botToken}` } });
  const body: unknown = await answer.json();
  if (!isRecord(body) || typeof body.owner_id !== 'string') throw new Error('the guild has no owner_id');
  return body.owner_id;
}

describe('/config rules', () => {
  it('is registered with its options, for Manage Server only like the rest of /config', () => {
    const optionsOf = (node: unknown) => (isRecord(node) && Array.isArray(node.options) ? node.options.filter(isRecord) : []);
    const config = world.discord.commands().find((command) => command.name === 'config');
    expect(config?.default_member_permissions).toBe('32');
    const subcommand = optionsOf(config).find((option) => option.name === 'rules');
    expect(optionsOf(subcommand).map((option) => [option.name, option.type, option.channel_types])).toEqual([
      ['blocked_words_add', 3, undefined],
      ['blocked_words_remove', 3, undefined],
      ['blocked_words_clear', 5, undefined],
      ['video_channel_add', 7, [0, 5, 15]],
      ['video_channel_remove', 7, [0, 5, 15]],
      ['video_channels_clear', 5, undefined],
      ['deny', 6, undefined],
      ['allow', 6, undefined],
      ['log_channel', 7, [0, 5]],
      ['clear_log_channel', 5, undefined],
    ]);
  });

  it('sets each rule, shows it in /config show and its history, and every word in full on its own', async () => {
    const { discord } = world;
    const guild = discord.createGuild({ name: 'ruled' });
    const troll = discord.createUser({ guildId: guild.id, name: 'troll' });
    const admin = guild.admin.id;

    const blocked = await rules(guild, guild.admin, { blocked_words_add: 'dragon, Red  Dragon, dragon*, DRAGON!' }).reply();
    expect(blocked.flags & EPHEMERAL).toBe(EPHEMERAL);
    expect(blocked.content.split('\n')[0]).toBe('Saved.');
    expect(blocked.content).toContain('**Rules:** 3 blocked words; /video in every channel; no member denied; no log');
    await rules(guild, guild.admin, { video_channel_add: guild.textChannelId }).reply();
    await rules(guild, guild.admin, { deny: troll.id }).reply();
    const logged = await rules(guild, guild.admin, { log_channel: guild.textChannelId }).reply();
    const line = `**Rules:** 3 blocked words; /video only in <#${guild.textChannelId}>; 1 member denied; log in <#${guild.textChannelId}>`;
    expect(logged.content).toContain(line);

    const shown = await show(guild);
    expect(shown).toContain(line);
    for (const change of [
      'set rules: blocked "dragon", "Red Dragon", "dragon*", "DRAGON!"',
      `set rules: allowed /video in <#${guild.textChannelId}>`,
      `set rules: denied <@${troll.id}> the bot`,
      `set rules: log in <#${guild.textChannelId}>`,
    ])
      expect(shown).toMatch(new RegExp(`<t:\\d+:R> <@${admin}> ${change.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));

    const full = (await rules(guild, guild.admin).reply()).content;
    expect(full.split('\n')).toEqual([
      "**This server's rules** (`/config rules` changes them)",
      '**Blocked words and phrases** (3 of 200): `dragon`, `Red Dragon`, `dragon*`',
      `**Where /video and the message commands may be used:** <#${guild.textChannelId}>`,
      `**Members denied the bot** (1): <@${troll.id}>`,
      `**Log channel:** <#${guild.textChannelId}>`,
    ]);

    // Taken back: removed however written, the member allowed again, the channels and the log cleared.
    await rules(guild, guild.admin, {
      blocked_words_remove: 'RED DRAGON',
      allow: troll.id,
      video_channels_clear: true,
      clear_log_channel: true,
    }).reply();
    const after = await show(guild);
    expect(after).toContain('**Rules:** 2 blocked words; /video in every channel; no member denied; no log');
    // The history quotes a change's first 80 characters.
    expect(after).toContain(`<@${admin}> set rules: unblocked "RED DRAGON", allowed /video in every channel, allowed <@`);
  });

  it('refuses the 201st word and a word of 61 characters privately, naming the option and the limit, keeping the 200', async () => {
    const guild = world.discord.createGuild({ name: 'full of words' });
    const two_hundred = Array.from({ length: 200 }, (_, index) => `word${index}`);
    expect((await rules(guild, guild.admin, { blocked_words_add: two_hundred.slice(0, 199).join(', ') }).reply()).content).toContain(
      '**Rules:** 199 blocked words',
    );
    expect((await rules(guild, guild.admin, { blocked_words_add: 'word199' }).reply()).content).toContain('**Rules:** 200 blocked words');

    const past = await rules(guild, guild.admin, { blocked_words_add: 'one too many' }).reply();
    expect(past.content).toBe(
      '`blocked_words_add`: a server blocks at most 200 words and phrases; with these it would be 201. `blocked_words_remove` makes room.',
    );
    expect(past.flags & EPHEMERAL).toBe(EPHEMERAL);

    await rules(guild, guild.admin, { blocked_words_remove: 'word0' }).reply();
    const long = await rules(guild, guild.admin, { blocked_words_add: `fine, ${'x'.repeat(61)}` }).reply();
    expect(long.content).toBe(
      `\`blocked_words_add\`: a blocked word or phrase is at most 60 characters. Too long: \`${'x'.repeat(29)}…\`.`,
    );
    expect(long.flags & EPHEMERAL).toBe(EPHEMERAL);

    // Nothing of either was kept, nor recorded.
    const shown = await show(guild);
    expect(shown).toContain('**Rules:** 199 blocked words');
    expect(shown).not.toContain('one too many');
    expect(shown).not.toContain('"fine"');

    // In full, the 199 words in as many messages as they take, each within Discord's limit.
    const full = await answersUntil(rules(guild, guild.admin), '**Log channel:**');
    const text = full.map((message) => message.content).join('\n');
    for (const message of full) expect(message.content.length).toBeLessThanOrEqual(MESSAGE_LIMITS.content);
    for (const word of two_hundred.slice(1)) expect(text).toContain(`\`${word}\``);
  });

  it('refuses denying the owner or oneself, a voice channel for /video, and a log channel the bot cannot post in', async () => {
    const { discord } = world;
    const guild = discord.createGuild({ name: 'careful' });
    const refused = async (options: Record<string, string>) => {
      const answer = await rules(guild, guild.admin, options).reply();
      expect(answer.flags & EPHEMERAL).toBe(EPHEMERAL);
      return answer.content;
    };
    expect(await refused({ deny: await ownerOf(guild) })).toBe("`deny`: the server's owner cannot be denied the bot.");
    expect(await refused({ deny: guild.admin.id })).toBe('`deny`: you cannot deny yourself the bot.');
    expect(await refused({ video_channel_add: guild.voiceChannelId })).toBe(
      `\`video_channel_add\`: <#${guild.voiceChannelId}> is not a text channel or forum of this server.`,
    );
    discord.denyBotPermission(guild.textChannelId, 'sendMessages');
    try {
      expect(await refused({ log_channel: guild.textChannelId })).toBe(
        `I may not post in <#${guild.textChannelId}>: I lack **Send Messages** there. A server admin can give me View Channel and Send Messages in that channel, or pick another \`log_channel\`.`,
      );
    } finally {
      discord.restoreBotPermissions(guild.textChannelId);
    }
    const shown = await show(guild);
    expect(shown).toContain('**Rules:** none');
    expect(shown).not.toContain('set rules');
  });

  it('answers a German admin in German, and refuses a member without Manage Server', async () => {
    const { discord } = world;
    const guild = discord.createGuild({ name: 'deutsch' });
    discord.setUserLocale(guild.admin.id, 'de');
    const german = resolveLocale('de', undefined, 'member');
    const answer = await rules(guild, guild.admin, { deny: await ownerOf(guild) }).reply();
    expect(answer.content).toBe(t(german, 'config.rules.deny-owner'));
    const member = await rules(guild, guild.member, { blocked_words_add: 'mine' }).reply();
    expect(member.content).toBe(t(resolveLocale('en-US', undefined, 'member'), 'requirement.manage-server', { what: '`/config rules`' }));
  });
});
