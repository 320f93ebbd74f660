import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type DiscordStandIn, startDiscordStandIn, type TestGuild } from 'discord-standin';
import type { RealtimeSession } from '../../src/emulator/realtime/session.ts';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { isRecord } from '../../src/lib/json.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { defaultVoiceSettings } from '../../src/settings/voice-settings.ts';
import { openStore } from '../../src/store/index.ts';
import { CONVERSATION_RECORDS, RECORD_TTL_MS } from '../../src/voice/conversation-record.ts';
import { cleanupBotDirectories, makeDataDirectory, startBot, type BotProcess } from '../support/bot-process.ts';
import { forcedLines, textMessages } from '../support/realtime-lines.ts';
import { startOwnRedis, type OwnRedis } from '../support/redis-server.ts';
import {
  BACK_LINE,
  beforeRestart,
  cameBack,
  endConversation,
  exchange,
  joinVoice,
  RESTART_LINE,
  twoExchanges,
  waitForLine,
} from '../support/voice-restart.ts';
import { botEnvironment, startWorld, type World } from '../support/world.ts';

// Voice conversations across restarts of the bot as a process: a graceful stop (SIGTERM) says it restarts
// and the next start brings the conversation back, its earlier turns in the new realtime session's context;
// a SIGKILL says nothing and the conversation comes back the same; a channel everyone left stays left.
// Sharded, a rolling restart of the workers brings each conversation back from the worker of its shard.

/** A stored conversation's instructions after a hand edit or a bug: far past what /voice settings takes. */
const HUGE_INSTRUCTIONS = 'x'.repeat(5 * 1024 * 1024);

/** Changes the stored record of `guildId`'s conversation as it is, settings and all, while the bot is stopped. */
async function editStoredConversation(
  dataDirectory: string,
  guildId: string,
  edit: (record: Record<string, unknown>) => Record<string, unknown>,
): Promise<void> {
  const store = await openStore(`sqlite://${join(dataDirectory, 'bot.sqlite')}`, silentLogger);
  try {
    const records = store.collection(CONVERSATION_RECORDS, (raw) => {
      if (!isRecord(raw)) throw new Error('a conversation record is an object');
      return raw;
    });
    const edited = await records.update(guildId, (record) => record && edit(record), RECORD_TTL_MS);
    expect(edited).toBeDefined();
  } finally {
    await store.close();
  }
}

/** The instructions of every session.update the bot sent on `session`. */
function sentInstructions(session: RealtimeSession): unknown[] {
  return session.clientEvents.flatMap(({ event }) =>
    event.type === 'session.update' && isRecord(event.session) ? [event.session.instructions] : [],
  );
}

/** A sharded rolling restart's bound: each conversation is back within this long of its worker being ready. */
const WORKER_BACK_WITHIN_MS = 15_000;

let world: World;
beforeAll(async () => {
  world = await startWorld();
  // Short lines: a force_message or a scripted answer is a tone 5 ms per character.
  world.emulator.realtime.options.toneMsPerCharacter = 5;
}, 60_000);
afterAll(() => world?.stop());
afterEach(() => endConversation(world));

describe('voice conversations across restarts', () => {
  it('says it restarts on SIGTERM, and after the next start is back within 10 s with its earlier turns, saying so once', async () => {
    const { discord, guild } = world;
    const session = await joinVoice(world);
    const earlier = await twoExchanges(world, world.bot, session);

    expect(await world.bot.stop('SIGTERM')).toBe(0);
    expect(forcedLines(session)).toContain(RESTART_LINE);
    expect(
      discord
        .messages(guild.textChannelId)
        .some(
          (message) =>
            message.content ===
            `🔄 The bot is restarting: I will be back in <#${guild.voiceChannelId}> in a moment, and remember what was said.`,
        ),
    ).toBe(true);

    const before = beforeRestart(world);
    const bot = await world.restartBot();
    const resumed = await cameBack(world, bot, before, earlier);
    // And it still answers.
    await exchange(world, resumed, 'Are you there?', 'I am here.');
  }, 90_000);

  it('comes back the same after a SIGKILL, having said nothing', async () => {
    const { discord, guild } = world;
    const session = await joinVoice(world);
    const earlier = await twoExchanges(world, world.bot, session);
    const messagesBefore = discord.messages(guild.textChannelId).length;
    const before = beforeRestart(world);

    await world.bot.kill();
    expect(forcedLines(session)).not.toContain(RESTART_LINE);
    expect(
      discord
        .messages(guild.textChannelId)
        .slice(messagesBefore)
        .some((message) => message.content.startsWith('🔄')),
    ).toBe(false);

    const bot = await world.restartBot();
    await cameBack(world, bot, before, earlier);
  }, 90_000);

  it('does not come back into a channel everyone left during the restart', async () => {
    const { discord, emulator, guild } = world;
    await joinVoice(world);
    expect(await world.bot.stop('SIGTERM')).toBe(0);
    discord.leaveVoice(guild.member, guild.id);
    const sessionsBefore = emulator.realtime.sessions.length;
    const bot = await world.restartBot();
    await bot.waitForLog((line) => line.msg === 'not rejoining voice after the restart: nobody is in the channel any more');
    await bot.waitForLog((line) => line.msg === 'voice conversations brought back');
    expect(bot.logs.find((line) => line.msg === 'voice conversations brought back')?.count).toBe(0);
    expect(discord.botVoiceChannel(guild.id)).toBeUndefined();
    expect(emulator.realtime.sessions.length).toBe(sessionsBefore);
  }, 60_000);

  it('comes back with the default instructions, saying so in one warning, when its record holds 5 MB of them', async () => {
    const { emulator, guild } = world;
    const session = await joinVoice(world);
    const defaults = sentInstructions(session);
    expect(String(defaults[0]).startsWith(defaultVoiceSettings('svc').instructions)).toBe(true);
    expect(await world.bot.stop('SIGTERM')).toBe(0);
    await editStoredConversation(world.dataDirectory, guild.id, (record) => ({
      ...record,
      settings: { ...(isRecord(record.settings) ? record.settings : {}), instructions: HUGE_INSTRUCTIONS },
    }));

    const before = beforeRestart(world);
    const bot = await world.restartBot();
    const resumed = await cameBack(world, bot, before, []);
    expect(sentInstructions(resumed)).toEqual([defaults[0]]);
    expect(emulator.realtime.sessions.slice(before.sessions)).toEqual([resumed]);
    const warnings = bot.logs.filter((line) => line.level === 'warn' && JSON.stringify(line).includes('instructions'));
    expect(warnings).toEqual([
      expect.objectContaining({
        msg: "a conversation's voice settings missing or out of their bounds are read as their defaults",
        settings: ['instructions'],
        collection: CONVERSATION_RECORDS,
        id: guild.id,
      }),
    ]);
    expect(bot.logs.some((line) => JSON.stringify(line).includes(HUGE_INSTRUCTIONS.slice(0, 1000)))).toBe(false);
  }, 60_000);
});

