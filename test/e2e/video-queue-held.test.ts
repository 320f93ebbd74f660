import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDiscordStandIn, type DiscordStandIn, type InteractionHandle, type Message, type TestGuild } from 'discord-standin';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { cleanupBotDirectories, makeDataDirectory, startBot, type BotProcess } from '../support/bot-process.ts';
import { cardText } from '../support/cards.ts';
import { behindGateway, startHostileGateway, type HostileGateway } from '../support/hostile-gateway.ts';
import { isDone } from '../support/video-e2e.ts';
import { botEnvironment } from '../support/world.ts';

// A key's line answers members at once, whatever the gateway does with the jobs already sent: a job that
// joins the line while another job's submission waits for the gateway's answer (up to the gateway client's
// deadline) is shown waiting with its place right away, not once that answer comes.

const WAITING = /\*\*Waiting\*\*: (\d+)(st|nd|rd|th) in line/;
const isWaiting = (card: Message): boolean => WAITING.test(cardText(card));

/** What the bot logs once it heard a submission's answer (or gave up on it). */
const SEND_ENDED = new Set(['video task submitted', 'a video submission has an unknown outcome']);

describe('a key whose first sends the gateway has not answered yet', () => {
  const key = `queue-key-${randomBytes(8).toString('hex')}`;
  let emulator: Emulator;
  let gateway: HostileGateway;
  let discord: DiscordStandIn;
  let guild: TestGuild;
  let bot: BotProcess;

  beforeAll(async () => {
    emulator = await startEmulator({
      config: {
        keys: { [key]: { group: 'default', quota_usd: 1_000, limits: { concurrent_tasks: 2 } } },
        timing: { generation_ms: 500 },
        limits: { rate_per_minute: 100_000, concurrent_tasks: 100 },
      },
    });
    // In front of the emulator: it forwards a submission and keeps the answer from the bot until released.
    gateway = await startHostileGateway(emulator.baseUrl);
    discord = await startDiscordStandIn();
    guild = discord.createGuild();
    bot = startBot({
      env: botEnvironment(discord, emulator, {
        GATEWAY_API_KEY: key,
        ...behindGateway(gateway, emulator),
      }),
      dataDirectory: makeDataDirectory(),
    });
    await bot.waitForLog((line) => line.msg === 'ready', 60_000);
  }, 90_000);
  afterAll(async () => {
    gateway?.releaseAnswers();
    if (bot?.child.exitCode === null) await bot.stop();
    await discord?.close();
    await gateway?.close();
    await emulator?.close();
    cleanupBotDirectories();
  });

  const generate = (name: string, prompt: string): InteractionHandle =>
    discord.runCommand({
      user: discord.createUser({ guildId: guild.id, name }),
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'video',
      subcommand: 'generate',
      options: { prompt },
    });

  it('shows the jobs that join meanwhile waiting with their places at once, and makes every job once', async () => {
    // A new key's line sends two at once (the one it knows it takes, and a probe): both held at the gateway.
    const held: InteractionHandle[] = [];
    for (const prompt of ['held first', 'held second']) {
      const answered = gateway.withholdAnswer(prompt);
      held.push(generate(prompt.replace(' ', '-'), prompt));
      expect(await answered).toBe(200);
    }
    // Two more members while both answers are held: the key has no slot for them, and they hear so now.
    const burst = [generate('burst-1', 'burst one'), generate('burst-2', 'burst two')];
    const cards = await Promise.all(burst.map((run) => run.waitForReply(isWaiting, 15_000)));
    // Neither held send had answered when they were told (the bot would have logged it).
    expect(bot.logs.filter((line) => SEND_ENDED.has(String(line.msg)))).toEqual([]);
    expect(cards.map((card) => Number(WAITING.exec(cardText(card))?.[1])).sort()).toEqual([1, 2]);

    // Once the gateway's answers come through, nothing was lost: the four are made, each sent once.
    gateway.releaseAnswers();
    await Promise.all([...held, ...burst].map((run) => run.waitForReply(isDone, 60_000)));
    for (const prompt of ['held first', 'held second', 'burst one', 'burst two'])
      expect(
        emulator.requests.filter(
          (entry) => entry.method === 'POST' && entry.status === 200 && (entry.body as { prompt?: unknown } | undefined)?.prompt === prompt,
        ),
      ).toHaveLength(1);
  }, 120_000);
});
