import { describe, expect, it } from 'vitest';
import type { InteractionHandle, Message, User } from 'discord-standin';
import { cardText, galleryItems } from '../support/cards.ts';
import { isDone, videoWorld } from '../support/video-e2e.ts';

// Ready means the member hears of it (issue 35): editing a card notifies nobody, so when a job ends the
// bot posts one short new message that replies to the card and may ping its member alone; one per job
// however many variants, none when the server turned it off, and none twice across a restart.

describe('the ping when a video job ends', () => {
  const e2e = videoWorld({ emulator: { timing: { generation_ms: 300 } } });

  const generate = (prompt: string, options: Record<string, string | number> = {}, user?: User): InteractionHandle =>
    e2e.video('generate', { prompt, ...options }, user ? { user } : {});

  /** The messages of the channel that reply to `card`. */
  function repliesTo(card: Message): Message[] {
    return e2e.world.discord.messages(e2e.world.guild.textChannelId).filter((message) => message.messageReference?.message_id === card.id);
  }

  async function pingOf(card: Message): Promise<Message> {
    return e2e.world.discord.waitForMessage(
      e2e.world.guild.textChannelId,
      (message) => message.messageReference?.message_id === card.id,
      20_000,
    );
  }

  /** The card once `done` says it is; then its job's ping. */
  async function endedWithPing(run: InteractionHandle, done: (card: Message) => boolean): Promise<{ card: Message; ping: Message }> {
    const card = await run.waitForReply(done, 30_000);
    return { card, ping: await pingOf(card) };
  }

  it('is a new message replying to the card, mentioning only the member, who alone may be pinged by it', async () => {
    const { guild } = e2e.world;
    const { card, ping } = await endedWithPing(generate('a lighthouse in the fog'), isDone);
    expect(ping.id).not.toBe(card.id);
    expect(ping.authorId).toBe(card.authorId);
    expect(ping.content).toBe(`<@${guild.member.id}> your video is ready.`);
    expect(ping.allowedMentions).toEqual({ parse: [], users: [guild.member.id], replied_user: false });
    // The card itself still pings nobody.
    expect(card.content).not.toContain('<@');
  });

  it('is one message for a job of two variants, once both are shown', async () => {
    const { guild } = e2e.world;
    const run = generate('two cranes over a lake', { variants: 2 });
    const { card, ping } = await endedWithPing(run, (reply) => galleryItems(reply).length === 2);
    expect(ping.content).toBe(`<@${guild.member.id}> your 2 videos are ready.`);
    // A later job's ping comes after any second one this job could have sent.
    await endedWithPing(generate('one more crane'), isDone);
    expect(repliesTo(card)).toHaveLength(1);
  });

  it('says when the video could not be made', async () => {
    const { guild } = e2e.world;
    const { ping } = await endedWithPing(generate('x [[fail:invalid_argument]]'), (reply) => cardText(reply).includes('**Failed**'));
    expect(ping.content).toBe(`<@${guild.member.id}> your video could not be made; its card says why.`);
    expect(ping.allowedMentions).toEqual({ parse: [], users: [guild.member.id], replied_user: false });
  });

  it('is not sent on a server that turned it off with /config defaults ping:off', async () => {
    await e2e.config('defaults', { ping: 'off' }).reply();
    let quiet: Message;
    try {
      quiet = await generate('a quiet pond').waitForReply(isDone, 30_000);
    } finally {
      await e2e.config('defaults', { ping: 'on' }).reply();
    }
    // The next job's ping comes after any this one could have sent.
    await endedWithPing(generate('a loud waterfall'), isDone);
    expect(repliesTo(quiet)).toEqual([]);
  });

  it('is sent once for a job the bot was restarted in the middle of', async () => {
    const { guild, emulator } = e2e.world;
    const usual = emulator.config.timing.generation_ms;
    emulator.config.timing.generation_ms = 2500;
    let card: Message;
    try {
      const run = generate('two owls at night', { variants: 2 });
      // Both sent (each tile shows its gateway task), neither finished yet.
      card = await run.waitForReply((reply) => (cardText(reply).match(/task `[^`]+`/g) ?? []).length === 2, 20_000);
      await e2e.world.bot.kill();
      await e2e.world.restartBot();
      const ping = await pingOf(card);
      expect(galleryItems(card)).toHaveLength(2);
      expect(ping.content).toBe(`<@${guild.member.id}> your 2 videos are ready.`);
    } finally {
      emulator.config.timing.generation_ms = usual;
    }
    await endedWithPing(generate('an owl at noon'), isDone);
    expect(repliesTo(card)).toHaveLength(1);
  }, 90_000);
});
