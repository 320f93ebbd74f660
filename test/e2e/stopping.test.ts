import { rmSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { cleanupBotDirectories, makeDataDirectory, startBot, type BotProcess, type LogLine } from '../support/bot-process.ts';
import { imageCommand, imageWorkdir } from '../support/dockerfile.ts';
import { pollUntil } from '../support/poll.ts';
import { startOwnRedis, type OwnRedis } from '../support/redis-server.ts';
import { botEnvironment } from '../support/world.ts';
import { type DiscordStandIn, type InteractionHandle, startDiscordStandIn, type TestGuild } from 'discord-standin';

// Stopping the bot as operators do (issue 26): `docker stop` (SIGTERM to the image's CMD, that process
// alone), and one SIGINT to the bot's whole process group (Ctrl-C in a terminal, systemd's default
// KillMode), one process and sharded. Each is one graceful stop, exit 0; a second SIGINT from outside
// while the stop is under way still ends the bot at once. Workers never outlive their supervisor.

/** What every process of the bot logs on a graceful stop, in this order. */
const GRACEFUL_STOP = ['signal received', 'shutting down: finishing what is in flight', 'store closed', 'stopped'];
const SECOND_SIGNAL = 'second signal: exiting without finishing what is in flight';
/** Discord makes the bot wait this long to answer a command: work in flight when the signal comes. */
const SLOW_ANSWER_SECONDS = 2;
/** ... and this long: work that outlasts the stop's deadline, for the second signal to cut short. */
const STUCK_ANSWER_SECONDS = 60;
const SHARDS = 2;
const IDENTIFY_WINDOW_MS = 1_000;

/** The messages of the graceful stop's lines that `shards` logged (undefined: a bot of one process). */
function stopLines(bot: BotProcess, shards?: string): string[] {
  return bot.logs.filter((line) => line.shards === shards && GRACEFUL_STOP.includes(line.msg)).map((line) => line.msg);
}

/** Runs /usage in `guild` while Discord rate-limits its answer for `seconds`, and waits until the bot has met the 429. */
async function commandInFlight(discord: DiscordStandIn, guild: TestGuild, seconds: number): Promise<InteractionHandle> {
  const callback = /\/interactions\/\d+\/[^/]+\/callback$/;
  const refusals = () => discord.requests.filter((request) => request.status === 429 && callback.test(request.path)).length;
  const before = refusals();
  discord.rateLimit({ method: 'POST', route: callback, times: 1, retryAfterSeconds: seconds });
  const run = discord.runCommand({ user: guild.member, guildId: guild.id, channelId: guild.textChannelId, command: 'usage' });
  await discord.waitFor(() => (refusals() > before ? true : undefined), 10_000, 'the bot meeting the rate limit on its answer');
  return run;
}

/** Waits until none of `pids` is running (nor left a zombie: its parent reaped it or is gone). */
async function allGone(pids: number[]): Promise<void> {
  const running = () =>
    pids.filter((pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    });
  await pollUntil({
    ask: () => Promise.resolve(running()),
    found: (left) => (left.length === 0 ? true : undefined),
    intervalMs: 50,
    timeoutMs: 10_000,
    timeoutError: (left) => new Error(`still running: ${JSON.stringify(left)}`),
  });
}

describe('one process', () => {
  let emulator: Emulator;
  let discord: DiscordStandIn;
  let guild: TestGuild;
  let env: Record<string, string>;
  let bot: BotProcess | undefined;
  let workdir: string | undefined;
  beforeAll(async () => {
    emulator = await startEmulator({ config: { timing: { generation_ms: 300 } } });
    discord = await startDiscordStandIn();
    guild = discord.createGuild();
    env = botEnvironment(discord, emulator);
  });
  afterEach(() => {
    // Whatever the start script left running (npm's child, had the CMD been npm start).
    bot?.signalGroup('SIGKILL');
    bot = undefined;
    if (workdir) rmSync(workdir, { recursive: true, force: true });
    workdir = undefined;
    cleanupBotDirectories();
  });
  afterAll(async () => {
    await discord?.close();
    await emulator?.close();
  });

  it("docker stop: SIGTERM to the Dockerfile's CMD, run as written in the image's working directory, stops the bot gracefully, exit 0", async () => {
    workdir = imageWorkdir();
    bot = startBot({ env, command: imageCommand(), cwd: workdir, ownProcessGroup: true });
    await bot.waitForLog((line) => line.msg === 'ready', 30_000);
    const run = await commandInFlight(discord, guild, SLOW_ANSWER_SECONDS);
    // To that process alone, as Docker signals the container's first process.
    expect(await bot.stop('SIGTERM')).toBe(0);
    expect(stopLines(bot)).toEqual(GRACEFUL_STOP);
    expect(bot.logs.find((line) => line.msg === 'signal received')?.signal).toBe('SIGTERM');
    // What was in flight was finished: the member got the answer.
    expect((await run.response()).type).toBe(4);
  });

  it('SIGINT to the whole process group is one graceful stop, exit 0', async () => {
    bot = startBot({ env, ownProcessGroup: true });
    await bot.waitForLog((line) => line.msg === 'ready', 30_000);
    const run = await commandInFlight(discord, guild, SLOW_ANSWER_SECONDS);
    bot.signalGroup('SIGINT');
    expect(await bot.exited).toBe(0);
    expect(stopLines(bot)).toEqual(GRACEFUL_STOP);
    expect(bot.logs.some((line) => line.msg === SECOND_SIGNAL)).toBe(false);
    expect((await run.response()).type).toBe(4);
  });

  it('a second SIGINT from outside, while the stop waits on what is in flight, ends the bot at once, exit 1', async () => {
    bot = startBot({ env, ownProcessGroup: true });
    await bot.waitForLog((line) => line.msg === 'ready', 30_000);
    await commandInFlight(discord, guild, STUCK_ANSWER_SECONDS);
    bot.signalGroup('SIGINT');
    await bot.waitForLog((line) => line.msg === 'shutting down: finishing what is in flight');
    bot.signalGroup('SIGINT');
    expect(await bot.exited).toBe(1);
    expect(bot.logs.filter((line) => line.msg === SECOND_SIGNAL)).toHaveLength(1);
    expect(bot.logs.some((line) => line.msg === 'stopped')).toBe(false);
  });
});

describe('a supervisor with two workers', () => {
  let emulator: Emulator;
  let discord: DiscordStandIn;
  let redis: OwnRedis;
  let guilds: TestGuild[];
  let env: Record<string, string>;
  let bot: BotProcess | undefined;
  beforeAll(async () => {
    emulator = await startEmulator({ config: { timing: { generation_ms: 300 } } });
    discord = await startDiscordStandIn({ shards: SHARDS, identifyWindowMs: IDENTIFY_WINDOW_MS });
    redis = await startOwnRedis();
    guilds = [0, 1].map((shard) => discord.createGuild({ shard: [shard, SHARDS] }));
    env = botEnvironment(discord, emulator, { STORE_URL: redis.url, SHARD_COUNT: String(SHARDS) });
  });
  afterEach(() => {
    bot?.signalGroup('SIGKILL');
    bot = undefined;
    cleanupBotDirectories();
  });
  afterAll(async () => {
    await discord?.close();
    await emulator?.close();
    await redis?.close();
  });

  async function startSharded(): Promise<{ bot: BotProcess; workers: LogLine[] }> {
    const started = startBot({ env, dataDirectory: makeDataDirectory(), ownProcessGroup: true });
    bot = started;
    for (const shards of ['0', '1']) await started.waitForLog((line) => line.msg === 'ready' && line.shards === shards, 40_000);
    return { bot: started, workers: started.logs.filter((line) => line.msg === 'worker started') };
  }

  it('SIGINT to the whole process group (each worker gets it, and again from the supervisor) is one graceful stop in every worker, exit 0', async () => {
    const { bot, workers } = await startSharded();
    // Shard 1's worker is answering a command when the signal comes.
    const run = await commandInFlight(discord, guilds[1]!, SLOW_ANSWER_SECONDS);
    bot.signalGroup('SIGINT');
    expect(await bot.exited).toBe(0);
    expect(bot.logs.some((line) => line.msg === SECOND_SIGNAL)).toBe(false);
    for (const shards of ['0', '1']) expect(stopLines(bot, shards), `worker ${shards}`).toEqual(GRACEFUL_STOP);
    expect(bot.logs.filter((line) => line.msg === 'worker stopped').map((line) => [line.code, line.signal])).toEqual([
      [0, null],
      [0, null],
    ]);
    expect(bot.logs.some((line) => line.msg === 'all workers stopped')).toBe(true);
    expect((await run.response()).type).toBe(4);
    await allGone(workers.map((line) => Number(line.pid)));
  }, 90_000);

  it('a second SIGINT from outside, while a worker still finishes what is in flight, ends the supervisor and every worker at once, exit 1', async () => {
    const { bot, workers } = await startSharded();
    await commandInFlight(discord, guilds[1]!, STUCK_ANSWER_SECONDS);
    bot.signalGroup('SIGINT');
    await bot.waitForLog((line) => line.msg === 'shutting down: finishing what is in flight' && line.shards === '1');
    // Once the supervisor has handled the first: a signal still pending there would merge with the second.
    await bot.waitForLog((line) => line.msg === 'signal received' && line.supervisor === true);
    bot.signalGroup('SIGINT');
    expect(await bot.exited).toBe(1);
    // The supervisor counts it; the worker still stopping hears its supervisor go and exits at once too.
    expect(bot.logs.filter((line) => line.msg === SECOND_SIGNAL && line.supervisor === true)).toHaveLength(1);
    await bot.waitForLog((line) => line.msg === SECOND_SIGNAL && line.shards === '1');
    expect(bot.logs.some((line) => line.msg === 'stopped' && line.shards === '1')).toBe(false);
    await allGone(workers.map((line) => Number(line.pid)));
  }, 90_000);

  it('a supervisor killed outright (SIGKILL, no stop of its own) leaves no worker running: each stops gracefully', async () => {
    const { bot, workers } = await startSharded();
    expect(await bot.kill()).toBe('SIGKILL');
    for (const shards of ['0', '1']) await bot.waitForLog((line) => line.msg === 'stopped' && line.shards === shards);
    for (const shards of ['0', '1']) expect(stopLines(bot, shards), `worker ${shards}`).toEqual(GRACEFUL_STOP);
    expect(bot.logs.find((line) => line.msg === 'signal received')?.signal).toBe('supervisor gone');
    await allGone(workers.map((line) => Number(line.pid)));
  }, 90_000);
});
