import { describe, expect, it } from 'vitest';
import type { Message } from 'discord-standin';
import { DEFERRED_REPLY, EPHEMERAL, isDone, LAYERS, mp4, png, videoWorld } from '../support/video-e2e.ts';
import { cardEditProblems, cardText, galleryItems } from '../support/cards.ts';

// Forms that take files (issue 27), on both layers: /video edit and extend without a source take the
// .mp4 as an upload, Animate image takes an optional last frame, and Change and regenerate sends a
// finished video's request again with what the member changed in its form.

describe.each(LAYERS)('on the %s layer', (layer) => {
  const e2e = videoWorld({ layer });
  const { prefix, where, isSubmission, submissions } = e2e;

  /** Submits a form and waits for the gateway's submission and the finished card. */
  async function submitted(options: Parameters<typeof e2e.world.discord.submitModal>[0]) {
    const earlier = new Set(submissions());
    const submit = e2e.world.discord.submitModal(options);
    const answer = await submit.response();
    expect(answer.type, JSON.stringify(answer.data)).toBe(DEFERRED_REPLY);
    const submission = await e2e.world.emulator.waitForRequest((entry) => isSubmission(entry) && !earlier.has(entry));
    const card = await submit.waitForReply(isDone, 20_000);
    return { submission, card };
  }

  async function generated(options: Record<string, string | number>): Promise<Message> {
    return e2e.video('generate', options).waitForReply(isDone, 20_000);
  }

  it('/video extend without a source opens a form that takes the .mp4, and extends the uploaded video', async () => {
    const form = await e2e.video('extend', { prompt: 'the tide comes in' }).modal();
    expect(form).toEqual({ customId: 'video:extend-upload', inputs: ['prompt', 'duration', 'video'] });
    const { submission, card } = await submitted({
      ...where(),
      customId: form.customId,
      fields: { prompt: 'the tide comes in', duration: '3' },
      files: { video: [mp4('beach.mp4')] },
    });
    expect(submission.path).toBe(`${prefix}/videos/extensions`);
    expect(submission.body).toMatchObject({
      prompt: 'the tide comes in',
      duration: 3,
      video: { url: expect.stringMatching(/\/beach\.mp4\?ex=/) },
    });
    expect(cardText(card)).toContain('Video extension');
  });

  it('refuses an uploaded file that is not an .mp4 privately, naming the field, and sends nothing', async () => {
    const { discord } = e2e.world;
    const form = await e2e.video('edit', { prompt: 'make it snow' }).modal();
    expect(form.inputs).toEqual(['prompt', 'video']);
    const before = submissions().length;
    const answer = await discord
      .submitModal({ ...where(), customId: form.customId, fields: { prompt: 'make it snow' }, files: { video: [png('garden.png')] } })
      .response();
    expect(answer.data).toMatchObject({ flags: EPHEMERAL, content: '`video` must be an .mp4 file (got garden.png).' });
    expect(submissions()).toHaveLength(before);
  });

  it('Animate image sends the uploaded last frame as last_frame', async () => {
    const { discord, guild } = e2e.world;
    const picture = e2e.post(guild.admin, { files: [png('dawn.png')] });
    const form = await discord.runMessageCommand({ user: guild.member, message: picture, command: 'Animate image' }).modal();
    expect(form.inputs).toEqual(['prompt', 'duration', 'variants', 'last_frame']);
    const { submission, card } = await submitted({
      ...where(),
      customId: form.customId,
      fields: { prompt: 'the sun rises', duration: '' },
      selects: { variants: ['1'] },
      files: { last_frame: [png('noon.png')] },
    });
    expect(submission.body).toMatchObject({
      image: { url: picture.attachments[0]!.url },
      last_frame: { url: expect.stringMatching(/\/noon\.png\?ex=/) },
    });
    expect(cardText(card)).toContain('First/last frame');
  });

  it("Animate image's variants start at the server's default, and 2 make one card with two videos", async () => {
    const { discord, guild } = e2e.world;
    const picture = e2e.post(guild.admin, { files: [png('pond.png')] });
    const opened = await discord.runMessageCommand({ user: guild.member, message: picture, command: 'Animate image' }).response();
    const variants = JSON.stringify(opened.data.components).match(/"custom_id":"variants".*?"options":(\[[^\]]*\])/)?.[1];
    expect(JSON.parse(variants ?? '[]')).toEqual(
      ['1', '2', '3', '4'].map((value) => expect.objectContaining({ value, default: value === '1' }) as unknown),
    );
    const earlier = new Set(submissions());
    const submit = discord.submitModal({
      ...where(),
      customId: String(opened.data.custom_id),
      fields: { prompt: 'ripples spread', duration: '' },
      selects: { variants: ['2'] },
    });
    const card = await submit.waitForReply((reply) => galleryItems(reply).length === 2, 30_000);
    const sent = submissions().filter((entry) => !earlier.has(entry));
    expect(sent.map((entry) => entry.path)).toEqual([`${prefix}/videos/generations`, `${prefix}/videos/generations`]);
    for (const entry of sent) expect(entry.body).toMatchObject({ prompt: 'ripples spread', image: { url: picture.attachments[0]!.url } });
    expect(discord.messages(guild.textChannelId).filter((message) => cardText(message).includes('ripples spread'))).toEqual([card]);
    expect(card.attachments).toHaveLength(2);
    expect(cardEditProblems(card)).toEqual([]);
  }, 40_000);

  it('Change and regenerate sends the changed prompt with the same model, length, resolution and ratio', async () => {
    const { discord } = e2e.world;
    const original = await generated({ prompt: 'a red kite over dunes', duration: 3, resolution: '720p', aspect_ratio: '9:16' });
    const first = [...submissions()].reverse().find((entry) => entry.path === `${prefix}/videos/generations`)!;
    const ref = /video:change:(v[0-9a-z]+)/.exec(JSON.stringify(original.components))![1]!;
    const form = await discord.clickButton({ user: e2e.world.guild.member, message: original, customId: `video:change:${ref}` }).modal();
    expect(form).toEqual({ customId: `video:change-modal:${ref}`, inputs: ['prompt', 'duration', 'resolution', 'aspect_ratio', 'image'] });
    // A member's client sends each select's chosen option as the form showed it.
    const { submission } = await submitted({
      ...where(),
      customId: form.customId,
      fields: { prompt: 'a blue kite over dunes' },
      selects: { duration: ['3'], resolution: ['720p'], aspect_ratio: ['9:16'] },
    });
    expect(submission.path).toBe(`${prefix}/videos/generations`);
    const { prompt: _oldPrompt, user: _oldUser, ...rest } = first.body as Record<string, unknown>;
    expect(submission.body).toEqual({ ...rest, prompt: 'a blue kite over dunes', user: expect.any(String) });
    expect(submission.body).toMatchObject({ model: 'svc-imagine-video-1.5', duration: 3, resolution: '720p', aspect_ratio: '9:16' });
  });

  it("refuses a last frame the server's model cannot take, naming the field, and sends nothing", async () => {
    const { discord, guild } = e2e.world;
    const setModel = (model: string) => e2e.config('defaults', { model }).reply();
    await setModel('svc-imagine-video');
    try {
      const picture = e2e.post(guild.admin, { files: [png('dusk.png')] });
      const form = await discord.runMessageCommand({ user: guild.member, message: picture, command: 'Animate image' }).modal();
      const before = submissions().length;
      const answer = await discord
        .submitModal({
          ...where(),
          customId: form.customId,
          fields: { prompt: '', duration: '' },
          selects: { variants: ['1'] },
          files: { last_frame: [png('night.png')] },
        })
        .response();
      expect(answer.data).toMatchObject({
        flags: EPHEMERAL,
        content: '`last_frame`: last_frame needs svc-imagine-video-1.5; svc-imagine-video does not support it.',
      });
      expect(submissions()).toHaveLength(before);
    } finally {
      await setModel('svc-imagine-video-1.5');
    }
  });
});
