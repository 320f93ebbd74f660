import { REST } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DiscordStandIn, startDiscordStandIn, type TestGuild } from 'discord-standin';
import { DiscordOutbox } from '../../src/discord/outbox.ts';
import { MESSAGE_LIMITS } from '../../src/discord/message-limits.ts';
import { USD_TICKS } from '../../src/gateway/spec.ts';
import { createLogger } from '../../src/lib/log.ts';
import { ModerationLog } from '../../src/settings/moderation-log.ts';

// A server's moderation log posting through the bot's outbox and discord.js's own REST client to the
// Discord stand-in, which keeps each message as sent (its allowed_mentions too) and refuses what Discord
// refuses.

let discord: DiscordStandIn;
let guild: TestGuild;
let outbox: DiscordOutbox;

beforeAll(async () => {
  discord = await startDiscordStandIn();
  guild = discord.createGuild();
  outbox = new DiscordOutbox(new REST({ api: discord.apiUrl }).setToken(discord.botToken));
}, 30_000);

afterAll(async () => {
  await discord?.close();
});

describe('a moderation log on Discord', () => {
  it('posts a burst of 30 jobs as at most 3 messages that ping nobody', async () => {
    let linesPosted = 0;
    let allPosted: () => void = () => undefined;
    const posted = new Promise<void>((resolve) => {
      allPosted = resolve;
    });
    const logged = new ModerationLog({
      logChannel: () => Promise.resolve(guild.textChannelId),
      post: async (channelId, content) => {
        await outbox.say(channelId, content, { linkPreviews: false });
        linesPosted += content.split('\n').length;
        if (linesPosted >= 30) allPosted();
      },
      log: createLogger({ level: 'warn', write: () => undefined }),
    });
    const before = discord.messages(guild.textChannelId).length;
    for (let index = 1; index <= 30; index++)
      logged.job({
        guildId: guild.id,
        channelId: guild.textChannelId,
        messageId: `40000000000000${String(index).padStart(4, '0')}`,
        userId: guild.member.id,
        // A short prompt, as most are: a line of about 175 characters, 11 to a message.
        prompt: `a red fox number ${index} in the snow`,
        videos: 1,
        estimateUsdTicks: 0.4 * USD_TICKS,
      });
    await posted;

    const messages = discord.messages(guild.textChannelId).slice(before);
    expect(messages.length).toBeGreaterThanOrEqual(2);
    expect(messages.length).toBeLessThanOrEqual(3);
    const lines = messages.flatMap((message) => message.content.split('\n'));
    expect(lines).toHaveLength(30);
    expect(lines.every((line) => line.startsWith(`🎬 <@${guild.member.id}> asked for a video, about $0.40: “a red fox number`))).toBe(true);
    for (const message of messages) {
      expect(message.content.length).toBeLessThanOrEqual(MESSAGE_LIMITS.content);
      expect(message.allowedMentions).toEqual({ parse: [] });
    }
  });

  it('logs once that it may not post in its channel, and drops its lines', async () => {
    const other = discord.createGuild();
    const warnings: string[] = [];
    const logged = new ModerationLog({
      logChannel: () => Promise.resolve(other.textChannelId),
      post: (channelId, content) => outbox.say(channelId, content, { linkPreviews: false }),
      log: createLogger({ level: 'warn', write: (line) => warnings.push(line) }),
    });
    discord.denyBotPermission(other.textChannelId, 'sendMessages');
    const change = { guildId: other.id, by: other.admin.id, change: 'set limits' };
    logged.configChanged(change);
    await logged.flush();
    logged.configChanged(change);
    await logged.flush();
    expect(discord.messages(other.textChannelId)).toEqual([]);
    expect(warnings.filter((line) => line.includes('may not post there'))).toHaveLength(1);
    expect(warnings.join('\n')).toContain('50013');
  });
});
