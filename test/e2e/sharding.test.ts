import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FORCE_MESSAGE_TONE_HZ } from '../../src/emulator/realtime/session.ts';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { startBot, cleanupBotDirectories, makeDataDirectory, type BotProcess, type LogLine } from '../support/bot-process.ts';
import { analyzeTone, audible, type DiscordStandIn, type Message, startDiscordStandIn, type TestGuild } from 'discord-standin';
import { parsePrometheus, total } from '../support/prometheus.ts';
import { startOwnRedis, type OwnRedis } from '../support/redis-server.ts';
import { botEnvironment } from '../support/world.ts';

// The bot sharded (issue 16) on the stand-ins: Discord's gateway with two shards, the gateway emulator,
// and a Redis of the test's own as the shared store. Four guilds, two on each shard.

const SHARDS = 2;
/** Discord's identify window is 5 s; the stand-in's is shorter here so that starts stay quick. */
const IDENTIFY_WINDOW_MS = 1_000;

interface Rig {
  emulator: Emulator;
  discord: DiscordStandIn;
  redis: OwnRedis;
  guilds: TestGuild[];
  env: Record<string, string>;
}

/** `shards` in all (Discord's recommendation), and a guild on each shard of `guildShards`. */
async function startRig(shards = SHARDS, guildShards = [0, 0, 1, 1]): Promise<Rig> {
  const emulator = await startEmulator({
    config: { timing: { generation_ms: 300 }, limits: { rate_per_minute: 100_000, concurrent_tasks: 100 } },
  });
  const discord = await startDiscordStandIn({ shards, identifyWindowMs: IDENTIFY_WINDOW_MS });
  const redis = await startOwnRedis();
  const guilds = guildShards.map((shard) => discord.createGuild({ shard: [shard, shards] }));
  return { emulator, discord, redis, guilds, env: botEnvironment(discord, emulator, { STORE_URL: redis.url }) };
}

async function stopRig(rig: Rig | undefined): Promise<void> {
  await rig?.discord.close();
  await rig?.emulator.close();
  await rig?.redis.close();
  cleanupBotDirectories();
}

/** Waits until a worker of each of `shards` has logged that it is ready. */
async function workersReady(bot: BotProcess, shards: number[], since = 0): Promise<void> {
  for (const shard of shards) {
    await bot.waitForLog((line) => line.msg === 'ready' && line.shards === String(shard) && bot.logs.indexOf(line) >= since, 40_000);
  }
}

/** Runs /video generate in `guild` and waits for the mp4 and for `bot`'s record of posting it (a log line that names the worker). */
async function makeVideo(discord: DiscordStandIn, bot: BotProcess, guild: TestGuild, prompt: string): Promise<LogLine> {
  const before = new Set(discord.messages(guild.textChannelId).map((message) => message.id));
  const run = discord.runCommand({
    user: guild.member,
    guildId: guild.id,
    channelId: guild.textChannelId,
    command: 'video',
    subcommand: 'generate',
    options: { prompt },
  });
  expect((await run.response()).type).toBe(5);
  const posted = await discord.waitForMessage(
    guild.textChannelId,
    (message) => !before.has(message.id) && message.attachments.length > 0,
    30_000,
  );
  expect(posted.attachments[0]?.filename).toMatch(/\.mp4$/);
  return bot.waitForLog((line) => line.msg === 'video posted' && line.message === posted.id);
}

function videoPosts(discord: DiscordStandIn, guild: TestGuild): Message[] {
  return discord.messages(guild.textChannelId).filter((message) => message.attachments.length > 0);
}

