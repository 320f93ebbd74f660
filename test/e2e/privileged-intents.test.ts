import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanupBotDirectories, startBotOn, type BotProcess, type DiscordAddress, type LogLine } from '../support/bot-process.ts';
import { startOwnRedis, type OwnRedis } from '../support/redis-server.ts';
import { PRIVILEGED_INTENT_BITS, startDiscordStandIn, type DiscordStandIn } from 'discord-standin';

// FORGET_MEMBERS_WHO_LEAVE=on asks Discord for the privileged Server Members intent. An application whose
// Developer Portal page does not allow it is refused at identify (close 4014): the bot must stop at once,
// saying what to change, and never come back to identify again (each identify is a session start of the
// 1000 Discord allows a day). Its flags (GET /applications/@me) say so before any identify: read first, they
// spare even the one, however often a service manager starts the bot again.

/** The bot asking for the Server Members intent. */
function startForgettingBot(discord: DiscordAddress, env: Record<string, string> = {}): BotProcess {
  return startBotOn(discord, { FORGET_MEMBERS_WHO_LEAVE: 'on', ...env });
}

/** What `npm start` exits with when a restart cannot help (src/main.ts). */
const EXIT_CONFIG = 2;

afterEach(cleanupBotDirectories);

/** What the bot logs when it could not read the application's flags before connecting (src/main.ts). */
const FLAGS_UNREAD = "could not read the application's flags; the Server Members intent is left to Discord's answer at connecting";

/**
 * The application's flags fail to be read (503, through @discordjs/rest's own 3 retries): the bot goes on
 * and lets Discord's answer to the identify decide. Returns what ends the failure.
 */
function failFlagsRead(discord: DiscordStandIn): () => void {
  return discord.failRoute({ method: 'GET', route: /^\/applications\/@me$/, times: 4, status: 503 });
}

/** The log lines an operator reads at warn and above. */
function problems(bot: BotProcess): LogLine[] {
  return bot.logs.filter((line) => line.level === 'warn' || line.level === 'error');
}

function explained(line: LogLine | undefined): string {
  const error = line?.error;
  return typeof error === 'object' && error !== null && 'message' in error ? String(error.message) : '';
}

describe('FORGET_MEMBERS_WHO_LEAVE=on without the Server Members intent allowed', () => {
  let discord: DiscordStandIn;
  beforeAll(async () => {
    discord = await startDiscordStandIn();
    discord.createGuild();
    discord.setPrivilegedIntents({ serverMembers: false });
  });
  afterAll(() => discord?.close());

  it('exits non-zero without identifying when the flags say so, with one line naming the variable and the portal setting', async () => {
    const identifiesBefore = discord.identifies.length;
    const bot = startForgettingBot(discord);
    expect(await bot.exited).toBe(EXIT_CONFIG);
    expect(discord.identifies.slice(identifiesBefore)).toEqual([]);
    const failure = bot.logs.find((line) => line.msg === 'the bot could not start');
    expect(explained(failure)).toContain('FORGET_MEMBERS_WHO_LEAVE');
    expect(explained(failure)).toContain('Server Members Intent');
    expect(explained(failure)).toContain('Developer Portal');
    // Said once.
    expect(problems(bot).filter((line) => line.msg !== 'the bot could not start' && /discord|flags/i.test(line.msg))).toEqual([]);
    expect(problems(bot).filter((line) => line.msg === 'the bot could not start')).toHaveLength(1);
    expect(bot.output()).not.toContain(discord.botToken);
  }, 30_000);

  it('exits non-zero after one identify when the flags cannot be read, with one line naming the variable and the portal setting', async () => {
    const identifiesBefore = discord.identifies.length;
    const recover = failFlagsRead(discord);
    try {
      const bot = startForgettingBot(discord);
      expect(await bot.exited).toBe(EXIT_CONFIG);
      expect(discord.identifies.slice(identifiesBefore).map((identify) => identify.outcome)).toEqual(['disallowed-intents']);
      const failure = bot.logs.find((line) => line.msg === 'the bot could not start');
      expect(explained(failure)).toContain('FORGET_MEMBERS_WHO_LEAVE');
      expect(explained(failure)).toContain('Server Members Intent');
      expect(explained(failure)).toContain('Developer Portal');
      // Said once, and not as an outage waited out ("could not reach Discord; retrying"), after the flags unread.
      const told = problems(bot).filter((line) => /discord|flags|could not start/i.test(line.msg));
      expect(told.map((line) => line.msg)).toEqual([FLAGS_UNREAD, 'the bot could not start']);
      expect(bot.output()).not.toContain(discord.botToken);
    } finally {
      recover();
    }
  }, 30_000);

  it('connects with the intent once the operator turns it on in the portal', async () => {
    discord.setPrivilegedIntents({ serverMembers: true });
    const bot = startForgettingBot(discord);
    try {
      await bot.waitForLog((line) => line.msg === 'ready', 30_000);
      expect((discord.identifiedIntents ?? 0) & PRIVILEGED_INTENT_BITS.serverMembers).not.toBe(0);
    } finally {
      await bot.stop();
      discord.setPrivilegedIntents({ serverMembers: false });
    }
  }, 45_000);
});

