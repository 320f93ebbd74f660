import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { UNUSED_GATEWAY, cleanupBotDirectories, startBot, startBotOn, type BotProcess } from '../support/bot-process.ts';
import { startOwnRedis } from '../support/redis-server.ts';
import { type DiscordStandIn, startDiscordStandIn, type TestGuild } from 'discord-standin';
import { OPUS_CODEC_NAMES, availableOpusCodecs } from '../../src/voice/audio/opus-codec.ts';

// Starting the bot: bad configuration, a Discord that fails at first, registration scopes, and the
// refusals that must stop the bot with a message naming the variable to fix.

const GUILDS = 1 << 0;
const GUILD_VOICE_STATES = 1 << 7;

afterEach(cleanupBotDirectories);

/** The registered commands by name and type (1 a slash command, 3 a message command), in name order. */
function commandKinds(commands: Record<string, unknown>[]): unknown[] {
  return commands.map((command) => [command.name, command.type]).sort(([a], [b]) => String(a).localeCompare(String(b)));
}

/** Every command the bot has: its slash commands and the message commands of a message's Apps menu. */
const ALL_COMMANDS = [
  ['Animate image', 3],
  ['config', 1],
  ['Edit video', 3],
  ['Extend video', 3],
  ['usage', 1],
  ['video', 1],
  ['voice', 1],
];

describe('starting the bot with bad configuration', () => {
  it('exits with a message naming each missing variable', async () => {
    const bot = startBot({ env: {} });
    expect(await bot.exited).toBe(2);
    expect(bot.output()).toContain('DISCORD_TOKEN is required');
    expect(bot.output()).toContain('GATEWAY_BASE_URL is required');
  });

  it('names the invalid variable and does not echo the token', async () => {
    const token = 'bot-token-that-must-stay-secret';
    const bot = startBot({ env: { DISCORD_TOKEN: token, GATEWAY_BASE_URL: 'not a url', GATEWAY_LAYER: 'v3' } });
    expect(await bot.exited).toBe(2);
    expect(bot.output()).toMatch(/GATEWAY_BASE_URL must be an http\(s\) URL/);
    expect(bot.output()).toMatch(/GATEWAY_LAYER must be "compat" or "native"/);
    expect(bot.output()).not.toContain(token);
  });

  it('refuses two worker processes on the embedded SQLite store, naming STORE_URL, before anything starts', async () => {
    const bot = startBot({ env: { DISCORD_TOKEN: 'discord-token-value', GATEWAY_BASE_URL: UNUSED_GATEWAY, SHARD_COUNT: '2' } });
    expect(await bot.exited).toBe(2);
    expect(bot.output()).toContain('STORE_URL is the embedded SQLite store, which serves one process only, but SHARD_COUNT=2');
    expect(bot.output()).toContain('2 worker processes on this machine');
    expect(bot.output()).toContain('Set STORE_URL=redis://');
    expect(bot.logs.some((line) => line.msg === 'worker started')).toBe(false);
  });

  it('refuses a price no provider charges (1e308 a second), naming PRICES_FILE and the field', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'prices-'));
    try {
      const prices = join(directory, 'prices.json');
      writeFileSync(prices, '{"video": {"*": {"per_second_usd": {"720p": 1e308}}}}');
      const bot = startBot({ env: { DISCORD_TOKEN: 'discord-token-value', GATEWAY_BASE_URL: UNUSED_GATEWAY, PRICES_FILE: prices } });
      expect(await bot.exited).toBe(2);
      expect(bot.output()).toContain(
        `PRICES_FILE (${prices}): video.*.per_second_usd.720p must be at most 100 dollars a second (got 1e+308)`,
      );
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('names SHARD_IDS when it names a shard past SHARD_COUNT', async () => {
    const bot = startBot({
      env: { DISCORD_TOKEN: 'discord-token-value', GATEWAY_BASE_URL: UNUSED_GATEWAY, SHARD_COUNT: '2', SHARD_IDS: '1-2' },
    });
    expect(await bot.exited).toBe(2);
    expect(bot.output()).toContain('SHARD_IDS names shard 2, but SHARD_COUNT is 2 (shards 0 to 1).');
  });
});