describe('two workers on one machine (SHARD_COUNT from Discord, two shards)', () => {
  let rig: Rig;
  let bot: BotProcess;
  /** The machine's ops port, which the supervisor serves for both workers. */
  let ops: string;
  beforeAll(async () => {
    rig = await startRig();
    bot = startBot({ env: { ...rig.env, OPS_PORT: '0' }, dataDirectory: makeDataDirectory() });
    await workersReady(bot, [0, 1]);
    const listening = await bot.waitForLog((line) => line.msg === 'ops port listening');
    ops = `http://127.0.0.1:${String(listening.port)}`;
  }, 90_000);
  const readyz = async () => {
    const answer = await fetch(`${ops}/readyz`);
    return [answer.status, await answer.text()];
  };
  afterAll(async () => {
    if (bot?.child.exitCode === null) await bot.stop();
    await stopRig(rig);
  });

  it('asks Discord for the shard count, starts a worker per shard, each holding its own guilds, and registers the commands once', () => {
    const { discord } = rig;
    const started = bot.logs.filter((line) => line.msg === 'worker started');
    expect(started.map((line) => line.shards).sort()).toEqual(['0', '1']);
    expect(discord.requests.filter((request) => request.method === 'PUT' && /\/commands$/.test(request.path))).toHaveLength(1);
    const sessions = discord.shardSessions().filter((session) => session.connected);
    expect(sessions.map((session) => session.shard).sort()).toEqual([
      [0, SHARDS],
      [1, SHARDS],
    ]);
    // Identifies share one rate-limit bucket (max_concurrency 1): never two in one window, none refused.
    const accepted = discord.identifies.filter((identify) => identify.outcome === 'accepted');
    expect(discord.identifies.filter((identify) => identify.outcome !== 'accepted')).toEqual([]);
    for (let index = 1; index < accepted.length; index++)
      expect(accepted[index]!.at - accepted[index - 1]!.at).toBeGreaterThanOrEqual(IDENTIFY_WINDOW_MS);
    // Every line of a worker names its shards.
    const workerLines = bot.logs.filter((line) => line.pid !== undefined || line.shards !== undefined);
    expect(workerLines.filter((line) => line.msg === 'ready').every((line) => line.shards === '0' || line.shards === '1')).toBe(true);
  });

  it('posts a video in every guild, each from the worker of its shard', async () => {
    const { discord, guilds } = rig;
    const posted = await Promise.all(guilds.map((guild, index) => makeVideo(discord, bot, guild, `a harbour ${index}`)));
    expect(posted.map((line) => [line.guild, line.shards])).toEqual(guilds.map((guild, index) => [guild.id, index < 2 ? '0' : '1']));
  });

  it('serves one ops port for the machine: /readyz when both workers are, /metrics summed over them', async () => {
    // The supervisor serves it; the workers serve none of their own.
    const listening = bot.logs.filter((line) => line.msg === 'ops port listening');
    expect(listening.map((line) => [line.supervisor, line.shards])).toEqual([[true, undefined]]);
    expect(await readyz()).toEqual([200, 'ready\n']);
    // Each worker posted the videos of its shard's two guilds: four in all.
    const samples = parsePrometheus(await (await fetch(`${ops}/metrics`)).text());
    expect(total(samples, 'bot_video_tasks_finished_total', { state: 'succeeded' })).toBe(4);
    expect(total(samples, 'bot_video_post_delay_seconds_count')).toBe(4);
  });

  it('runs voice conversations in a guild of each shard at the same time', async () => {
    const { discord, guilds } = rig;
    const pair = [guilds[0]!, guilds[2]!];
    for (const guild of pair) {
      discord.joinVoice(guild.member, guild.id, guild.voiceChannelId);
      const run = discord.runCommand({
        user: guild.member,
        guildId: guild.id,
        channelId: guild.textChannelId,
        command: 'voice',
        subcommand: 'join',
      });
      expect((await run.reply()).content).toMatch(new RegExp(`^Joined <#${guild.voiceChannelId}>`));
      // Answered once its first line (that the bot listens) was heard: what the bot plays next is new.
      discord.voice.clearBotAudio(guild.id);
    }
    await Promise.all(pair.map((guild) => discord.voice.waitForBotConnection(guild.id)));
    await Promise.all(
      pair.map((guild, index) => discord.voice.speakTone(guild.id, guild.member.id, { hz: 400 + 200 * index, ms: 600, amplitude: 0.5 })),
    );
    for (const [index, guild] of pair.entries()) {
      const frames = await discord.voice.waitForBotAudio(guild.id, (received) => audible(received).length >= 20, 20_000);
      const pcm = Int16Array.from(audible(frames).flatMap((frame) => [...frame.pcm]));
      expect(analyzeTone(pcm).dominantHz).toBeCloseTo(400 + 200 * index, -1);
      expect(analyzeTone(pcm).dominantHz).not.toBeCloseTo(FORCE_MESSAGE_TONE_HZ, -1);
    }
    for (const guild of pair) {
      await discord
        .runCommand({ user: guild.member, guildId: guild.id, channelId: guild.textChannelId, command: 'voice', subcommand: 'leave' })
        .reply();
      discord.leaveVoice(guild.member, guild.id);
    }
  });

  it('starts a worker killed with SIGKILL mid-task again, and every task is posted exactly once', async () => {
    const { discord, emulator, guilds } = rig;
    emulator.config.timing.generation_ms = 2_500;
    try {
      const onShard1 = [guilds[2]!, guilds[3]!];
      const before = onShard1.map((guild) => videoPosts(discord, guild).length);
      const mark = bot.logs.length;
      const runs = onShard1.flatMap((guild) =>
        [0, 1].map((n) =>
          discord.runCommand({
            user: guild.member,
            guildId: guild.id,
            channelId: guild.textChannelId,
            command: 'video',
            subcommand: 'generate',
            options: { prompt: `storm ${n}` },
          }),
        ),
      );
      for (const run of runs) expect((await run.response()).type).toBe(5);
      // Mid-task: the gateway has taken all four and is still generating.
      await bot.waitForLog(() => bot.logs.slice(mark).filter((line) => line.msg === 'video task submitted').length >= runs.length, 15_000);
      const worker = bot.logs.filter((line) => line.msg === 'worker started' && line.shards === '1').at(-1);
      const since = bot.logs.length;
      process.kill(Number(worker?.pid), 'SIGKILL');
      const died = await bot.waitForLog((line) => line.msg === 'a worker died; starting it again' && line.shards === '1', 10_000);
      expect(died.why).toBe('killed by SIGKILL');
      // Until it is back (its restart waits at least 750 ms), the machine is not ready, and says which worker.
      expect(await readyz()).toEqual([503, 'not ready: shards 1: the worker is not running\n']);
      await workersReady(bot, [1], since);
      expect(await readyz()).toEqual([200, 'ready\n']);
      for (const [index, guild] of onShard1.entries()) {
        await discord.waitFor(
          () => (videoPosts(discord, guild).length >= before[index]! + 2 ? true : undefined),
          40_000,
          `two videos posted in guild ${guild.id}`,
        );
      }
      // Nothing twice, even after the next polls had their chance.
      await bot.waitForLog((line) => line.msg === 'following unfinished video tasks' && bot.logs.indexOf(line) >= since);
      for (const [index, guild] of onShard1.entries()) expect(videoPosts(discord, guild)).toHaveLength(before[index]! + 2);
      expect(bot.child.exitCode).toBeNull();
    } finally {
      emulator.config.timing.generation_ms = 300;
    }
  }, 90_000);

  it('stops every worker on SIGTERM and exits 0', async () => {
    expect(await bot.stop('SIGTERM')).toBe(0);
    expect(bot.logs.filter((line) => line.msg === 'worker stopped')).toHaveLength(2);
    expect(bot.logs.some((line) => line.msg === 'all workers stopped')).toBe(true);
  });
});

