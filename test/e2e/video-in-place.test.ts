import { beforeAll, describe, expect, it } from 'vitest';
import type { InteractionHandle, Message, User } from 'discord-standin';
import { SAMPLE_MP4 } from '../support/media.ts';
import { cardEditProblems, cardText, galleryItems } from '../support/cards.ts';
import { DEFERRED_REPLY, EPHEMERAL, isDone, LAYERS, mp4, png, videoRefOf, videoWorld } from '../support/video-e2e.ts';

// Video where people already are (issue 19), on both layers: the message commands of a message's Apps
// menu (Animate image, Extend video, Edit video) on members' messages, the cost on the status card, and
// who may press the buttons under a video.

describe.each(LAYERS)('on the %s layer', (layer) => {
  const e2e = videoWorld({ layer });
  const { prefix, isSubmission, submissions, post } = e2e;

  /**
   * Picks `command` on `message` as `user`, fills its form with `fields`, and waits for the video: the
   * form's inputs, the submission the gateway took, the card and the posted video.
   */
  async function onMessage(command: string, message: Message, fields: Record<string, string>, user = e2e.world.guild.member) {
    const { discord, emulator } = e2e.world;
    const before = e2e.messageIds();
    const earlier = new Set(submissions());
    const form = await discord.runMessageCommand({ user, message, command }).modal();
    // A member's client sends a select's chosen option as the form showed it (Animate image's variants: the server's one).
    const selects: Record<string, string[]> = form.inputs.includes('variants') ? { variants: ['1'] } : {};
    const submit = discord.submitModal({ ...e2e.where(user), customId: form.customId, fields, selects });
    expect((await submit.response()).type).toBe(DEFERRED_REPLY);
    const posted = await e2e.nextVideoPost(before);
    const submission = await emulator.waitForRequest((entry) => isSubmission(entry) && !earlier.has(entry));
    const card = await submit.waitForReply(isDone);
    // The card is where the video is: one message.
    expect(posted.id).toBe(card.id);
    expect(cardEditProblems(card)).toEqual([]);
    return { inputs: form.inputs, submission, card, posted };
  }

  /** Picks `command` on `message` and expects a private answer and nothing sent to the gateway. */
  async function refusedOn(command: string, message: Message, user = e2e.world.guild.member): Promise<string> {
    const submitted = submissions().length;
    const run: InteractionHandle = e2e.world.discord.runMessageCommand({ user, message, command });
    const answer = await run.response();
    expect(answer.data.flags).toBe(EPHEMERAL);
    expect(submissions()).toHaveLength(submitted);
    return String(answer.data.content);
  }

  describe('the message commands', () => {
    it("Animate image makes a video with a member's attached picture as its first frame", async () => {
      const { guild } = e2e.world;
      const picture = post(guild.admin, {
        content: 'sunset from my window',
        files: [png('sunset.png')],
      });
      const { inputs, submission, card, posted } = await onMessage('Animate image', picture, { prompt: '', duration: '3' });
      // The last frame is optional: left out, none is sent.
      expect(inputs).toEqual(['prompt', 'duration', 'variants', 'last_frame']);
      expect(submission.path).toBe(`${prefix}/videos/generations`);
      expect(submission.body).toEqual({
        model: 'svc-imagine-video-1.5',
        duration: 3,
        image: { url: picture.attachments[0]!.url },
        user: expect.any(String),
      });
      expect(cardText(card)).toContain('Image to video');
      expect(cardText(card)).toContain(`Requested by <@${guild.member.id}>`);
      expect(posted.attachments[0]?.bytes).toEqual(SAMPLE_MP4);
      // Sent as attachment://<name>; Discord (and the stand-in) answer with the attachment's own url.
      expect(galleryItems(posted)).toEqual([posted.attachments[0]?.url]);
    });

    it("Animate image takes the picture of a link's image embed, at Discord's copy", async () => {
      const proxied = 'https://images-ext-1.discordapp.net/external/abc/https/example.com/fox.gif';
      const link = post(e2e.world.guild.admin, {
        content: 'https://example.com/fox.gif',
        embeds: [
          { type: 'image', url: 'https://example.com/fox.gif', thumbnail: { url: 'https://example.com/fox.gif', proxy_url: proxied } },
        ],
      });
      const { submission } = await onMessage('Animate image', link, { prompt: 'the fox runs off', duration: '' });
      expect(submission.body).toMatchObject({ prompt: 'the fox runs off', image: { url: proxied } });
    });

    it("Extend video extends a member's .mp4 with the prompt and the seconds to add", async () => {
      const clip = post(e2e.world.guild.admin, { files: [mp4('beach.mp4')] });
      const { inputs, submission, card } = await onMessage('Extend video', clip, { prompt: 'the tide comes in', duration: '3' });
      expect(inputs).toEqual(['prompt', 'duration']);
      expect(submission.path).toBe(`${prefix}/videos/extensions`);
      expect(submission.body).toMatchObject({ prompt: 'the tide comes in', duration: 3, video: { url: clip.attachments[0]!.url } });
      expect(cardText(card)).toContain('Video extension');
    });

    it("Edit video edits a member's .mp4 as the prompt says", async () => {
      const clip = post(e2e.world.guild.admin, {
        content: 'our garden',
        files: [{ filename: 'notes.txt', bytes: Buffer.from('hi'), contentType: 'text/plain' }, mp4('garden.mp4')],
      });
      const { inputs, submission, card } = await onMessage('Edit video', clip, { prompt: 'make it snow' });
      expect(inputs).toEqual(['prompt']);
      expect(submission.path).toBe(`${prefix}/videos/edits`);
      expect(submission.body).toMatchObject({ prompt: 'make it snow', video: { url: clip.attachments[1]!.url } });
      expect(cardText(card)).toContain('Video edit');
    });

    it('on a message without what the command needs, answers privately saying what it needs, and submits nothing', async () => {
      const { guild } = e2e.world;
      const words = post(guild.admin, { content: 'just words' });
      const picture = post(guild.admin, { files: [png('cat.png')] });
      expect(await refusedOn('Animate image', words)).toBe(
        '**Animate image** works on a message with a picture (PNG, JPEG, WebP or GIF, attached or embedded); this message has none.',
      );
      expect(await refusedOn('Extend video', picture)).toBe(
        '**Extend video** works on a message with an .mp4 attachment; this message has none (it has cat.png).',
      );
      expect(await refusedOn('Edit video', words)).toBe(
        '**Edit video** works on a message with an .mp4 attachment; this message has none.',
      );
    });

    it('takes a form only from the member it was opened for, and says so when it is no longer open', async () => {
      const { discord, guild } = e2e.world;
      const picture = post(guild.admin, { files: [png('owl.png')] });
      const form = await discord.runMessageCommand({ user: guild.member, message: picture, command: 'Animate image' }).modal();
      const submitted = submissions().length;
      for (const [user, customId] of [
        [guild.admin, form.customId],
        [guild.member, 'Animate image:1234567890123456789'],
      ] as const) {
        const answer = await discord
          .submitModal({
            ...e2e.where(user),
            customId,
            fields: { prompt: 'it flies', duration: '' },
            selects: { variants: ['1'] },
          })
          .response();
        expect(answer.data).toMatchObject({
          flags: EPHEMERAL,
          content: 'This form is no longer open. Pick **Animate image** on the message again.',
        });
      }
      expect(submissions()).toHaveLength(submitted);
    });
  });

  /** Runs `/video generate` as `user` and waits for its card to say the video was posted. */
  async function generated(user: User, prompt: string, options: Record<string, number> = {}): Promise<Message> {
    const run = e2e.video('generate', { prompt, ...options }, { user });
    return run.waitForReply(isDone, 20_000);
  }

  function costOn(card: Message): string | undefined {
    return /^Cost: (.*)$/m.exec(cardText(card))?.[1];
  }

  describe('the cost on the card', () => {
    it("shows what a finished task cost and its member's total today on the server", async () => {
      const spender = e2e.world.discord.createUser({ guildId: e2e.world.guild.id, name: 'spender' });
      // The emulator's price at 480p: $0.05 a second.
      expect(costOn(await generated(spender, 'a lighthouse at dusk', { duration: 4 }))).toBe('$0.20 · your total today $0.20');
      expect(costOn(await generated(spender, 'a harbour at night', { duration: 2 }))).toBe('$0.10 · your total today $0.30');
    });

    it('shows the estimate, marked as estimated, when the gateway reported no cost: never $0.00', async () => {
      const card = await generated(e2e.world.guild.member, 'a quiet field [[no-cost]]');
      // The gateway's default length, 8 s at 480p.
      expect(costOn(card)).toBe('about $0.40 (estimated)');
      expect(cardText(card)).not.toContain('$0.00');
    });
  });

  describe('the buttons under a video', () => {
    // Member A is the server's admin, member B a plain member; the video is A's.
    let video: Message;
    let ref: string;
    beforeAll(async () => {
      const { guild } = e2e.world;
      const run = e2e.video('generate', { prompt: 'a paper boat' }, { user: guild.admin });
      // The card holds the video and its buttons.
      video = await run.waitForReply(isDone, 20_000);
      ref = videoRefOf(video);
    }, 30_000);

    it("by default work for any member: B's Extend on A's video makes B's task", async () => {
      const { discord, guild } = e2e.world;
      const before = e2e.messageIds();
      const form = await discord.clickButton({ user: guild.member, message: video, customId: `video:extend:${ref}` }).modal();
      const submit = discord.submitModal({
        ...e2e.where(),
        customId: form.customId,
        fields: { prompt: 'it sails away', duration: '3' },
      });
      const card = await submit.waitForReply(isDone, 20_000);
      expect(cardText(card)).toContain(`Requested by <@${guild.member.id}>`);
      const extended = await e2e.nextVideoPost(before);
      expect(extended.id).toBe(card.id);
      const submission = [...submissions()].reverse().find((entry) => entry.path === `${prefix}/videos/extensions`);
      expect(submission?.body).toMatchObject({ prompt: 'it sails away', duration: 3 });
    });

    it('with buttons: owner, refuse B privately saying whose video it is, and submit nothing; A may still press them', async () => {
      const { discord, guild } = e2e.world;
      const set = await e2e.config('defaults', { buttons: 'owner' }).reply();
      expect(set.content).toContain(
        '**Buttons under a video** (Extend, Edit, Regenerate): only the member who made the video may press them',
      );
      const submitted = submissions().length;
      const refusal = `This is <@${guild.admin.id}>'s video: on this server, only the member who made a video may press its buttons.`;
      for (const action of ['extend', 'edit', 'regenerate', 'change']) {
        const answer = await discord.clickButton({ user: guild.member, message: video, customId: `video:${action}:${ref}` }).response();
        expect(answer, action).toMatchObject({ type: 4, data: { flags: EPHEMERAL, content: refusal } });
      }
      // A form opened before the change is checked again when it is submitted.
      const late = await discord
        .submitModal({
          ...e2e.where(),
          customId: `video:edit-modal:${ref}`,
          fields: { prompt: 'make it golden' },
        })
        .response();
      expect(late.data).toMatchObject({ flags: EPHEMERAL, content: refusal });
      expect(submissions()).toHaveLength(submitted);
      const own = await discord.clickButton({ user: guild.admin, message: video, customId: `video:edit:${ref}` }).modal();
      expect(own.customId).toBe(`video:edit-modal:${ref}`);
    });
  });
});
