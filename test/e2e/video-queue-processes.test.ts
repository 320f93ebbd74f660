import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDiscordStandIn, type DiscordStandIn, type InteractionHandle, type Message, type TestGuild, type User } from 'discord-standin';
import { startEmulator, type Emulator, type JournalEntry } from '../../src/emulator/server.ts';
import { cleanupBotDirectories, makeDataDirectory, startBot, type BotProcess } from '../support/bot-process.ts';
import { cardText, galleryItems } from '../support/cards.ts';
import { behindGateway, startHostileGateway, type HostileGateway } from '../support/hostile-gateway.ts';
import { isDone, videoWorld } from '../support/video-e2e.ts';
import { botEnvironment } from '../support/world.ts';

// A key's line lives in the store, not in a process (issue 35): jobs waiting across a SIGKILL are each
// sent and posted once, and two processes on one Redis share one key's slots.

const SHARED_REDIS = 'redis://127.0.0.1:6379';
const WAITING = /\*\*Waiting\*\*: \d+(st|nd|rd|th) in line/;
const isWaiting = (card: Message): boolean => WAITING.test(cardText(card));
const isGenerating = (card: Message): boolean => cardText(card).includes('**Generating');

/** A fresh key for the emulator, so that its line in a shared store is this test's alone. */
const newKey = (): string => `queue-key-${randomBytes(8).toString('hex')}`;

/** The gateway's answers to submissions of `prompt`, by status. */
function answered(requests: readonly JournalEntry[], prompt: string, status: number): JournalEntry[] {
  return requests.filter(
    (entry) => entry.method === 'POST' && entry.status === status && (entry.body as { prompt?: unknown } | undefined)?.prompt === prompt,
  );
}

describe('jobs waiting in line across a SIGKILL', () => {
  const key = newKey();
  const e2e = videoWorld({
    emulator: {
      keys: { [key]: { group: 'default', quota_usd: 1_000, limits: { concurrent_tasks: 1 } } },
      timing: { generation_ms: 4_000 },
    },
    env: { GATEWAY_API_KEY: key },
  });

  it('sends each of 4 jobs (1 running, 3 waiting) once, and posts each once', async () => {
    const { discord, guild } = e2e.world;
    const prompts = [1, 2, 3, 4].map((index) => `kill line ${index}`);
    const members = prompts.map((_, index) => discord.createUser({ guildId: guild.id, name: `kill-${index + 1}` }));
    const runs: InteractionHandle[] = [];
    for (const [index, prompt] of prompts.entries()) {
      const run = e2e.video('generate', { prompt }, { user: members[index]! });
      await run.waitForReply((card) => (index === 0 ? isGenerating(card) : isWaiting(card)), 20_000);
      runs.push(run);
    }
    await e2e.world.bot.kill();
    await e2e.world.restartBot();
    const cards = await Promise.all(runs.map((run) => run.waitForReply(isDone, 90_000)));
    const requests = e2e.world.emulator.requests;
    for (const [index, card] of cards.entries()) {
      expect(answered(requests, prompts[index]!, 200)).toHaveLength(1);
      expect(galleryItems(card)).toHaveLength(1);
    }
    // Nothing posted a second video anywhere in the channel.
    const videos = discord.messages(guild.textChannelId).filter((message) => message.attachments.length > 0);
    expect(videos.map((message) => message.id).sort()).toEqual(cards.map((card) => card.id).sort());
  }, 120_000);
});