describe('sharded, two worker processes, without the intent allowed', () => {
  let discord: DiscordStandIn;
  let redis: OwnRedis;
  beforeAll(async () => {
    discord = await startDiscordStandIn({ shards: 2, identifyWindowMs: 0 });
    discord.createGuild({ shard: [0, 2] });
    discord.createGuild({ shard: [1, 2] });
    discord.setPrivilegedIntents({ serverMembers: false });
    redis = await startOwnRedis();
  });
  afterAll(async () => {
    await discord?.close();
    await redis?.close();
  });

  const sharded = { SHARD_COUNT: '2', SHARDS_PER_PROCESS: '1' };

  it('exits non-zero before starting any worker when the flags say so', async () => {
    const identifiesBefore = discord.identifies.length;
    const bot = startForgettingBot(discord, { STORE_URL: redis.url, ...sharded });
    expect(await bot.exited).toBe(EXIT_CONFIG);
    expect(bot.logs.filter((line) => line.msg === 'worker started')).toEqual([]);
    expect(discord.identifies.slice(identifiesBefore)).toEqual([]);
    expect(explained(bot.logs.find((line) => line.msg === 'the bot could not start'))).toContain('FORGET_MEMBERS_WHO_LEAVE');
  }, 45_000);

  it('stops every worker and exits non-zero, starting none of them again, when the flags cannot be read', async () => {
    const identifiesBefore = discord.identifies.length;
    // Read once by the supervisor before its workers start: the failure is over by the time it looks the application up.
    failFlagsRead(discord);
    const bot = startForgettingBot(discord, { STORE_URL: redis.url, ...sharded });
    expect(await bot.exited).toBe(EXIT_CONFIG);
    expect(bot.logs.some((line) => line.msg === FLAGS_UNREAD)).toBe(true);
    expect(bot.logs.filter((line) => line.msg === 'worker started')).toHaveLength(2);
    expect(bot.logs.filter((line) => line.msg === 'a worker died; starting it again')).toEqual([]);
    expect(bot.logs.some((line) => line.msg === 'a worker was refused for good; not starting it again')).toBe(true);
    // No shard identified more than once: nothing retried.
    const identifies = discord.identifies.slice(identifiesBefore);
    const shards = identifies.map((identify) => identify.shard?.[0]);
    expect(new Set(shards).size).toBe(shards.length);
    expect(identifies.every((identify) => identify.outcome === 'disallowed-intents')).toBe(true);
    expect(explained(bot.logs.find((line) => line.msg === 'the bot could not start'))).toContain('FORGET_MEMBERS_WHO_LEAVE');
  }, 45_000);
});
