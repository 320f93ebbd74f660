import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorld, type World } from '../support/world.ts';
import { cardEditProblems, cardRef, cardText } from '../support/cards.ts';

// Nothing lost, nothing posted twice: the bot is killed with SIGKILL at random moments while its tasks
// run, restarted on the same store each time, and every task must end with exactly one posted video.

const TASKS = 5;
const ROUNDS = 3;
/** CRASH_TEST_SEED replays a failed run's kill moments. */
const SEED = Number(process.env.CRASH_TEST_SEED ?? Date.now() % 100_000);

/** A small seeded generator, so a failing run can be replayed from its seed. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

// Each layer has its own ids, answers and way to fetch the video: each gets its own world and crashes.
describe.each(['compat', 'native'] as const)('crashes while tasks run on the %s layer', (layer) => {
  let world: World;
  beforeAll(async () => {
    world = await startWorld({ emulator: { timing: { generation_ms: 1200 } }, env: { GATEWAY_LAYER: layer } });
  }, 60_000);
  afterAll(() => world?.stop());

  // Three restarts of the bot are three Node processes loading discord.js: 2-3 s each on a quiet machine,
  // 5-7 s with the suite's other files and two busy loops beside it (each waits for the bot's "ready").
  it(`delivers each of ${TASKS} tasks exactly once across ${ROUNDS} SIGKILLs`, async () => {
    const { discord, emulator, guild } = world;
    const seed = SEED + (layer === 'native' ? 1 : 0);
    const random = seeded(seed);
    const refs: string[] = [];
    for (let index = 0; index < TASKS; index++) {
      const run = discord.runCommand({
        user: guild.member,
        guildId: guild.id,
        channelId: guild.textChannelId,
        command: 'video',
        subcommand: 'generate',
        options: { prompt: `crash test ${index}` },
      });
      const card = await run.waitForReply((message) => cardRef(message) !== undefined);
      refs.push(cardRef(card)!);
    }
    const submissions = emulator.requests.filter((entry) => entry.method === 'POST' && entry.path.endsWith('/videos/generations'));
    expect(submissions.map((entry) => entry.path)).toEqual(
      Array(TASKS).fill(layer === 'native' ? '/native/v1/videos/generations' : '/v1/videos/generations'),
    );

    for (let round = 0; round < ROUNDS; round++) {
      await new Promise((resolve) => setTimeout(resolve, 100 + random() * 800));
      await world.bot.kill();
      await world.restartBot();
    }

    const postedFor = (ref: string) =>
      discord
        .messages(guild.textChannelId)
        .filter((message) => message.attachments.length > 0 && JSON.stringify(message.components).includes(`video:extend:${ref}`));
    await discord.waitFor(
      () => (refs.every((ref) => postedFor(ref).length > 0) ? true : undefined),
      30_000,
      `every task delivered (seed ${seed})`,
    );
    for (const ref of refs) expect(postedFor(ref), `task ${ref}, seed ${seed}`).toHaveLength(1);
    // Each card ends saying where its video went.
    for (const ref of refs) {
      const card = discord.messages(guild.textChannelId).find((message) => cardText(message).includes(`ref ${ref}`));
      await discord.waitFor(
        () => (card && cardText(card).includes('**Done**') ? true : undefined),
        10_000,
        `the card of ${ref} (seed ${seed})`,
      );
      expect(cardEditProblems(card!), `the card of ${ref}`).toEqual([]);
    }
  }, 120_000);
});
