import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audible, type CommandRun } from 'discord-standin';
import type { RealtimeSession } from '../../src/emulator/realtime/session.ts';
import { makeDataDirectory } from '../support/bot-process.ts';
import { startOwnRedis, type OwnRedis } from '../support/redis-server.ts';
import { startWorld, type World } from '../support/world.ts';

// Voice metered and budgeted with the bot as a process, on SQLite and on Redis (a server of the test's
// own: the bot resumes every active task it finds in its store, so it never shares one with other
// runs). Voice costs $60 a minute here (PRICES_FILE), $1 a second, so a budget of a few dollars runs
// out in seconds and a short conversation has a cost /usage shows in cents.

const PRICES = { voice: { '*': { per_minute_usd: 60 } } };

function pricesFile(): string {
  const path = join(makeDataDirectory(), 'prices.json');
  writeFileSync(path, JSON.stringify(PRICES));
  return path;
}

/** Seconds the emulator held these sessions open, from their configuration to their close. */
function openSeconds(sessions: readonly RealtimeSession[]): number {
  return (
    sessions.reduce((sum, session) => {
      const opened = session.serverEvents.find((entry) => entry.event.type === 'session.updated')?.at ?? Date.now();
      return sum + ((session.closedAt ?? Date.now()) - opened);
    }, 0) / 1000
  );
}

describe.each([
  ['SQLite', () => Promise.resolve(undefined)],
  ['Redis', () => startOwnRedis()],
] as const)('voice conversations on %s', (_store, startRedis: () => Promise<OwnRedis | undefined>) => {
  let world: World;
  let redis: OwnRedis | undefined;
  beforeAll(async () => {
    redis = await startRedis();
    world = await startWorld({ env: { PRICES_FILE: pricesFile(), ...(redis ? { STORE_URL: redis.url } : {}) } });
    // A short goodbye: the emulator speaks a force_message as a tone of 5 ms per character.
    world.emulator.realtime.options.toneMsPerCharacter = 5;
  }, 60_000);
  afterAll(async () => {
    await world?.stop();
    await redis?.close();
  });

  function run(user: CommandRun['user'], command: string, subcommand?: string, options?: CommandRun['options']) {
    const { discord, guild } = world;
    return discord.runCommand({ user, guildId: guild.id, channelId: guild.textChannelId, command, subcommand, options });
  }

  it('warns a conversation over its budget, says why and leaves; /voice join is then refused', async () => {
    const { discord, emulator, guild } = world;
    expect((await run(guild.admin, 'config', 'budget', { member_daily_usd: 3 }).reply()).content).toContain('$3.00');
    try {
      discord.joinVoice(guild.admin, guild.id, guild.voiceChannelId);
      expect((await run(guild.admin, 'voice', 'join').reply()).content).toMatch(/^Joined/);
      const warning = await discord.waitForMessage(guild.textChannelId, (message) => message.content.startsWith('⏳'));
      expect(warning.content).toMatch(
        /of this conversation is left, then I leave: Your daily budget on this server \(\$3\.00\) is used up;/,
      );
      const goodbye = await emulator.realtime.waitForClientEvent(
        (event) => event.type === 'conversation.item.create' && JSON.stringify(event.item).includes('I am leaving now. Goodbye.'),
        15_000,
      );
      await discord.voice.waitForBotAudio(
        guild.id,
        (frames) => audible(frames.filter((frame) => frame.receivedAt >= goodbye.event.at)).length >= 10,
        15_000,
      );
      await discord.waitForMessage(guild.textChannelId, (message) =>
        message.content.startsWith(`Stopped listening in <#${guild.voiceChannelId}>. Your daily budget on this server ($3.00) is used up;`),
      );
      await discord.waitFor(() => (discord.botVoiceChannel(guild.id) ? undefined : true), 10_000, 'the bot leaving voice');

      const refused = await run(guild.admin, 'voice', 'join').reply();
      expect(refused.flags & 64).toBe(64);
      expect(refused.content).toMatch(
        /^I cannot start a conversation: your daily budget on this server \(\$3\.00\) is used up; it starts over <t:\d+:R>\.$/,
      );
      expect(discord.botVoiceChannel(guild.id)).toBeUndefined();
    } finally {
      discord.leaveVoice(guild.admin, guild.id);
      await run(guild.admin, 'config', 'budget', { member_daily_usd: 0 }).reply();
    }
  });

  it("shows a conversation's minutes and cost in /usage, to the member who brought the bot in and to the server", async () => {
    const { discord, emulator, guild } = world;
    discord.joinVoice(guild.member, guild.id, guild.voiceChannelId);
    const before = emulator.realtime.sessions.length;
    expect((await run(guild.member, 'voice', 'join').reply()).content).toMatch(/^Joined/);
    // A turn spoken and answered: the conversation lasts as long as that takes.
    discord.voice.clearBotAudio(guild.id);
    await discord.voice.speakTone(guild.id, guild.member.id, { hz: 440, ms: 600, amplitude: 0.5 });
    await discord.voice.waitForBotAudio(guild.id, (frames) => audible(frames).length >= 20, 15_000);
    expect((await run(guild.member, 'voice', 'leave').reply()).content).toBe('Left the voice channel.');
    discord.leaveVoice(guild.member, guild.id);
    const seconds = openSeconds(emulator.realtime.sessions.slice(before));

    const own = (await run(guild.member, 'usage').reply()).content;
    const today = /^\*\*Your usage today\*\* \([^)]* UTC\): 0 videos, \$0\.00; voice (\d+) sec, about \$(\d+\.\d\d) \(estimated\)$/m.exec(
      own,
    );
    expect(today, own).not.toBeNull();
    expect(Math.abs(Number(today![1]) - seconds)).toBeLessThanOrEqual(1);
    expect(Math.abs(Number(today![2]) - seconds)).toBeLessThanOrEqual(1);
    expect(own).not.toContain('**Server today');

    const server = (await run(guild.admin, 'usage').reply()).content;
    const memberRow = new RegExp(
      `^<@${guild.member.id}>: 0 videos, \\$0\\.00; voice ${today![1]} sec, about \\$${today![2]} \\(estimated\\)$`,
      'm',
    );
    // The server's day and month both list the member, and the admin's own conversation above.
    expect(server.match(new RegExp(memberRow.source, 'gm'))).toHaveLength(2);
    expect(server).toMatch(
      new RegExp(`^<@${guild.admin.id}>: 0 videos, \\$0\\.00; voice \\d+ sec, about \\$\\d+\\.\\d\\d \\(estimated\\)$`, 'm'),
    );
    expect(server).toMatch(/^\*\*Server today \([^)]* UTC\)\*\*: 0 videos, \$0\.00; voice \d+ sec, about \$\d+\.\d\d \(estimated\)$/m);
  });
});
