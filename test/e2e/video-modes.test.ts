import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JournalEntry } from '../../src/emulator/server.ts';
import type { Message } from 'discord-standin';
import { startWorld, type World } from '../support/world.ts';
import { cardText } from '../support/cards.ts';
import { PNG_HEADER, SAMPLE_MP4 } from '../support/media.ts';

// Every way to make a video, on both layers, each ending with the emulator's mp4 posted in the channel.

const picture = (name: string) => ({ filename: name, bytes: PNG_HEADER, contentType: 'image/png' });

describe.each(['compat', 'native'] as const)('on the %s layer', (layer) => {
  let world: World;
  const prefix = layer === 'compat' ? '/v1' : '/native/v1';

  beforeAll(async () => {
    world = await startWorld({ env: { GATEWAY_LAYER: layer } });
  }, 60_000);
  afterAll(() => world?.stop());

  /** Runs /video and waits for its mp4; returns the posted message and the submission the gateway saw. */
  async function makeVideo(
    subcommand: string,
    options: Record<string, string | number | { filename: string; bytes: Buffer; contentType: string }>,
  ): Promise<{ posted: Message; submission: JournalEntry }> {
    const { discord, emulator, guild } = world;
    const before = new Set(discord.messages(guild.textChannelId).map((message) => message.id));
    const run = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'video',
      subcommand,
      options,
    });
    const callback = await run.response();
    expect(callback.type, JSON.stringify(callback.data)).toBe(5);
    const posted = await discord.waitForMessage(
      guild.textChannelId,
      (message) => !before.has(message.id) && message.attachments.length > 0,
      20_000,
    );
    const submission = [...emulator.requests]
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
    expect(JSON.stringify(submission.body)).not.toContain(world.guild.member.id);
  });

  it('image to video, with the attachment sent as an image url', async () => {
    const { submission } = await makeVideo('generate', { prompt: 'it starts to rain', image: picture('first.png') });
    expect(submission.body).toMatchObject({ image: { url: expect.stringMatching(/\/first\.png\?ex=/) } });
  });

  it('reference images named in the prompt', async () => {
    const { submission } = await makeVideo('generate', {
      prompt: '<IMAGE_0> meets <IMAGE_1>',
      reference_image: picture('a.png'),
      reference_image_2: picture('b.png'),
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
      image: picture('bud.png'),
      last_frame: picture('bloom.png'),
    });
    expect(submission.body).toMatchObject({
      image: { url: expect.stringContaining('/bud.png') },
      last_frame: { url: expect.stringContaining('/bloom.png') },
    });
  });

  it('edits an .mp4 attachment and extends a finished task', async () => {
    const edited = await makeVideo('edit', {
      prompt: 'make it night',
      video: { filename: 'clip.mp4', bytes: SAMPLE_MP4, contentType: 'video/mp4' },
    });
    expect(edited.submission.path).toBe(`${prefix}/videos/edits`);
    expect(edited.submission.body).toMatchObject({ prompt: 'make it night', video: { url: expect.stringMatching(/\/clip\.mp4\?/) } });

    const taskRef = /video:extend:(v[0-9a-z]+)/.exec(JSON.stringify(edited.posted.components))?.[1];
    expect(taskRef).toBeDefined();
    const extended = await makeVideo('extend', { prompt: 'the sun rises', duration: 4, task: taskRef! });
    expect(extended.submission.path).toBe(`${prefix}/videos/extensions`);
    // The posted attachment, or the gateway's own link when the delivery is still being recorded.
    expect(extended.submission.body).toMatchObject({ duration: 4, video: { url: expect.stringMatching(/\.mp4(\?|$)/) } });
  });

  it('extends an .mp4 attachment and edits a finished task', async () => {
    const extended = await makeVideo('extend', {
      prompt: 'the tide comes in',
      duration: 3,
      video: { filename: 'beach.mp4', bytes: SAMPLE_MP4, contentType: 'video/mp4' },
    });
    expect(extended.submission.path).toBe(`${prefix}/videos/extensions`);
    expect(extended.submission.body).toMatchObject({
      prompt: 'the tide comes in',
      duration: 3,
      video: { url: expect.stringMatching(/\/beach\.mp4\?/) },
    });

    const taskRef = /video:extend:(v[0-9a-z]+)/.exec(JSON.stringify(extended.posted.components))![1]!;
    const edited = await makeVideo('edit', { prompt: 'in black and white', task: taskRef });
    expect(edited.submission.path).toBe(`${prefix}/videos/edits`);
    // The posted attachment, or the gateway's own link while the post is still being recorded.
    expect(edited.submission.body).toMatchObject({
      prompt: 'in black and white',
      video: { url: expect.toBeOneOf([extended.posted.attachments[0]!.url, expect.stringMatching(/\/files\/[0-9a-f]+\.mp4$/)]) },
    });
  });

  it('extends, edits and regenerates from the buttons under a posted video, after the bot restarted', async () => {
    const { discord, emulator, guild } = world;
    const { posted } = await makeVideo('generate', { prompt: 'a paper boat' });
    const taskRef = /video:extend:(v[0-9a-z]+)/.exec(JSON.stringify(posted.components))![1]!;
    // Buttons keep their state in their custom id and the store, not in the process that posted them.
    await world.bot.stop();
    await world.restartBot();

    for (const [action, modalFields, path] of [
      ['extend', { prompt: 'it sails away', duration: '3' }, 'extensions'],
      ['edit', { prompt: 'make it golden' }, 'edits'],
      ['regenerate', undefined, 'generations'],
    ] as const) {
      const before = new Set(discord.messages(guild.textChannelId).map((message) => message.id));
      const click = discord.clickButton({ user: guild.admin, message: posted, customId: `video:${action}:${taskRef}` });
      if (modalFields) {
        const modal = await click.modal();
        expect(modal.customId).toBe(`video:${action}-modal:${taskRef}`);
        const submit = discord.submitModal({
          user: guild.admin,
          guildId: guild.id,
          channelId: guild.textChannelId,
          customId: modal.customId,
          fields: modalFields,
        });
        expect((await submit.response()).type).toBe(5);
      } else {
        expect((await click.response()).type).toBe(5);
      }
      const result = await discord.waitForMessage(
        guild.textChannelId,
        (message) => !before.has(message.id) && message.attachments.length > 0,
        20_000,
      );
      expect(cardText(result)).toContain(`Requested by <@${guild.admin.id}>`);
      const submission = [...emulator.requests]
        .reverse()
        .find((entry) => entry.method === 'POST' && entry.path === `${prefix}/videos/${path}`);
      expect(submission?.status).toBe(200);
    }
  });
});