describe('a claim whose process was killed before it heard the gateway', () => {
  const key = newKey();
  let emulator: Emulator;
  let gateway: HostileGateway;
  let discord: DiscordStandIn;
  let guild: TestGuild;
  let bot: BotProcess;
  let env: Record<string, string>;
  let dataDirectory: string;

  beforeAll(async () => {
    emulator = await startEmulator({
      config: {
        keys: { [key]: { group: 'default', quota_usd: 1_000, limits: { concurrent_tasks: 1 } } },
        // Long enough that the key is still busy with the first variant when the second is sent with it,
        // short enough that it is done by the time the bot has started again.
        timing: { generation_ms: 800 },
        limits: { rate_per_minute: 100_000, concurrent_tasks: 100 },
      },
    });
    // In front of the emulator: it forwards a submission and keeps the answer from the bot.
    gateway = await startHostileGateway(emulator.baseUrl);
    discord = await startDiscordStandIn();
    guild = discord.createGuild();
    env = botEnvironment(discord, emulator, {
      GATEWAY_API_KEY: key,
      ...behindGateway(gateway, emulator),
    });
    dataDirectory = makeDataDirectory();
    bot = startBot({ env, dataDirectory });
    await bot.waitForLog((line) => line.msg === 'ready', 60_000);
  }, 90_000);
  afterAll(async () => {
    if (bot?.child.exitCode === null) await bot.stop();
    await discord?.close();
    await gateway?.close();
    await emulator?.close();
    cleanupBotDirectories();
  });

  it("moves the key's one slot on at the restart, not at the claim's lease end, and sends nothing twice", async () => {
    const prompt = 'two variants, the first lost to a kill';
    const submissions = () =>
      emulator.requests.filter((entry) => entry.method === 'POST' && (entry.body as { prompt?: unknown } | undefined)?.prompt === prompt);
    // One job of two variants on a key of one slot: both join the line and are sent (the line probes a key
    // it does not know), the second is refused for the key's concurrency and waits first in line again, and
    // the bot is killed before it hears that the gateway accepted the first. Its claim is never reported.
    const accepted = gateway.withholdAnswer(prompt);
    const run = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'video',
      subcommand: 'generate',
      options: { prompt, variants: 2 },
    });
    expect(await accepted).toBe(200);
    expect((await run.response()).type).toBe(5);
    await bot.waitForLog((line) => line.msg === "the gateway refused a video for its key's limits; it waits again", 20_000);
    await bot.kill();

    bot = startBot({ env, dataDirectory });
    await bot.waitForLog((line) => line.msg === "released the video claims an earlier run left on keys' lines" && line.lines === 1, 30_000);
    // Well within the 6 min lease the claim held before: the second variant is sent and posted.
    const posted = await bot.waitForLog((line) => line.msg === 'video posted', 60_000);
    expect(discord.messages(guild.textChannelId).some((message) => message.id === posted.message)).toBe(true);
    // The first variant was not sent again (its record said it was being sent): each accepted once. The
    // probe cost one refusal before the kill, and may cost one after it: the first variant may still run
    // at the gateway when the released slot is tried.
    const statuses = submissions().map((entry) => entry.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(2);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(1);
    expect(statuses.filter((status) => status === 429).length).toBeLessThanOrEqual(2);
    expect(statuses.every((status) => status === 200 || status === 429)).toBe(true);
    expect(bot.logs.filter((line) => line.msg === 'video task submitted')).toHaveLength(1);
  }, 120_000);
});

describe('two bot processes on one Redis, one key that runs 2 at once', () => {
  const key = newKey();
  let emulator: Emulator;
  let discord: DiscordStandIn;
  let guilds: TestGuild[];
  let bot: BotProcess;

  beforeAll(async () => {
    emulator = await startEmulator({
      config: {
        keys: { [key]: { group: 'default', quota_usd: 1_000, limits: { concurrent_tasks: 2 } } },
        timing: { generation_ms: 1_500 },
        limits: { rate_per_minute: 100_000, concurrent_tasks: 100 },
      },
    });
    discord = await startDiscordStandIn({ shards: 2, identifyWindowMs: 1_000 });
    // A guild on each shard: each worker process sends its own guild's jobs.
    guilds = [0, 1].map((shard) => discord.createGuild({ shard: [shard, 2] }));
    bot = startBot({
      env: botEnvironment(discord, emulator, { GATEWAY_API_KEY: key, STORE_URL: SHARED_REDIS }),
      dataDirectory: makeDataDirectory(),
    });
    // Two workers start and identify in turn: slow on a busy machine (24 s to open the store was seen).
    for (const shard of ['0', '1']) await bot.waitForLog((line) => line.msg === 'ready' && line.shards === shard, 90_000);
  }, 150_000);
  afterAll(async () => {
    if (bot?.child.exitCode === null) await bot.stop();
    await discord?.close();
    await emulator?.close();
    cleanupBotDirectories();
  });

  it('serves 8 jobs from both processes at once, each sent once, the key never refusing more than a probe', async () => {
    const runs = guilds.flatMap((guild, shard) =>
      [1, 2, 3, 4].map((index) => {
        const user: User = discord.createUser({ guildId: guild.id, name: `shared-${shard}-${index}` });
        const prompt = `shared line ${shard}-${index}`;
        const run = discord.runCommand({
          user,
          guildId: guild.id,
          channelId: guild.textChannelId,
          command: 'video',
          subcommand: 'generate',
          options: { prompt },
        });
        return { run, prompt };
      }),
    );
    // Four rounds of the key's 2 slots, each ended at a poll that may back off to 20 s (and a jitter) on a busy machine.
    await Promise.all(runs.map(({ run }) => run.waitForReply(isDone, 150_000)));
    for (const { prompt } of runs) expect(answered(emulator.requests, prompt, 200)).toHaveLength(1);
    // Each process may probe past the slots it learned once before the line records the refusal for both.
    const refused = emulator.requests.filter((entry) => entry.method === 'POST' && entry.status === 429);
    expect(refused.length).toBeLessThanOrEqual(2);
    // Both processes sent: the line is the store's, not one process's.
    const senders = new Set(bot.logs.filter((line) => line.msg === 'video task submitted').map((line) => line.shards));
    expect([...senders].sort()).toEqual(['0', '1']);
  }, 180_000);
});