describe('two machines (SHARD_IDS=0 and SHARD_IDS=1 of SHARD_COUNT=2) on one Redis', () => {
  let rig: Rig;
  let machines: BotProcess[];
  beforeAll(async () => {
    rig = await startRig();
    machines = ['0', '1'].map((ids) =>
      startBot({ env: { ...rig.env, SHARD_COUNT: '2', SHARD_IDS: ids }, dataDirectory: makeDataDirectory() }),
    );
    await workersReady(machines[0]!, [0]);
    await workersReady(machines[1]!, [1]);
  }, 90_000);
  afterAll(async () => {
    for (const machine of machines ?? []) if (machine.child.exitCode === null) await machine.stop();
    await stopRig(rig);
  });

  it('serves all four guilds, each from the machine holding its shard', async () => {
    const { discord, guilds } = rig;
    // Each guild's video is posted by the machine holding its shard (the other machine never sees it).
    await Promise.all(guilds.map((guild, index) => makeVideo(discord, machines[index < 2 ? 0 : 1]!, guild, `a lantern ${index}`)));
    expect(
      machines[0]!.logs
        .filter((line) => line.msg === 'video posted')
        .map((line) => line.guild)
        .sort(),
    ).toEqual([guilds[0]!.id, guilds[1]!.id].sort());
    expect(
      machines[1]!.logs
        .filter((line) => line.msg === 'video posted')
        .map((line) => line.guild)
        .sort(),
    ).toEqual([guilds[2]!.id, guilds[3]!.id].sort());
  });

  it("keeps serving the other machine's guilds when one machine stops", async () => {
    const { discord, guilds } = rig;
    expect(await machines[0]!.stop('SIGTERM')).toBe(0);
    const posted = await makeVideo(discord, machines[1]!, guilds[3]!, 'after the other machine left');
    expect(posted.guild).toBe(guilds[3]!.id);
  });
});