describe('voice conversations across a rolling restart of two workers (two shards, a Redis of their own)', () => {
  let emulator: Emulator;
  let discord: DiscordStandIn;
  let redis: OwnRedis;
  let bot: BotProcess;
  let guilds: TestGuild[];
  beforeAll(async () => {
    emulator = await startEmulator({ config: { timing: { generation_ms: 300 } } });
    emulator.realtime.options.toneMsPerCharacter = 5;
    discord = await startDiscordStandIn({ shards: 2, identifyWindowMs: 1_000 });
    redis = await startOwnRedis();
    guilds = [0, 1].map((shard) => discord.createGuild({ shard: [shard, 2] }));
    bot = startBot({ env: botEnvironment(discord, emulator, { STORE_URL: redis.url }), dataDirectory: makeDataDirectory() });
    for (const shard of ['0', '1']) await bot.waitForLog((line) => line.msg === 'ready' && line.shards === shard, 40_000);
  }, 90_000);
  afterAll(async () => {
    if (bot?.child.exitCode === null) await bot.stop();
    await discord?.close();
    await emulator?.close();
    await redis?.close();
    cleanupBotDirectories();
  });

  it('brings each conversation back from its restarted worker, with its earlier turns', async () => {
    const places = guilds.map((guild) => ({ discord, emulator, guild }));
    const sessions: RealtimeSession[] = [];
    for (const place of places) sessions.push(await joinVoice(place));
    for (const [index, place] of places.entries()) {
      const mark = bot.logs.length;
      await exchange(place, sessions[index]!, `I am guest ${index}.`, `Welcome, guest ${index}.`);
      await bot.waitForLog(
        (line) =>
          line.msg === 'voice conversation recorded' && line.guild === place.guild.id && line.turns === 2 && bot.logs.indexOf(line) >= mark,
      );
    }

    // One worker at a time: stopped gracefully (the supervisor starts it again), and ready again before the next.
    for (const [index, place] of places.entries()) {
      const shard = String(index);
      const worker = bot.logs.filter((line) => line.msg === 'worker started' && line.shards === shard).at(-1);
      const since = bot.logs.length;
      const sessionsBefore = emulator.realtime.sessions.length;
      process.kill(Number(worker?.pid), 'SIGTERM');
      const died = await bot.waitForLog((line) => line.msg === 'a worker died; starting it again' && line.shards === shard, 20_000);
      expect(died.why).toBe('exited with code 0');
      expect(forcedLines(sessions[index]!)).toContain(RESTART_LINE);
      await bot.waitForLog((line) => line.msg === 'ready' && line.shards === shard && bot.logs.indexOf(line) >= since, 40_000);
      await bot.waitForLog(
        (line) => line.msg === 'voice conversations brought back' && line.shards === shard && bot.logs.indexOf(line) >= since,
        WORKER_BACK_WITHIN_MS,
      );
      expect(bot.logs.filter((line) => line.msg === 'voice conversations brought back' && bot.logs.indexOf(line) >= since)).toEqual([
        expect.objectContaining({ count: 1, shards: shard }),
      ]);
      expect(discord.botVoiceChannel(place.guild.id)).toBe(place.guild.voiceChannelId);
      // Only this guild's conversation was reopened, by its own worker, with its own earlier turns.
      const resumed = emulator.realtime.sessions.slice(sessionsBefore);
      expect(resumed).toHaveLength(1);
      expect(textMessages(resumed[0]!)).toEqual([
        { role: 'user', text: `I am guest ${index}.` },
        { role: 'assistant', text: `Welcome, guest ${index}.` },
      ]);
      await waitForLine(emulator, resumed[0]!, BACK_LINE);
      // The other conversation never stopped.
      expect(sessions[1 - index]!.closedAt).toBeUndefined();
      sessions[index] = resumed[0]!;
    }
    expect(bot.child.exitCode).toBeNull();
  }, 150_000);
});
