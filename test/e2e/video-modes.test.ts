import { describe, expect, it } from 'vitest';
import type { JournalEntry } from '../../src/emulator/server.ts';
import type { Message } from 'discord-standin';
import { cardText } from '../support/cards.ts';
import { SAMPLE_MP4 } from '../support/media.ts';
import { DEFERRED_REPLY, LAYERS, mp4, png, type Upload, videoRefOf, videoWorld } from '../support/video-e2e.ts';

// Every way to make a video, on both layers, each ending with the emulator's mp4 posted in the channel.

describe.each(LAYERS)('on the %s layer', (layer) => {
  const e2e = videoWorld({ layer });
  const { prefix } = e2e;

  /** Runs /video and waits for its mp4; returns the posted message and the submission the gateway saw. */
  async function makeVideo(
    subcommand: string,
    options: Record<string, string | number | Upload>,
  ): Promise<{ posted: Message; submission: JournalEntry }> {
    const before = e2e.messageIds();
    const run = e2e.video(subcommand, options);
    const callback = await run.response();
    expect(callback.type, JSON.stringify(callback.data)).toBe(DEFERRED_REPLY);
    const posted = await e2e.nextVideoPost(before);
    const submission = [...e2e.world.emulator.requests]
      .reverse()
      .find((entry) => entry.method === 'POST' && entry.status === 200 && entry.path.startsWith(prefix))!;
    expect(posted.attachments[0]?.bytes).toEqual(SAMPLE_MP4);
    return { posted, submission };
  }

  it('text to video', async () => {
    const { submission } = await makeVideo('generate', { prompt: 'a red kite over dunes', duration: 3, aspect_ratio: '9:16' });
    expect(submission.path).toBe(`${prefix}/videos/generations`);
    expect(submission.body).toMatchObject({
      model: 'svc-imagine-video-1.5',
      prompt: 'a red kite over dunes',
      duration: 3,
      aspect_ratio: '9:16',
      user: expect.any(String),
    });
    expect(JSON.stringify(submission.body)).not.toContain(e2e.world.guild.member.id);
  });

  it('image to video, with the attachment sent as an image url', async () => {
    const { submission } = await makeVideo('generate', { prompt: 'it starts to rain', image: png('first.png') });
    expect(submission.body).toMatchObject({ image: { url: expect.stringMatching(/\/first\.png\?ex=/) } });
  });

  it('reference images named in the prompt', async () => {
    const { submission } = await makeVideo('generate', {
      prompt: '<IMAGE_0> meets <IMAGE_1>',
      reference_image: png('a.png'),
      reference_image_2: png('b.png'),
    });
    expect(submission.body).toMatchObject({
      reference_images: [{ url: expect.stringContaining('/a.png') }, { url: expect.stringContaining('/b.png') }],
    });
  });

  it('built-in voices and a reference audio', async () => {
    const audio = { filename: 'me.mp3', bytes: Buffer.from('ID3'), contentType: 'audio/mpeg' };
    const { submission } = await makeVideo('generate', { prompt: '<AUDIO_0> says hello', voice: 'eve, leo', reference_audio: audio });
    expect(submission.body).toMatchObject({
      reference_audios: [{ voice_id: 'eve' }, { voice_id: 'leo' }, { url: expect.stringContaining('/me.mp3') }],
    });
  });

  it('first and last frame', async () => {
    const { submission } = await makeVideo('generate', {
      prompt: 'a flower opens',
      image: png('bud.png'),
      last_frame: png('bloom.png'),
    });
    expect(submission.body).toMatchObject({
      image: { url: expect.stringContaining('/bud.png') },
      last_frame: { url: expect.stringContaining('/bloom.png') },
    });
  });

  it('edits an .mp4 attachment and extends a finished task', async () => {
    const edited = await makeVideo('edit', {
      prompt: 'make it night',
      video: mp4('clip.mp4'),
    });
    expect(edited.submission.path).toBe(`${prefix}/videos/edits`);
    expect(edited.submission.body).toMatchObject({ prompt: 'make it night', video: { url: expect.stringMatching(/\/clip\.mp4\?/) } });

    const taskRef = videoRefOf(edited.posted);
    const extended = await makeVideo('extend', { prompt: 'the sun rises', duration: 4, task: taskRef });
    expect(extended.submission.path).toBe(`${prefix}/videos/extensions`);
    // The posted attachment, or the gateway's own link when the delivery is still being recorded.
    expect(extended.submission.body).toMatchObject({ duration: 4, video: { url: expect.stringMatching(/\.mp4(\?|$)/) } });
  });

  it('extends an .mp4 attachment and edits a finished task', async () => {
    const extended = await makeVideo('extend', {
      prompt: 'the tide comes in',
      duration: 3,
      video: mp4('beach.mp4'),
    });
    expect(extended.submission.path).toBe(`${prefix}/videos/extensions`);
    expect(extended.submission.body).toMatchObject({
      prompt: 'the tide comes in',
      duration: 3,
      video: { url: expect.stringMatching(/\/beach\.mp4\?/) },
    });

    const taskRef = videoRefOf(extended.posted);
    const edited = await makeVideo('edit', { prompt: 'in black and white', task: taskRef });
    expect(edited.submission.path).toBe(`${prefix}/videos/edits`);
    // The posted attachment, or the gateway's own link while the post is still being recorded.
    expect(edited.submission.body).toMatchObject({
      prompt: 'in black and white',
      video: { url: expect.toBeOneOf([extended.posted.attachments[0]!.url, expect.stringMatching(/\/files\/[0-9a-f]+\.mp4$/)]) },
    });
  });

  it('extends, edits and regenerates from the buttons under a posted video, after the bot restarted', async () => {
    const { discord, emulator, guild, bot } = e2e.world;
    const { posted } = await makeVideo('generate', { prompt: 'a paper boat' });
    const taskRef = videoRefOf(posted);
    // Buttons keep their state in their custom id and the store, not in the process that posted them.
    await bot.stop();
    await e2e.world.restartBot();

    for (const [action, modalFields, path] of [
      ['extend', { prompt: 'it sails away', duration: '3' }, 'extensions'],
      ['edit', { prompt: 'make it golden' }, 'edits'],
      ['regenerate', undefined, 'generations'],
    ] as const) {
      const before = e2e.messageIds();
      const click = discord.clickButton({ user: guild.admin, message: posted, customId: `video:${action}:${taskRef}` });
      if (modalFields) {
        const modal = await click.modal();
        expect(modal.customId).toBe(`video:${action}-modal:${taskRef}`);
        const submit = discord.submitModal({ ...e2e.where(guild.admin), customId: modal.customId, fields: modalFields });
        expect((await submit.response()).type).toBe(DEFERRED_REPLY);
      } else {
        expect((await click.response()).type).toBe(DEFERRED_REPLY);
      }
      const result = await e2e.nextVideoPost(before);
      expect(cardText(result)).toContain(`Requested by <@${guild.admin.id}>`);
      const submission = [...emulator.requests]
        .reverse()
        .find((entry) => entry.method === 'POST' && entry.path === `${prefix}/videos/${path}`);
      expect(submission?.status).toBe(200);
    }
  });
});
