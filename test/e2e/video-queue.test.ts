import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { InteractionHandle, Message, User } from 'discord-standin';
import type { JournalEntry } from '../../src/emulator/server.ts';
import { cardText } from '../support/cards.ts';
import { EPHEMERAL, isDone, videoWorld } from '../support/video-e2e.ts';

// A busy server (issue 35): every job waits its turn in its key's line instead of failing. On the
// stand-ins, with the bot's key held by the emulator to 2 tasks at once, on both stores. The key is new
// for each world, so its line (kept in the store, shared Redis included) is this file's alone.

const SHARED_REDIS = 'redis://127.0.0.1:6379';
const WAITING = /\*\*Waiting\*\*: (\d+)(st|nd|rd|th) in line for this server's key/;

const isWaiting = (card: Message): boolean => WAITING.test(cardText(card));

describe.each([
  ['SQLite', undefined],
  ['Redis', SHARED_REDIS],
])('a key that runs 2 videos at once, on %s', (_store, storeUrl) => {
  const key = `queue-key-${randomBytes(8).toString('hex')}`;
  const e2e = videoWorld({
    emulator: {
      keys: { [key]: { group: 'default', quota_usd: 1_000, limits: { concurrent_tasks: 2 } } },
      timing: { generation_ms: 1_500 },
    },
    env: { GATEWAY_API_KEY: key, ...(storeUrl ? { STORE_URL: storeUrl } : {}) },
  });

  const members = (count: number, name: string): User[] =>
    Array.from({ length: count }, (_, index) =>
      e2e.world.discord.createUser({ guildId: e2e.world.guild.id, name: `${name}-${index + 1}` }),
    );
  const generate = (user: User, prompt: string): InteractionHandle => e2e.video('generate', { prompt }, { user });
  /** Submissions of `prompt` the gateway answered with `status`. */
  const sent = (prompt: string, status = 200): JournalEntry[] =>
    e2e.submissions().filter((entry) => entry.status === status && JSON.stringify(entry.body).includes(prompt));

  /** Two jobs of `user` that run 8 s: both slots held while a test lines up what must wait. */
  async function holdBothSlots(user: User, prompt: string): Promise<InteractionHandle[]> {
    const { timing } = e2e.world.emulator.config;
    const usual = timing.generation_ms;
    timing.generation_ms = 8_000;
    try {
      const holders = [generate(user, `${prompt} 1`), generate(user, `${prompt} 2`)];
      await Promise.all(holders.map((run) => run.waitForReply((card) => cardText(card).includes('**Generating'), 20_000)));
      return holders;
    } finally {
      timing.generation_ms = usual;
    }
  }

  it('serves 6 members who ask at once: 6 videos, nobody told of a failure, the waiting cards saying their place', async () => {
    const before = e2e.submissions().length;
    const runs = members(6, 'burst').map((user, index) => generate(user, `burst ${index + 1}`));
    const waiting = await Promise.any(runs.map((run) => run.waitForReply(isWaiting, 20_000)));
    expect(Number(WAITING.exec(cardText(waiting))?.[1])).toBeGreaterThanOrEqual(1);
    const cards = await Promise.all(runs.map((run) => run.waitForReply(isDone, 60_000)));
    for (const [index, card] of cards.entries()) {
      expect(card.flags & EPHEMERAL).toBe(0);
      expect(cardText(card)).not.toMatch(/Failed|Too many/);
      expect(sent(`burst ${index + 1}`)).toHaveLength(1);
    }
    // The line learns the key's 2 slots from at most one refusal of a probe past them.
    const refused = e2e
      .submissions()
      .slice(before)
      .filter((entry) => entry.status === 429);
    expect(refused.length).toBeLessThanOrEqual(1);
  }, 90_000);

  it('takes members in turn: one who asked for 5 and one who asked for 1 after, the other starts among the first two', async () => {
    const [busy, ana, bo] = members(3, 'turns');
    // Both slots taken, long enough for everything asked for next to wait even on a busy machine.
    const holders = await holdBothSlots(busy!, 'turns holder');
    const anas: InteractionHandle[] = [];
    for (let index = 1; index <= 5; index++) {
      const run = generate(ana!, `turns ana ${index}`);
      await run.waitForReply(isWaiting, 20_000);
      anas.push(run);
    }
    const bos = generate(bo!, 'turns bo 1');
    await bos.waitForReply(isWaiting, 20_000);
    // A finished task is noticed at its next poll, which backs off to 20 s (and a jitter): on a busy machine
    // a round of the line can wait that long.
    await Promise.all([...holders, ...anas, bos].map((run) => run.waitForReply(isDone, 140_000)));
    const order = e2e
      .submissions()
      .filter((entry) => entry.status === 200 && /turns (ana|bo)/.test(JSON.stringify(entry.body)))
      .map((entry) => /turns (ana \d|bo 1)/.exec(JSON.stringify(entry.body))?.[1]);
    expect(order.indexOf('bo 1')).toBeLessThan(2);
    expect(order.at(-1)).toBe('ana 5');
  }, 150_000);

  it('lets only its member (or a manager) cancel a waiting job, which is then never made', async () => {
    const { discord } = e2e.world;
    const [busy, owner, other] = members(3, 'cancel');
    const holders = await holdBothSlots(busy!, 'cancel holder');
    const run = generate(owner!, 'cancel me please');
    const card = await run.waitForReply(isWaiting, 20_000);
    const cancelId = /video:unqueue:v[0-9a-z]+/.exec(JSON.stringify(card.components))?.[0];
    expect(cancelId).toBeDefined();

    const refused = await discord.clickButton({ user: other!, message: card, customId: cancelId! }).reply();
    expect(refused.flags & EPHEMERAL).toBe(EPHEMERAL);
    expect(refused.content).toBe(`This is <@${owner!.id}>'s job: only they or a member with Manage Server can cancel it.`);

    const cancelled = await discord.clickButton({ user: owner!, message: card, customId: cancelId! }).reply();
    expect(cancelled.content).toMatch(/^Cancelled: that video will not be made/);
    const shown = await run.waitForReply((reply) => cardText(reply).includes('**Cancelled**'), 20_000);
    expect(cardText(shown)).toContain(`**Cancelled** by <@${owner!.id}>`);
    expect(JSON.stringify(shown.components)).not.toContain('video:unqueue:');

    // Once the slots free and the line is empty again, it was still never made.
    // Each may wait for a poll backed off to 20 s (and a jitter) before it is seen done.
    await Promise.all(holders.map((holder) => holder.waitForReply(isDone, 40_000)));
    await generate(busy!, 'cancel after').waitForReply(isDone, 40_000);
    expect(sent('cancel me please')).toEqual([]);
  }, 120_000);
});
