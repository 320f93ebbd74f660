import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskRecord } from '../../src/video/record.ts';
import { voiceRequestCard } from '../../src/video/status-card.ts';
import { SubmissionRefusedError } from '../../src/video/submit.ts';
import { MAX_WAITING_PER_MEMBER } from '../../src/video/key-queue.ts';
import { startOneSlotKey, type OneSlotKey } from '../support/one-slot-key.ts';
import { generationInput, memberContext } from '../support/video-request.ts';

// A member's place in their key's line is bounded (MAX_WAITING_PER_MEMBER jobs waiting on one server), and
// each variant of a job takes a place of its own. A job of variants that runs into the bound has every
// variant past it closed (not left 'waiting' outside the line with its estimate held), each giving back
// what it reserved; when none fits, the job is refused as a whole and its member told why. The video part
// on the gateway emulator, whose key takes one video at a time (test/support/one-slot-key.ts).

const MEMBER_LIMIT = 'You already have 10 videos waiting in line on this server: wait for one to start, or cancel one on its card.';

describe("a job of variants that runs into the member's bound in the key's line", () => {
  let line: OneSlotKey;
  /** Whose reservations were given back, one entry each. */
  const released: string[] = [];

  beforeAll(async () => {
    line = await startOneSlotKey({
      policy: {
        releaseSubmission: (task) => {
          released.push(task.userId);
          return Promise.resolve();
        },
      },
    });
  }, 30_000);
  afterAll(() => line?.stop());

  /** A job of `variants` asked for by the server's member, as submit() answers it. */
  async function askVariants(prompt: string, variants: number): Promise<TaskRecord> {
    const { guild, outbox, video } = line;
    const context = memberContext({ guildId: guild.id, channelId: guild.textChannelId, userId: guild.member.id });
    const prepared = await video.prepare.generation(context, generationInput(prompt, { variants }));
    if (!prepared.ok) throw new Error(`the job was refused before the line: ${JSON.stringify(prepared.notice)}`);
    const { messageId } = await outbox.postCard(guild.textChannelId, voiceRequestCard(guild.member.id));
    return video.submit(prepared.plan, { ...context, cardMessageId: messageId });
  }

  /** Every task of the job `first` belongs to, as stored now. */
  async function jobOf(first: TaskRecord): Promise<TaskRecord[]> {
    const ids = first.job?.taskIds ?? [first.id];
    return Promise.all(ids.map(async (id) => (await line.video.tasks.findInGuild(line.guild.id, id))!));
  }

  it('with 9 jobs waiting, 3 variants: the first takes the 10th place, the other two are closed and give back their estimates', async () => {
    const { guild } = line;
    expect(MAX_WAITING_PER_MEMBER).toBe(10);
    // The key's one slot taken, then 9 jobs waiting.
    expect((await line.ask(guild.member.id, 'a running heron')).state).toBe('running');
    for (let index = 1; index <= 9; index++) expect((await line.ask(guild.member.id, `waiting ${index}`)).state).toBe('waiting');
    released.length = 0;

    const first = await askVariants('three owls at night', 3);
    const [placed, ...past] = await jobOf(first);
    expect(placed).toMatchObject({ state: 'waiting', place: 10 });
    expect(past).toHaveLength(2);
    for (const variant of past) {
      expect(variant).toMatchObject({ state: 'failed', delivery: { state: 'closed' } });
      // Its tile says why.
      expect(variant.outcome.error?.message).toBe(MEMBER_LIMIT);
    }
    expect(released).toEqual([guild.member.id, guild.member.id]);
    expect(await line.video.sender.placeOf(past[0]!)).toBeUndefined();
    expect(await line.video.sender.placeOf(past[1]!)).toBeUndefined();
  }, 30_000);

  it('with 10 waiting, 3 variants: the job is refused, its member told why, and all three closed and given back', async () => {
    released.length = 0;
    const before = new Set((await line.video.tasks.recentForUser(line.guild.id, line.guild.member.id, 100)).map((task) => task.id));
    const refused = await askVariants('three more owls', 3).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SubmissionRefusedError);
    expect((refused as SubmissionRefusedError).message).toBe(MEMBER_LIMIT);
    const job = (await line.video.tasks.recentForUser(line.guild.id, line.guild.member.id, 100)).filter((task) => !before.has(task.id));
    expect(job).toHaveLength(3);
    for (const variant of job) expect(variant).toMatchObject({ state: 'failed', delivery: { state: 'closed' } });
    expect(released).toEqual([line.guild.member.id, line.guild.member.id, line.guild.member.id]);
  }, 30_000);
});
