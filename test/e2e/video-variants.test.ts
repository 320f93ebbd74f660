import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import type { InteractionHandle, Message, User } from 'discord-standin';
import type { JournalEntry } from '../../src/emulator/server.ts';
import { ENGLISH, resolveLocale, t, type Locale } from '../../src/i18n/index.ts';
import { cardButtons, cardEditProblems, cardText, galleryItems } from '../support/cards.ts';
import { isDone, LAYERS, png, videoRefOf, videoWorld } from '../support/video-e2e.ts';

// Variants (issue 27): `/video generate variants:N` is one job of N tasks and one card, their videos side
// by side in its gallery, each variant with its own numbered buttons; limits count each variant, and a
// restart in the middle still ends with one card and N videos, none posted twice.

/** How the line a Vary card says why it sent no first frame begins in `locale`, whatever the reason. */
function varyNotePrefix(locale: Locale): string {
  return t(locale, 'video.card.vary-note', { reason: '\u0000' }).split('\u0000')[0] ?? '';
}

describe.each(LAYERS)('variants on the %s layer', (layer) => {
  const e2e = videoWorld({ layer });
  const { prefix } = e2e;

  function generations(): JournalEntry[] {
    return e2e.world.emulator.requests.filter((entry) => entry.method === 'POST' && entry.path === `${prefix}/videos/generations`);
  }

  const generate = (user: User, options: Record<string, string | number>): InteractionHandle => e2e.video('generate', options, { user });
  const config = (options: Record<string, string | number>): Promise<Message> => e2e.config('limits', options).reply();
  const defaults = (options: Record<string, string | number>): Promise<Message> => e2e.config('defaults', options).reply();

  /** The task refs a card shows, in tile order. */
  function refsOn(card: Message): string[] {
    return [...cardText(card).matchAll(/\bref (v[0-9a-z]+)/g)].map((match) => match[1]!);
  }

  /** The cards of the channel whose text mentions `prompt`. */
  function cardsWith(prompt: string): Message[] {
    return e2e.world.discord.messages(e2e.world.guild.textChannelId).filter((message) => cardText(message).includes(prompt));
  }

  it('a 3-variant job makes three tasks and one card that ends with three videos; Extend 2 and Vary 2 start from variant 2', async () => {
    const { discord, guild } = e2e.world;
    const before = generations().length;
    const run = generate(guild.member, { prompt: 'three foxes in the snow', variants: 3 });
    const card = await run.waitForReply((reply) => galleryItems(reply).length === 3, 30_000);

    expect(generations().length - before).toBe(3);
    expect(cardsWith('three foxes in the snow')).toHaveLength(1);
    const refs = refsOn(card);
    expect(refs).toHaveLength(3);
    expect(new Set(refs).size).toBe(3);
    // Numbered 1..3 in submission order, each with its task id and its gateway task.
    for (const index of refs.keys()) expect(cardText(card)).toMatch(new RegExp(`\\*\\*${index + 1}\\*\\* · \\*\\*Done`));
    expect(cardText(card).match(/task `[^`]+`/g)).toHaveLength(3);
    expect(card.attachments.map((file) => file.filename).sort()).toEqual(refs.map((ref) => `video-${ref}.mp4`).sort());
    expect(galleryItems(card).sort()).toEqual(card.attachments.map((file) => file.url).sort());
    // Each variant's row of actions, then the card's one Delete in a row of its own.
    expect(cardButtons(card).map((button) => button.label)).toEqual([
      ...[1, 2, 3].flatMap((number) => [
        `Extend ${number}`,
        `Edit ${number}`,
        `Regenerate ${number}`,
        `Change and regenerate ${number}`,
        `Vary ${number}`,
      ]),
      'Delete',
    ]);
    // Each file went up once, whatever order the variants finished in.
    const uploads = discord.uploads.filter((upload) => upload.messageId === card.id).map((upload) => upload.attachment.filename);
    expect(uploads.sort()).toEqual(card.attachments.map((file) => file.filename).sort());
    expect(cardEditProblems(card)).toEqual([]);

    // Extend on variant 2 extends that task's video.
    const extend2 = cardButtons(card).find((button) => button.label === 'Extend 2')?.customId;
    expect(extend2).toBe(`video:extend:${refs[1]}`);
    const form = await discord.clickButton({ user: guild.member, message: card, customId: extend2! }).modal();
    const submit = discord.submitModal({
      ...e2e.where(),
      customId: form.customId,
      fields: { prompt: 'the second fox runs', duration: '3' },
    });
    const extended = await submit.waitForReply(isDone, 20_000);
    const extension = [...e2e.world.emulator.requests].reverse().find((entry) => entry.path === `${prefix}/videos/extensions`);
    const second = card.attachments.find((file) => file.filename === `video-${refs[1]}.mp4`);
    expect(extension?.body).toMatchObject({ prompt: 'the second fox runs', video: { url: second?.url } });
    expect(cardText(extended)).toContain('Video extension');
    expect(cardEditProblems(extended)).toEqual([]);

    // Vary on variant 2: its prompt again, with the first frame of its video (the emulator's 160x90 clip) as the image.
    const vary = discord.clickButton({ user: guild.member, message: card, customId: `video:vary:${refs[1]}` });
    const varied = await vary.waitForReply(isDone, 20_000);
    const sent = generations().at(-1)?.body;
    expect(sent).toMatchObject({ prompt: 'three foxes in the snow' });
    const dataUri = /^data:image\/png;base64,(.+)$/.exec(JSON.stringify(sent).match(/"image":\{"url":"([^"]+)"/)?.[1] ?? '');
    const frame = PNG.sync.read(Buffer.from(dataUri?.[1] ?? '', 'base64'));
    expect([frame.width, frame.height]).toEqual([160, 90]);
    expect(cardText(varied)).toContain('Image to video');
    expect(cardText(varied)).not.toContain(varyNotePrefix(ENGLISH));
    expect(cardEditProblems(varied)).toEqual([]);
  }, 60_000);

  it("Vary on a variant whose video cannot be decoded sends its request as it was, the new card saying why in the server's language", async () => {
    const { discord } = e2e.world;
    const serveur = discord.createGuild({ name: `serveur des chouettes ${layer}`, locale: 'fr' });
    const french = resolveLocale(undefined, 'fr', 'channel');
    // [[truncated]]: the gateway serves each task's file cut short, an mp4 header with nothing to decode.
    const prompt = 'deux chouettes au crépuscule [[truncated]]';
    const run = e2e.video('generate', { prompt, variants: 2 }, { guild: serveur });
    const card = await run.waitForReply((reply) => galleryItems(reply).length === 2, 30_000);
    const before = generations().length;
    const vary = discord.clickButton({ user: serveur.member, message: card, customId: `video:vary:${videoRefOf(card)}` });
    const varied = await vary.waitForReply((reply) => cardText(reply).includes(varyNotePrefix(french)), 20_000);
    const reason = t(french, 'video.card.vary-note.not-decoded');
    expect(cardText(varied)).toContain(`-# ${t(french, 'video.card.vary-note', { reason })}`);
    expect(generations().length - before).toBe(1);
    const sent = generations().at(-1)?.body;
    expect(sent).toMatchObject({ prompt });
    expect(sent).not.toHaveProperty('image');
    expect(cardText(varied)).toContain(t(french, 'video.card.mode', { mode: 'text_to_video' }));
    expect(cardEditProblems(varied)).toEqual([]);
    // The file was fetched (it starts as an mp4), and ffmpeg, run as a program of its own, found no frame in it.
    const logged = e2e.world.bot.logs.find((line) => line.msg.startsWith("could not decode a variant's first frame"));
    expect(String(logged?.reason)).toMatch(/^ffmpeg could not decode a frame/);
  }, 60_000);

  it('with a limit of 2 videos a day, sends two of three and the card says why not the third', async () => {
    const { discord, guild } = e2e.world;
    const member = discord.createUser({ guildId: guild.id, name: `limited-${layer}` });
    await config({ daily_per_user: 2 });
    try {
      const before = generations().length;
      const run = generate(member, { prompt: 'two of three owls', variants: 3 });
      const card = await run.waitForReply((reply) => galleryItems(reply).length === 2, 30_000);
      expect(generations().length - before).toBe(2);
      expect(cardText(card)).toMatch(/\*\*2 of 3 variants sent\.\*\* .*limit of 2 videos a day/);
      // Said on the card before any variant was sent: its first edit already says it.
      const first = card.edits.find((edit) => 'components' in edit.json);
      expect(JSON.stringify(first?.json.components)).toContain('2 of 3 variants sent');
      expect(refsOn(card)).toHaveLength(2);
      expect(cardEditProblems(card)).toEqual([]);
    } finally {
      await config({ daily_per_user: 0 });
    }
  }, 60_000);

  it("/config defaults variants:3 makes /video generate without variants a 3-variant job, and starts Animate image's select at 3", async () => {
    const { discord, guild } = e2e.world;
    await defaults({ variants: 3 });
    try {
      const before = generations().length;
      const card = await generate(guild.member, { prompt: 'three kites by default' }).waitForReply(
        (reply) => galleryItems(reply).length === 3,
        30_000,
      );
      expect(generations().length - before).toBe(3);
      expect(refsOn(card)).toHaveLength(3);
      expect(cardsWith('three kites by default')).toHaveLength(1);

      const picture = e2e.post(guild.admin, { files: [png('kite.png')] });
      const form = await discord.runMessageCommand({ user: guild.member, message: picture, command: 'Animate image' }).response();
      const chosen = JSON.stringify(form.data.components).match(/"value":"(\d)"[^}]*"default":true/)?.[1];
      expect(chosen).toBe('3');
    } finally {
      await defaults({ variants: 1 });
    }
  }, 60_000);

  it("a job over the server's upload limit shows each variant by its link", async () => {
    const { discord } = e2e.world;
    const small = discord.createGuild({ attachmentSizeLimit: 5000 });
    const run = e2e.video('generate', { prompt: 'two whales too big to post', variants: 2 }, { guild: small });
    const card = await run.waitForReply((reply) => (cardText(reply).match(/shown by its link/g) ?? []).length === 2, 30_000);
    expect(card.attachments).toHaveLength(0);
    expect(cardText(card)).toContain("over this server's upload limit");
    // The emulator's links are no public https address Discord could play in the gallery: each tile shows its
    // own link in its text (its row of five actions leaves no room for a link button).
    expect(galleryItems(card)).toEqual([]);
    const links = cardText(card).match(/http:\/\/127\.0\.0\.1:\d+\/files\/[0-9a-f]+\.mp4/g) ?? [];
    expect(new Set(links).size).toBe(2);
    // Each variant's row of actions, then the card's one Delete in a row of its own.
    expect(cardButtons(card).map((button) => button.label)).toEqual([
      ...[1, 2].flatMap((number) => [
        `Extend ${number}`,
        `Edit ${number}`,
        `Regenerate ${number}`,
        `Change and regenerate ${number}`,
        `Vary ${number}`,
      ]),
      'Delete',
    ]);
    expect(discord.requests.some((request) => request.status === 413)).toBe(false);
    expect(cardEditProblems(card)).toEqual([]);
  }, 60_000);

  it('a restart in the middle still ends with one card and three videos, none twice', async () => {
    const { discord, guild, emulator } = e2e.world;
    const usual = emulator.config.timing.generation_ms;
    emulator.config.timing.generation_ms = 2500;
    try {
      const run = generate(guild.member, { prompt: 'three herons at dawn', variants: 3 });
      // All three sent (each tile shows its gateway task), none finished yet.
      const started = await run.waitForReply((reply) => (cardText(reply).match(/task `[^`]+`/g) ?? []).length === 3, 20_000);
      await e2e.world.bot.kill();
      await e2e.world.restartBot();
      const card = await discord.waitFor(
        () => (galleryItems(started).length === 3 ? started : undefined),
        30_000,
        'the card with three videos after the restart',
      );
      expect(cardsWith('three herons at dawn')).toHaveLength(1);
      const uploads = discord.uploads.filter((upload) => upload.messageId === card.id).map((upload) => upload.attachment.filename);
      expect(uploads).toHaveLength(3);
      expect(new Set(uploads).size).toBe(3);
      expect(card.attachments).toHaveLength(3);
      expect(cardEditProblems(card)).toEqual([]);
    } finally {
      emulator.config.timing.generation_ms = usual;
    }
  }, 90_000);
});
