import { describe, expect, it } from 'vitest';
import type { Message } from 'discord-standin';
import { DEFERRED_REPLY, EPHEMERAL, IS_COMPONENTS_V2, isDone, videoRefOf, videoWorld } from '../support/video-e2e.ts';
import { cardButtons, cardEditProblems, cardText, galleryItems } from '../support/cards.ts';
import { ENGLISH, resolveLocale, t } from '../../src/i18n/index.ts';

const e2e = videoWorld();

/** Runs /video, checks it was deferred in time, and waits for the posted mp4 and the bot's record of it. */
async function makeVideo(subcommand: string, options: Record<string, string | number>): Promise<Message> {
  const before = e2e.messageIds();
  const run = e2e.video(subcommand, options);
  expect((await run.response()).type).toBe(DEFERRED_REPLY);
  const posted = await e2e.nextVideoPost(before);
  // The post shows up a moment before the bot has recorded it; a video used as a source must be recorded.
  await e2e.world.bot.waitForLog((line) => line.msg === 'video posted' && line.message === posted.id);
  return posted;
}

describe('the bot on the stand-ins', () => {
  it('registers /video with its subcommands', () => {
    const video = e2e.world.discord.commands().find((command) => command.name === 'video');
    const options = Array.isArray(video?.options) ? video.options : [];
    expect(options.map((option: { name?: unknown }) => option.name)).toEqual(['generate', 'edit', 'extend', 'status', 'list', 'usage']);
    // USER_INSTALLS is off by default: every command for server installs, in servers, and nothing for a member's own install.
    expect(e2e.world.discord.commands().map((command) => [command.integration_types, command.contexts])).toEqual(
      e2e.world.discord.commands().map(() => [[0], [0]]),
    );
  });

  it("answers a command within Discord's 3 s deadline", async () => {
    const run = e2e.video('list');
    const callback = await run.response();
    expect(callback.at - run.record.createdAt).toBeLessThan(3000);
    expect(callback.data.flags).toBe(EPHEMERAL);
    expect(callback.data.content).toContain('no videos');
  });

  it("generates a video and shows the emulator's mp4 in its status card, one Components V2 message edited in place", async () => {
    const { discord, guild } = e2e.world;
    const before = e2e.messageIds();
    const run = e2e.video('generate', { prompt: 'a lighthouse at dawn', duration: 4 });
    expect((await run.response()).type).toBe(DEFERRED_REPLY);
    const card = await run.waitForReply(isDone, 20_000);
    expect(card.flags & IS_COMPONENTS_V2).toBe(IS_COMPONENTS_V2);
    expect(card.content).toBe('');
    expect(card.embeds).toEqual([]);
    expect(cardText(card)).toContain('> a lighthouse at dawn');
    expect(cardText(card)).toContain('`svc-imagine-video-1.5` · 4 s · 480p · Text to video');
    expect(card.attachments).toHaveLength(1);
    expect(card.attachments[0]?.filename).toMatch(/\.mp4$/);
    expect(card.attachments[0]?.bytes.subarray(4, 8).toString('latin1')).toBe('ftyp');
    // Sent as attachment://<name>; Discord (and the stand-in) answer with the attachment's own url.
    expect(galleryItems(card)).toEqual([card.attachments[0]?.url]);
    expect(card.edits.at(-1)?.json).toMatchObject({ attachments: [{ filename: card.attachments[0]?.filename }] });
    expect(cardButtons(card).map((button) => button.label)).toEqual(['Extend', 'Edit', 'Regenerate', 'Change and regenerate', 'Delete']);
    expect(cardEditProblems(card)).toEqual([]);
    // The one message: nothing else was posted in the channel for it.
    expect(discord.messages(guild.textChannelId).filter((message) => !before.has(message.id))).toHaveLength(1);
  });

  it("draws the card in a French server's language from submission to delivery, and answers a German member in German", async () => {
    const { discord } = e2e.world;
    const serveur = discord.createGuild({ name: 'serveur français', locale: 'fr' });
    const french = resolveLocale(undefined, 'fr', 'channel');
    expect(french).toBe('fr');
    // The member's own Discord is in English: the card is the channel's, so it follows the server.
    const run = e2e.video('generate', { prompt: 'un phare à l’aube', duration: 4 }, { guild: serveur });
    expect((await run.response()).type).toBe(DEFERRED_REPLY);
    const done = t(french, 'video.card.status.done');
    const card = await run.waitForReply((message) => cardText(message).split('\n').includes(done), 20_000);
    const title = `### ${t(french, 'video.card.title', { operation: 'generate' })}`;
    const requestedBy = t(french, 'video.card.requested-by', { user: `<@${serveur.member.id}>` });
    const settings = ['`svc-imagine-video-1.5`', t(french, 'video.card.length', { seconds: 4 }), '480p'];
    const mode = t(french, 'video.card.mode', { mode: 'text_to_video' });
    // The card as it was first drawn, at submission.
    const first = cardText({ components: (card.edits[0]?.json.components as unknown[] | undefined) ?? [] });
    expect(first).toContain(`${title}\n${requestedBy}`);
    expect(first).toContain([...settings, mode].join(' · '));
    expect(first).toContain(t(french, 'video.card.estimate', { amount: '' }).trim());
    // Shown once the gateway took it, before its first answer about progress.
    expect(first).toContain(t(french, 'video.card.status.generating', { started: '' }).trim());
    // Delivered: the same card, its status, footer and buttons in French.
    expect(cardText(card)).toContain(`${title}\n${requestedBy}`);
    expect(cardText(card)).toContain(t(french, 'video.card.took', { duration: '' }).trim());
    expect(cardButtons(card).map((button) => button.label)).toEqual([
      ...(['extend', 'edit', 'regenerate', 'change'] as const).map((action) => t(french, 'video.button.label', { action })),
      t(french, 'video.button.delete'),
    ]);
    expect(card.attachments).toHaveLength(1);

    const german = resolveLocale('de', 'fr', 'member');
    expect(german).toBe('de');
    const germanMember = discord.createUser({ guildId: serveur.id, locale: 'de' });
    const refused = await e2e
      .video(
        'generate',
        { prompt: 'ein Leuchtturm', image: { filename: 'notizen.txt', bytes: Buffer.from('kein Bild'), contentType: 'text/plain' } },
        { user: germanMember, guild: serveur },
      )
      .response();
    expect(refused.data).toMatchObject({
      flags: EPHEMERAL,
      content: t(german, 'video.input.not-an-image', { option: 'image', file: 'notizen.txt', type: 'text/plain' }),
    });
    // A rule of the gateway's the options break: the option to fix, and the rule, in German.
    const fullHd = await discord
      .runCommand({
        user: germanMember,
        guildId: serveur.id,
        channelId: serveur.textChannelId,
        command: 'video',
        subcommand: 'generate',
        options: { prompt: 'ein Leuchtturm', model: 'svc-imagine-video', resolution: '1080p' },
      })
      .response();
    expect(fullHd.data).toMatchObject({
      flags: 64,
      content: t(german, 'video.refusal.invalid-option', {
        option: 'resolution',
        message: t(german, 'validation.full-hd', { latest: 'svc-imagine-video-1.5' }),
      }),
    });
  });

  it('answers an extension of a posted video at once, though Discord takes over 3 s to re-sign its url', async () => {
    const { discord, emulator } = e2e.world;
    const source = await makeVideo('generate', { prompt: 'a kite' });
    const taskRef = videoRefOf(source);
    discord.rateLimit({ method: 'GET', route: /^\/channels\/\d+\/messages\/\d+$/, times: 1, retryAfterSeconds: 4 });
    const extended = await makeVideo('extend', { prompt: 'it flies higher', task: taskRef });
    expect(discord.requests.some((request) => request.method === 'GET' && request.status === 429)).toBe(true);
    const submission = [...emulator.requests].reverse().find((entry) => entry.method === 'POST' && entry.path === '/v1/videos/extensions');
    // The posted file's url (re-signed by Discord where it does that).
    expect(submission?.body).toMatchObject({ video: { url: source.attachments[0]!.url } });
    expect(extended.attachments).toHaveLength(1);
  });

  it("keeps the status card up to date when interaction ids carry a clock 20 minutes off the bot's", async () => {
    const { discord } = e2e.world;
    discord.interactionIdClockSkewMs = -20 * 60_000;
    try {
      const run = e2e.video('generate', { prompt: 'skewed' });
      expect((await run.response()).type).toBe(DEFERRED_REPLY);
      await run.waitForReply(isDone, 20_000);
    } finally {
      discord.interactionIdClockSkewMs = 0;
    }
  });

  it('asks the gateway for the model list once a minute, not on every keystroke', async () => {
    const { discord, emulator } = e2e.world;
    const modelLists = () => emulator.requests.filter((entry) => entry.path === '/v1/models').length;
    const before = modelLists();
    for (const typed of ['s', 'svc', 'svc-imagine']) {
      const choices = await discord.autocomplete({
        ...e2e.where(),
        command: 'video',
        subcommand: 'generate',
        options: { prompt: 'x', model: typed },
        focused: 'model',
      });
      expect(choices.map((choice) => choice.value)).toContain('svc-imagine-video-1.5');
    }
    expect(modelLists() - before).toBe(1);
  });

  it('offers only finished videos as the task to edit or extend, and every task for /video status', async () => {
    const { discord } = e2e.world;
    const failed = e2e.video('generate', { prompt: 'x [[fail:internal_error]]' });
    await failed.waitForReply((message) => cardText(message).includes('**Failed**'), 20_000);
    const offered = (subcommand: string) =>
      discord.autocomplete({
        ...e2e.where(),
        command: 'video',
        subcommand,
        options: { task: '' },
        focused: 'task',
      });
    const forExtend = await offered('extend');
    expect(forExtend.length).toBeGreaterThan(0);
    // Each named by its state, in the member's words, and its prompt.
    const stateOf = (state: string) => t(ENGLISH, 'video.autocomplete.task', { state, prompt: '' });
    expect(forExtend.every((choice) => choice.name.startsWith(stateOf('succeeded')))).toBe(true);
    expect((await offered('status')).some((choice) => choice.name.startsWith(stateOf('failed')))).toBe(true);
    // The same member, their Discord switched to Japanese: the states in Japanese.
    const japanese = resolveLocale('ja', undefined, 'member');
    const inJapanese = await discord.autocomplete({
      ...e2e.where({ ...e2e.world.guild.member, locale: 'ja' }),
      command: 'video',
      subcommand: 'status',
      options: { task: '' },
      focused: 'task',
    });
    expect(
      inJapanese.some(
        (choice) => choice.name === t(japanese, 'video.autocomplete.task', { state: 'failed', prompt: 'x [[fail:internal_error]]' }),
      ),
    ).toBe(true);
  });
});
