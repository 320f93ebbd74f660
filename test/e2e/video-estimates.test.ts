import { beforeAll, describe, expect, it } from 'vitest';
import type { InteractionHandle, Message, User } from 'discord-standin';
import { cardText, galleryItems } from '../support/cards.ts';
import { DEFERRED_REPLY, EPHEMERAL, isDone, png, REPLY, UPDATE, videoRefOf, videoWorld } from '../support/video-e2e.ts';

// What a video is expected to cost, shown before anything is spent (issue 24, "Shown before and after"):
// on the first status card, on the forms of the buttons and message commands, on a finished card whose
// cost the gateway did not report; and a video over the server's `confirm_over_usd` waiting for its
// member's confirm button, with nothing sent to the gateway before the press. The emulator's prices: 480p
// $0.05 a second, 720p $0.08 (edits as 8 s and extensions as the seconds added, at 720p).

describe('estimates before a video is made', () => {
  const e2e = videoWorld();
  const { submissions } = e2e;

  function generate(user: User, prompt: string, options: Record<string, number> = {}): InteractionHandle {
    return e2e.video('generate', { prompt, ...options }, { user });
  }

  /** The value of a card's `Name: value` line. */
  function field(card: Message, name: string): string | undefined {
    return new RegExp(`^${name}: (.*)$`, 'm').exec(cardText(card))?.[1];
  }

  /** A finished video of `user`'s, and its ref (from its buttons). */
  async function finishedVideo(user: User, prompt: string): Promise<{ video: Message; ref: string }> {
    // The card is the video's message: the file is in its gallery and the buttons under it.
    const video = await generate(user, prompt, { duration: 2 }).waitForReply(isDone, 20_000);
    return { video, ref: videoRefOf(video) };
  }

  describe('on the card', () => {
    it('the first card carries the estimate while the task runs', async () => {
      // Its own member: the task never finishes, so it stays among their videos in progress.
      const watcher = e2e.world.discord.createUser({ guildId: e2e.world.guild.id, name: 'watcher' });
      const card = await generate(watcher, 'a slow sunrise [[hang]]', { duration: 4 }).waitForReply(
        (reply) => cardText(reply).includes('**Generating'),
        15_000,
      );
      expect(field(card, 'Estimate')).toBe('about $0.20');
      expect(field(card, 'Cost')).toBeUndefined();
    });

    it('a finished card whose cost the gateway did not report shows the estimate, marked as estimated, never $0.00', async () => {
      const card = await generate(e2e.world.guild.member, 'a quiet meadow [[no-cost]]', { duration: 2 }).waitForReply(isDone, 20_000);
      expect(field(card, 'Cost')).toBe('about $0.10 (estimated)');
      expect(field(card, 'Estimate')).toBeUndefined();
      expect(cardText(card)).not.toContain('$0.00');
    });
  });

  describe('on the forms', () => {
    it("the Extend and Edit forms under a video, and a message command's form, carry the estimate in their title", async () => {
      const { discord, guild } = e2e.world;
      const { video, ref } = await finishedVideo(guild.member, 'a kite on the beach');
      const extend = await discord.clickButton({ user: guild.member, message: video, customId: `video:extend:${ref}` }).response();
      expect(extend.data.title).toBe('Extend this video (about $0.08 a second)');
      const edit = await discord.clickButton({ user: guild.member, message: video, customId: `video:edit:${ref}` }).response();
      expect(edit.data.title).toBe('Edit this video (about $0.64)');
      const picture = e2e.post(guild.admin, { files: [png('dog.png')] });
      const animate = await discord.runMessageCommand({ user: guild.member, message: picture, command: 'Animate image' }).response();
      expect(animate.data.title).toBe('Animate this image (about $0.05 a second)');
    });
  });

  describe("over the server's confirm_over_usd", () => {
    /** The private question a video over the threshold waits on: the interaction's reply, or a follow-up when the reply was deferred publicly. */
    function questionOf(run: InteractionHandle): Promise<Message> {
      const isQuestion = (message: Message) => (message.flags & EPHEMERAL) !== 0 && message.components.length > 0;
      return e2e.world.discord.waitFor(
        () => {
          const original = run.record.original;
          if (original && !original.deleted && isQuestion(original)) return original;
          return run.followUps.find((message) => !message.deleted && isQuestion(message));
        },
        15_000,
        'the confirmation question',
      );
    }

    function buttonIds(message: Message): string[] {
      return [...JSON.stringify(message.components).matchAll(/"custom_id":"([^"]+)"/g)].map((match) => match[1]!);
    }

    beforeAll(async () => {
      const set = await e2e.config('budget', { confirm_over_usd: 0.3 }).reply();
      expect(set.content).toContain('confirm videos over $0.30');
    }, 20_000);

    it("waits for its member's button with nothing sent, refuses another member, and submits on the press", async () => {
      const { discord, guild } = e2e.world;
      const before = submissions().length;
      const run = generate(guild.member, 'a long river journey', { duration: 8 });
      const question = await questionOf(run);
      expect(question.content).toMatch(/^\*\*Generate for about \$0\.40\?\*\*\n/);
      expect(question.content).toContain('This server asks before a video estimated over $0.30 is made.');
      const [confirm, cancel] = buttonIds(question);
      expect(confirm).toMatch(/^video:confirm:v[0-9a-z]+$/);
      expect(cancel).toBe(confirm!.replace('confirm', 'cancel'));
      expect(JSON.stringify(question.components)).toContain('"label":"Generate"');
      expect(submissions()).toHaveLength(before);

      // Another member's press (the question is private, but a press is a press) is refused privately.
      const other = await discord.clickButton({ user: guild.admin, message: question, customId: confirm! }).response();
      expect(other).toMatchObject({
        type: REPLY,
        data: {
          flags: EPHEMERAL,
          content: `This question is <@${guild.member.id}>'s: only the member who asked for the video may answer it.`,
        },
      });
      expect(submissions()).toHaveLength(before);

      // The member's press: the card everyone sees is the press's reply, and the video is made.
      const press = discord.clickButton({ user: guild.member, message: question, customId: confirm! });
      expect((await press.response()).type).toBe(DEFERRED_REPLY);
      const card = await press.waitForReply(isDone, 20_000);
      expect(card.flags & EPHEMERAL).toBe(0);
      expect(cardText(card)).toContain(`Requested by <@${guild.member.id}>`);
      expect(submissions()).toHaveLength(before + 1);
      expect(submissions().at(-1)?.body).toMatchObject({ prompt: 'a long river journey', duration: 8 });
      await discord.waitFor(() => (question.components.length === 0 ? true : undefined), 10_000, 'the question without its buttons');
      expect(question.content).toBe('**Generate** pressed: sent for about $0.40. Its card is in the channel.');

      // A second press finds the question answered, and sends nothing more.
      const again = await discord.clickButton({ user: guild.member, message: question, customId: confirm! }).response();
      expect(again.type).toBe(UPDATE);
      expect(String(again.data.content)).toContain('This question is no longer open');
      expect(submissions()).toHaveLength(before + 1);
    });

    it('asks about the whole job of variants, each under the threshold, and sends them all on the press', async () => {
      const { discord, guild } = e2e.world;
      const before = submissions().length;
      // One 4 s video is $0.20, under the $0.30 threshold; two are $0.40, over it.
      const run = generate(guild.member, 'two lighthouses at dusk', { duration: 4, variants: 2 });
      const question = await questionOf(run);
      expect(question.content).toMatch(/^\*\*Generate 2 variants for about \$0\.40\?\*\*\n/);
      expect(submissions()).toHaveLength(before);
      const press = discord.clickButton({ user: guild.member, message: question, customId: buttonIds(question)[0]! });
      const card = await press.waitForReply((reply) => galleryItems(reply).length === 2, 30_000);
      expect(submissions()).toHaveLength(before + 2);
      expect(cardText(card)).toContain('two lighthouses at dusk');
      await discord.waitFor(() => (question.components.length === 0 ? true : undefined), 10_000, 'the question without its buttons');
      expect(question.content).toBe('**Generate** pressed: sent for about $0.40. Its card is in the channel.');
    }, 40_000);

    it('Cancel sends nothing, and the question says so', async () => {
      const { discord, guild } = e2e.world;
      const before = submissions().length;
      const question = await questionOf(generate(guild.member, 'a very long parade', { duration: 10 }));
      expect(question.content).toMatch(/^\*\*Generate for about \$0\.50\?\*\*/);
      const [confirm, cancel] = buttonIds(question);
      const cancelled = await discord.clickButton({ user: guild.member, message: question, customId: cancel! }).response();
      expect(cancelled).toMatchObject({
        type: UPDATE,
        data: { content: 'Cancelled: nothing was sent to the gateway and nothing was spent.', components: [] },
      });
      const late = await discord.clickButton({ user: guild.member, message: question, customId: confirm! }).response();
      expect(String(late.data.content)).toContain('This question is no longer open');
      expect(submissions()).toHaveLength(before);
    });

    it("a form's submission (Extend under a video) and the Regenerate button wait for the member's button too", async () => {
      const { discord, guild } = e2e.world;
      const { video, ref } = await finishedVideo(guild.member, 'a sailing boat');
      const before = submissions().length;
      const form = await discord.clickButton({ user: guild.member, message: video, customId: `video:extend:${ref}` }).modal();
      const submit = discord.submitModal({
        ...e2e.where(),
        customId: form.customId,
        fields: { prompt: 'it sails on', duration: '6' },
      });
      expect((await questionOf(submit)).content).toMatch(/^\*\*Extend for about \$0\.48\?\*\*/);
      await e2e.config('budget', { confirm_over_usd: 0.05 }).reply();
      const regenerate = discord.clickButton({ user: guild.member, message: video, customId: `video:regenerate:${ref}` });
      const question = await questionOf(regenerate);
      expect(question.content).toMatch(/^\*\*Regenerate for about \$0\.10\?\*\*/);
      expect(JSON.stringify(question.components)).toContain('"label":"Regenerate"');
      expect(submissions()).toHaveLength(before);
      await e2e.config('budget', { confirm_over_usd: 0.3 }).reply();
    });
  });
});
