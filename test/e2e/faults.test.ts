import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { cleanupBotDirectories, startBot, type BotProcess } from '../support/bot-process.ts';
import { type DiscordStandIn, type Message, startDiscordStandIn, type TestGuild } from 'discord-standin';
import { behindGateway, startHostileGateway, type Fault, type HostileGateway } from '../support/hostile-gateway.ts';
import { startOwnRedis, type OwnRedis } from '../support/redis-server.ts';
import { cardEditProblems, cardRef, cardText } from '../support/cards.ts';

// Faults as an operator meets them, all in one run: the bot (a child process, as `npm start` runs it) on a
// Redis of the test's own that stalls and drops its connections, behind a gateway that answers polls with
// every kind of failure (unreadable, wrong types, 50 MB, a slow drip, overloaded, a redirect to a metadata
// address) and then restarts, losing its tasks. Every task must end posted exactly once or closed with
// its card saying why, with no unhandled rejection and the bot's memory bounded.

/** The bot's resident memory may not pass this, whatever the gateway sends (a 50 MB answer included). */
const MAX_BOT_RSS_BYTES = 400 * 1024 * 1024;

let redis: OwnRedis;
let emulator: Emulator;
let restartedEmulator: Emulator | undefined;
let gateway: HostileGateway;
let discord: DiscordStandIn;
let guild: TestGuild;
let bot: BotProcess;

beforeAll(async () => {
  redis = await startOwnRedis();
  emulator = await startEmulator({
    config: { timing: { generation_ms: 800 }, limits: { rate_per_minute: 100_000, concurrent_tasks: 100 } },
  });
  gateway = await startHostileGateway(emulator.baseUrl);
  discord = await startDiscordStandIn();
  guild = discord.createGuild();
  bot = startBot({
    env: {
      DISCORD_TOKEN: discord.botToken,
      DISCORD_API_URL: discord.apiUrl,
      ...behindGateway(gateway, emulator),
      GATEWAY_API_KEY: 'emulator-key',
      GATEWAY_LAYER: 'native',
      NODE_EXTRA_CA_CERTS: discord.caCertPath,
      TASK_POLL_INTERVAL_MS: '200',
      STORE_URL: redis.url,
    },
  });
  await bot.waitForLog((line) => line.msg === 'ready', 30_000);
}, 60_000);

afterAll(async () => {
  await bot?.stop();
  await discord?.close();
  await gateway?.close();
  await emulator?.close();
  await restartedEmulator?.close();
  await redis?.close();
  cleanupBotDirectories();
});

function generate(prompt: string) {
  return discord.runCommand({
    user: guild.member,
    guildId: guild.id,
    channelId: guild.textChannelId,
    command: 'video',
    subcommand: 'generate',
    options: { prompt, duration: 2 },
  });
}

async function submitted(prompt: string): Promise<{ ref: string; card: () => Message }> {
  const run = generate(prompt);
  const card = await run.waitForReply((message) => cardRef(message) !== undefined, 30_000);
  return { ref: cardRef(card) ?? '', card: () => discord.state.messages.get(card.id) ?? card };
}

const postsOf = (ref: string) =>
  discord
    .messages(guild.textChannelId)
    .filter((message) => message.attachments.length > 0 && JSON.stringify(message.components).includes(`video:extend:${ref}`));

/** The bot's resident memory, from the kernel (the child is node itself: scripts/node execs it). */
function botRss(): number {
  const status = readFileSync(`/proc/${bot.child.pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
}

describe('faults from the store and the gateway at once', () => {
  it('ends every task posted exactly once or closed saying why, answers /video while the store stalls, and stays bounded', async () => {
    const faults: Fault[][] = [
      [],
      ['malformed'],
      ['wrong-types'],
      ['huge'],
      ['drip'],
      ['overloaded', 'overloaded'],
      ['forget'],
      ['redirect-internal'],
    ];
    gateway.script(faults);
    // One after another: the gateway hands its faults out in the order it takes submissions, and tasks
    // sent at once could reach it in any order.
    const tasks: { ref: string; card: () => Message }[] = [];
    for (const index of faults.keys()) {
      const mark = bot.logs.length;
      tasks.push(await submitted(`fault run ${index}`));
      await bot.waitForLog(() => bot.logs.slice(mark).some((line) => line.msg === 'video task submitted'), 30_000);
    }

    // The store stalls past its deadline while the tasks run: a /video meanwhile is deferred, then told.
    redis.stall();
    const during = generate('while the store stalls');
    expect((await during.response()).type).toBe(5);
    const told = await during.waitForFollowUp((message) => message.content.includes('storage is not answering'), 20_000);
    expect(told.flags & 64).toBe(64);
    redis.resume();
    // Then every connection to it drops.
    await redis.dropConnections();

    const ended = (task: { ref: string; card: () => Message }) => {
      const text = cardText(task.card());
      return postsOf(task.ref).length > 0 && text.includes('**Done**')
        ? 'posted'
        : /Failed|could not be shown/.test(text)
          ? 'closed'
          : undefined;
    };
    const allEnded = async (all: { ref: string; card: () => Message }[]) =>
      discord
        .waitFor(() => (all.every((task) => ended(task) !== undefined) ? true : undefined), 120_000, 'every task posted or closed')
        .catch((error: unknown) => {
          const states = all.map((task) => `${task.ref}: ${ended(task) ?? 'open'} ${cardText(task.card()).slice(0, 600)}`);
          throw new Error(`${String(error)}\n${states.join('\n')}`);
        });
    await allEnded(tasks);

    // Two more tasks, long ones; the gateway restarts meanwhile and has never heard of them.
    emulator.config.timing.generation_ms = 60_000;
    const lost = await Promise.all([submitted('lost in a restart 1'), submitted('lost in a restart 2')]);
    restartedEmulator = await startEmulator();
    gateway.pointAt(restartedEmulator.baseUrl);
    await allEnded(lost);
    const all = [...tasks, ...lost];

    expect(tasks.slice(0, 6).map(ended)).toEqual(Array.from({ length: 6 }, () => 'posted'));
    for (const task of [tasks[6]!, ...lost]) expect(cardText(task.card())).toContain('no longer knows this task');
    expect(ended(tasks[7]!)).toBe('closed');
    expect(cardText(tasks[7]!.card())).toMatch(/not a public address|169\.254\.169\.254/);
    for (const task of all) expect(postsOf(task.ref).length).toBeLessThanOrEqual(1);
    for (const task of all) expect(cardEditProblems(task.card()), task.ref).toEqual([]);
    expect(gateway.served.get('huge')).toBe(1);

    expect(bot.logs.filter((line) => line.msg === 'unhandled rejection')).toEqual([]);
    expect(botRss()).toBeLessThan(MAX_BOT_RSS_BYTES);
  }, 180_000);
});
