import { startOwnRedis, type OwnRedis } from '../test/support/redis-server.ts';
import { startWorld } from '../test/support/world.ts';
import { cardRef } from '../test/support/cards.ts';

// The crash run, longer than the test suite's: the bot (a child process started as `npm start` starts
// it) is killed with SIGKILL at random moments while tasks are being submitted, polled, downloaded and
// posted, and restarted on the same store each time: the embedded SQLite file, or a Redis server of the
// run's own. Every task whose status card showed must end with exactly one posted video.

export const CRASH_STORES = ['sqlite', 'redis'] as const;
export type CrashStore = (typeof CRASH_STORES)[number];

export interface CrashOptions {
  tasks: number;
  kills: number;
  seed: number;
  store: CrashStore;
}

export interface CrashReport extends CrashOptions {
  posted: number;
  lost: string[];
  postedTwice: string[];
  /** Tasks not yet posted at the moment of each kill, summed: how much work the kills interrupted. */
  unpostedAtKills: number;
  /** From the last restart until every task was posted (0 when all were posted before it). */
  recoveryMs: number;
}

/** A small seeded generator, so a run that finds a problem can be replayed with `--seed`. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

/** Enough quota for every task several times over: the run is about crashes, not about the gateway's limits. */
const QUOTA_USD_PER_TASK = 5;

export async function benchmarkCrashes(options: CrashOptions): Promise<CrashReport> {
  const random = seeded(options.seed);
  let redis: OwnRedis | undefined;
  if (options.store === 'redis') redis = await startOwnRedis();
  const world = await startWorld({
    emulator: {
      timing: { generation_ms: 1500 },
      limits: { rate_per_minute: 100_000, concurrent_tasks: 100_000 },
      keys: { 'emulator-key': { group: 'default', quota_usd: options.tasks * QUOTA_USD_PER_TASK } },
    },
    ...(redis ? { env: { STORE_URL: redis.url } } : {}),
  }).catch(async (error: unknown) => {
    await redis?.close();
    throw error;
  });
  try {
    const { discord, guild } = world;
    const refs: string[] = [];
    const submit = async (index: number) => {
      const run = discord.runCommand({
        user: guild.member,
        guildId: guild.id,
        channelId: guild.textChannelId,
        command: 'video',
        subcommand: 'generate',
        options: { prompt: `crash run ${index}` },
      });
      const card = await run.waitForReply((message) => cardRef(message) !== undefined, 30_000);
      refs.push(cardRef(card)!);
    };

    // Submissions are spread over the rounds, so kills land while some tasks are young and others are
    // being downloaded or posted.
    const postsOf = (ref: string) =>
      discord
        .messages(guild.textChannelId)
        .filter((message) => message.attachments.length > 0 && JSON.stringify(message.components).includes(`video:extend:${ref}`));
    let unpostedAtKills = 0;
    const perRound = Math.ceil(options.tasks / options.kills);
    for (let round = 0; round < options.kills; round++) {
      const batch = Math.min(perRound, options.tasks - refs.length);
      // Every submission of the round settles before anything else happens, even when one fails: a failure
      // stops the run only after the others, so the world is never torn down under them.
      const submitted = await Promise.allSettled(Array.from({ length: batch }, (_, offset) => submit(refs.length + offset)));
      const failure = submitted.find((result) => result.status === 'rejected');
      if (failure) throw new Error(`a /video of round ${round + 1} was not accepted`, { cause: failure.reason });
      await new Promise((resolve) => setTimeout(resolve, random() * 2500));
      unpostedAtKills += refs.filter((ref) => postsOf(ref).length === 0).length;
      await world.bot.kill();
      await world.restartBot();
    }
    const restartedAt = Date.now();
    const allPostedBeforeRestart = refs.every((ref) => postsOf(ref).length > 0);
    await discord
      .waitFor(() => (refs.every((ref) => postsOf(ref).length > 0) ? true : undefined), 120_000, 'every task posted')
      .catch(() => undefined);
    const recoveryMs = allPostedBeforeRestart ? 0 : Date.now() - restartedAt;
    // Anything posted a second time would show within a few polls of the first post.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    return {
      ...options,
      tasks: refs.length,
      posted: refs.filter((ref) => postsOf(ref).length === 1).length,
      lost: refs.filter((ref) => postsOf(ref).length === 0),
      postedTwice: refs.filter((ref) => postsOf(ref).length > 1),
      unpostedAtKills,
      recoveryMs,
    };
  } finally {
    await world.stop();
    await redis?.close();
  }
}

export function printCrashReport(report: CrashReport): void {
  const listed = (refs: string[]) => `${refs.length}${refs.length > 0 ? ` (${refs.join(', ')})` : ''}`;
  const lines = [
    '',
    `crash run on ${report.store}: ${report.tasks} tasks, ${report.kills} SIGKILLs at random moments (replay with --seed ${report.seed})`,
    `  unposted at the kills ${report.unpostedAtKills} (${(report.unpostedAtKills / report.kills).toFixed(1)} a kill on average)`,
    `  posted exactly once  ${report.posted} of ${report.tasks}`,
    `  lost                 ${listed(report.lost)}`,
    `  posted twice         ${listed(report.postedTwice)}`,
    `  last post            ${report.recoveryMs === 0 ? 'before the last kill' : `${(report.recoveryMs / 1000).toFixed(1)} s after the last restart`}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  if (report.lost.length > 0 || report.postedTwice.length > 0) process.exitCode = 1;
}