describe('when Discord refuses the login', () => {
  let discord: DiscordStandIn;
  beforeAll(async () => {
    discord = await startDiscordStandIn();
  });
  afterAll(() => discord?.close());

  it('exits non-zero on a wrong token, naming DISCORD_TOKEN and never printing the token', async () => {
    const token = 'MTIzNDU2.wrong-token.that-must-stay-secret';
    const bot = startBotOn(discord, { DISCORD_TOKEN: token });
    // 2: configuration to fix, which a restart does not help.
    expect(await bot.exited).toBe(2);
    expect(bot.output()).toContain('Discord refused DISCORD_TOKEN');
    expect(bot.output()).not.toContain(token);
  });

  it('exits non-zero when DISCORD_API_URL is not a Discord REST API (404), naming the variable', async () => {
    const bot = startBotOn(discord, { DISCORD_API_URL: discord.apiUrl.replace(/\/api$/, '/nothing-here') });
    expect(await bot.exited).toBe(2);
    expect(bot.output()).toContain('DISCORD_API_URL does not point at a Discord REST API');
    expect(bot.logs.filter((line) => line.msg === 'could not reach Discord; retrying')).toEqual([]);
  });
});

describe('when Discord answers 5xx and 429 at login and at command registration', () => {
  let discord: DiscordStandIn;
  let guild: TestGuild;
  let bot: BotProcess;
  beforeAll(async () => {
    discord = await startDiscordStandIn();
    guild = discord.createGuild();
    // Four 503s outlast @discordjs/rest's own three retries, so the bot's retries are needed too.
    discord.failRoute({ method: 'GET', route: /^\/gateway\/bot$/, times: 4, status: 503 });
    discord.rateLimit({ method: 'GET', route: /^\/gateway\/bot$/, times: 1, retryAfterSeconds: 1 });
    discord.failRoute({ method: 'PUT', route: /^\/applications\/\d+\/commands$/, times: 4, status: 503 });
    discord.rateLimit({ method: 'PUT', route: /^\/applications\/\d+\/commands$/, times: 1, retryAfterSeconds: 1 });
    // Versioned, as Discord's documentation writes the base: the bot must not add a second /v10. One
    // shard named: the bot does not ask GET /gateway/bot for a count, so the failures meet the login.
    bot = startBotOn(discord, { DISCORD_API_URL: `${discord.apiUrl}/v10`, SHARD_COUNT: '1' });
    await bot.waitForLog((line) => line.msg === 'ready', 30_000);
  }, 60_000);
  afterAll(async () => {
    if (bot?.child.exitCode === null) await bot.stop();
    await discord?.close();
  });

  it('logs in and registers its commands globally (and on no server), without crashing', () => {
    const failed = (path: string, status: number) =>
      discord.requests.filter((request) => request.path.endsWith(path) && request.status === status).length;
    expect(failed('/gateway/bot', 503)).toBe(4);
    expect(failed('/gateway/bot', 429)).toBe(1);
    expect(failed('/commands', 503)).toBe(4);
    expect(failed('/commands', 429)).toBe(1);
    expect(commandKinds(discord.commands())).toEqual(ALL_COMMANDS);
    // Slash and message commands alike in one bulk overwrite.
    expect(
      discord.requests.filter((request) => request.method === 'PUT' && request.path.endsWith('/commands') && request.status === 200),
    ).toHaveLength(1);
    expect(discord.commands(guild.id)).toEqual([]);
    expect(bot.logs.find((line) => line.msg === 'ready')).toMatchObject({ commands: ALL_COMMANDS.length, scope: 'global' });
    expect(bot.child.exitCode).toBeNull();
  });

  it('logs once which Opus codec its voice runs: native libopus where it built, else opusscript', () => {
    const codec = bot.logs.filter((line) => line.msg === 'opus codec');
    expect(codec).toHaveLength(1);
    expect(codec[0]).toMatchObject({ codec: OPUS_CODEC_NAMES[availableOpusCodecs()[0]!] });
  });

  it('retries both calls itself, with backoff, after the library gives up', () => {
    const retries = bot.logs.filter((line) => line.msg === 'could not reach Discord; retrying').map((line) => line.operation);
    expect(retries).toEqual(['login', 'command registration']);
  });

  it('takes a versioned DISCORD_API_URL as the REST base', () => {
    expect(discord.requests.filter((request) => request.path.startsWith('/v10/'))).toEqual([]);
  });

  it('identifies with only the non-privileged intents it needs: Guilds and Guild Voice States', () => {
    expect(discord.identifiedIntents).toBe(GUILDS | GUILD_VOICE_STATES);
  });
});

