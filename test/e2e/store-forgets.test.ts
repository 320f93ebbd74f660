import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/lib/log.ts';
import { openStore } from '../../src/store/index.ts';
import { parseTaskRecord, type TaskRecord } from '../../src/video/record.ts';
import { pollUntil } from '../support/poll.ts';
import { parsePrometheus, total } from '../support/prometheus.ts';
import { startOwnRedis, type OwnRedis } from '../support/redis-server.ts';
import { startWorld, type World } from '../support/world.ts';
import { cardRef, cardSaying } from '../support/cards.ts';

// A store that forgets, as an operator meets it: the bot on a Redis of the test's own, which restarts
// without persistence while a /video task runs. Every record it held is gone; the bot must say so on the
// task's card (with the request id support looks it up by), in its log and in /metrics, instead of leaving
// the card at "Generating…" for good.

/** Long enough that the task is still running when the store forgets it. */
const GENERATION_MS = 100_000;
/** How often the test reads the task's record while it waits for the bot's poll to be saved. */
const RECORD_POLL_MS = 50;

let redis: OwnRedis;
let world: World;
let opsBase: string;

beforeAll(async () => {
  redis = await startOwnRedis();
  world = await startWorld({ emulator: { timing: { generation_ms: GENERATION_MS } }, env: { STORE_URL: redis.url, OPS_PORT: '0' } });
  const listening = await world.bot.waitForLog((line) => line.msg === 'ops port listening');
  opsBase = `http://127.0.0.1:${String(listening.port)}`;
}, 60_000);

afterAll(async () => {
  await world?.stop();
  await redis?.close();
});

/** The task's record as the bot last saved it, read through a store client of the test's own. */
async function recordOnceProgressing(ref: string): Promise<TaskRecord> {
  const store = await openStore(redis.url, silentLogger);
  try {
    const tasks = store.collection('tasks', parseTaskRecord);
    // With progress reported, the bot's next poll of a 100 s task is its longest gap (20 s) away: the store
    // forgets the task between two of the bot's steps, not during one that would write it back.
    return await pollUntil({
      ask: () => tasks.get(ref),
      found: (task) => (task !== undefined && (task.progress ?? 0) >= 1 ? task : undefined),
      intervalMs: RECORD_POLL_MS,
      timeoutMs: 20_000,
      timeoutError: (last) => new Error(`the task's record never showed progress (last: ${JSON.stringify(last)})`),
    });
  } finally {
    await store.close();
  }
}

describe('a Redis restarted without persistence while a video task runs', () => {
  // Before, the bot met the missing record in silence: the card said "Generating…" for good.
  it('closes the card saying the task was lost, with its request id, logs it and counts it in /metrics', async () => {
    const { discord, guild, bot } = world;
    const run = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'video',
      subcommand: 'generate',
      options: { prompt: 'a store that forgets', duration: 2 },
    });
    const card = await run.waitForReply((message) => cardRef(message) !== undefined, 30_000);
    const ref = cardRef(card) ?? '';
    const saved = await recordOnceProgressing(ref);
    expect(saved.outcome.requestId).toBeDefined();

    await redis.restart();

    const text = await cardSaying(discord, () => discord.state.messages.get(card.id) ?? card, 'The bot lost this task', 60_000);
    expect(text).toContain(`request id \`${saved.outcome.requestId}\``);
    expect(text).toContain(`\`${saved.gatewayId}\``);
    expect(text).not.toContain('Generating');
    expect(bot.logs.find((line) => line.level === 'error' && line.task === ref && String(line.msg).includes('lost'))).toBeDefined();

    const samples = parsePrometheus(await (await fetch(`${opsBase}/metrics`)).text());
    expect(total(samples, 'bot_video_tasks_lost_total')).toBe(1);
    expect(total(samples, 'bot_video_tasks_lost_total', { reason: 'gone' })).toBe(1);
    expect(bot.logs.filter((line) => line.msg === 'unhandled rejection')).toEqual([]);
  }, 120_000);
});