describe('a change of SHARD_COUNT', () => {
  let rig: Rig;
  afterAll(() => stopRig(rig));

  it("moves a guild's unfinished tasks with the guild to the worker that now holds its shard", async () => {
    rig = await startRig();
    const { discord, emulator, guilds } = rig;
    const guild = guilds[2]!;
    emulator.config.timing.generation_ms = 4_000;
    // One shard in all: one process holds every guild, and stops while the gateway is still generating.
    const single = startBot({ env: { ...rig.env, SHARD_COUNT: '1' }, dataDirectory: makeDataDirectory() });
    await single.waitForLog((line) => line.msg === 'ready', 30_000);
    const run = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'video',
      subcommand: 'generate',
      options: { prompt: 'a moving fox' },
    });
    expect((await run.response()).type).toBe(5);
    await single.waitForLog((line) => line.msg === 'video task submitted');
    expect(await single.stop('SIGTERM')).toBe(0);
    emulator.config.timing.generation_ms = 300;
    // Two shards: the guild is on shard 1, whose worker picks the task up; shard 0's worker leaves it.
    const sharded = startBot({ env: { ...rig.env, SHARD_COUNT: '2' }, dataDirectory: makeDataDirectory() });
    try {
      await workersReady(sharded, [0, 1]);
      const resumed = await Promise.all(
        ['0', '1'].map((shards) => sharded.waitForLog((line) => line.msg === 'following unfinished video tasks' && line.shards === shards)),
      );
      expect(resumed.map((line) => line.count)).toEqual([0, 1]);
      const posted = await sharded.waitForLog((line) => line.msg === 'video posted' && line.guild === guild.id, 30_000);
      expect(posted.shards).toBe('1');
      expect(videoPosts(discord, guild)).toHaveLength(1);
    } finally {
      await sharded.stop();
    }
  }, 90_000);
});

describe('a Kubernetes pod (SHARD_IDS=auto-ordinal): bot-3 of SHARD_COUNT=8 with SHARDS_PER_MACHINE=2', () => {
  let rig: Rig;
  let pod: BotProcess;
  beforeAll(async () => {
    // A guild on each of the pod's shards, and one on a shard of another pod.
    rig = await startRig(8, [6, 7, 0]);
    // POD_INDEX as the StatefulSet's downward API gives it (deploy/kubernetes/bot-statefulset.yaml).
    pod = startBot({
      env: { ...rig.env, SHARD_COUNT: '8', SHARD_IDS: 'auto-ordinal', SHARDS_PER_MACHINE: '2', POD_INDEX: '3' },
      dataDirectory: makeDataDirectory(),
    });
    await workersReady(pod, [6, 7]);
  }, 90_000);
  afterAll(async () => {
    if (pod?.child.exitCode === null) await pod.stop();
    await stopRig(rig);
  });

  it('holds shards 6 and 7: identifies with those shard ids and no other, and receives their guilds alone', () => {
    const { discord, guilds } = rig;
    const starting = pod.logs.find((line) => line.msg === 'starting worker processes');
    expect(starting).toMatchObject({ shardCount: 8, shards: '6-7', workers: ['6', '7'], ordinal: 3, ordinalFrom: 'POD_INDEX=3' });
    // The two workers identify in either order.
    const byShard = <T extends { shard: readonly number[] | null }>(records: readonly T[]) =>
      [...records].sort((a, b) => (a.shard?.[0] ?? -1) - (b.shard?.[0] ?? -1));
    expect(byShard(discord.identifies).map((identify) => [identify.shard, identify.outcome])).toEqual([
      [[6, 8], 'accepted'],
      [[7, 8], 'accepted'],
    ]);
    const sessions = byShard(discord.shardSessions().filter((session) => session.connected));
    expect(sessions.map((session) => [session.shard, session.guildIds])).toEqual([
      [[6, 8], [guilds[0]!.id]],
      [[7, 8], [guilds[1]!.id]],
    ]);
  });
});