describe('DEV_GUILD_ID', () => {
  let discord: DiscordStandIn;
  let guild: TestGuild;
  beforeAll(async () => {
    discord = await startDiscordStandIn();
    guild = discord.createGuild();
  });
  afterAll(() => discord?.close());

  it('registers the commands on that server only, and nothing globally', async () => {
    const bot = startBotOn(discord, { DEV_GUILD_ID: guild.id });
    try {
      expect(await bot.waitForLog((line) => line.msg === 'ready', 30_000)).toMatchObject({ scope: `guild ${guild.id}` });
      expect(commandKinds(discord.commands(guild.id))).toEqual(ALL_COMMANDS);
      expect(discord.commands()).toEqual([]);
    } finally {
      await bot.stop();
    }
  });

  it('names DEV_GUILD_ID when Discord refuses the commands there (a server the bot is not in), and does not retry a refusal', async () => {
    const elsewhere = '123456789012345678';
    const bot = startBotOn(discord, { DEV_GUILD_ID: elsewhere });
    try {
      const refused = await bot.waitForLog((line) => line.msg === 'could not register commands', 30_000);
      expect(refused.level).toBe('error');
      expect(String(refused.hint)).toContain(`DEV_GUILD_ID ${elsewhere}`);
      expect(discord.requests.filter((request) => request.path.includes(`/guilds/${elsewhere}/commands`))).toHaveLength(1);
      expect(bot.child.exitCode).toBeNull();
    } finally {
      await bot.stop();
    }
  });
});

describe('starting on a Redis that would lose records', () => {
  let discord: DiscordStandIn;
  beforeAll(async () => {
    discord = await startDiscordStandIn();
  });
  afterAll(() => discord?.close());

  // Before, nothing said a Redis without persistence loses every task at its restart, and the start printed
  // four MaxListenersExceededWarning lines (a listener set per collection on the one Redis client).
  it('warns, naming appendonly and maxmemory-policy, starts all the same, and prints no EventEmitter leak warning', async () => {
    const redis = await startOwnRedis({ settings: ['--maxmemory-policy', 'allkeys-lru', '--maxmemory', '100mb'] });
    const bot = startBotOn(discord, { STORE_URL: redis.url });
    try {
      await bot.waitForLog((line) => line.msg === 'ready', 30_000);
      const warned = bot.logs.filter(
        (line) => line.level === 'warn' && (line.setting === 'appendonly' || line.setting === 'maxmemory-policy'),
      );
      expect(warned.map((line) => line.setting).sort()).toEqual(['appendonly', 'maxmemory-policy']);
      expect(bot.output()).not.toContain('MaxListenersExceededWarning');
    } finally {
      await bot.stop();
      await redis.close();
    }
  });
});

describe('a signal while the bot is still logging in', () => {
  let discord: DiscordStandIn;
  beforeAll(async () => {
    discord = await startDiscordStandIn();
  });
  afterAll(() => discord?.close());

  it('cancels the login retries, closes the store and exits 0', async () => {
    discord.failRoute({ method: 'GET', route: /^\/gateway\/bot$/, times: 1_000, status: 503 });
    const bot = startBotOn(discord, { SHARD_COUNT: '1' });
    await bot.waitForLog((line) => line.msg === 'could not reach Discord; retrying' && line.operation === 'login', 30_000);
    expect(await bot.stop('SIGINT')).toBe(0);
    expect(bot.logs.some((line) => line.msg === 'store closed')).toBe(true);
    expect(bot.logs.some((line) => line.msg === 'the bot could not start')).toBe(false);
  });
});
