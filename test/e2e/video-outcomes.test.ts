import { describe, expect, it } from 'vitest';
import type { InteractionHandle, Message, TestGuild } from 'discord-standin';
import { cardButtons, cardEditProblems, cardGatewayId, cardText, componentsV2Problems, galleryItems } from '../support/cards.ts';
import { EPHEMERAL, IS_COMPONENTS_V2, LAYERS, videoWorld } from '../support/video-e2e.ts';

// What users are told when a video does not simply succeed, and how the bot copes with limits, on both
// layers (one emulator, stand-in and bot per layer, shared by every test of that layer).

describe.each(LAYERS)('on the %s layer', (layer) => {
  const e2e = videoWorld({
    layer,
    emulator: { timing: { generation_ms: 300, task_timeout_ms: 1500 } },
    standIn: { tokenLifetimeMs: 1200 },
  });

  function generate(prompt: string, options: Record<string, string | number> = {}, guild?: TestGuild): InteractionHandle {
    return e2e.video('generate', { prompt, ...options }, { guild });
  }

  function details(message: Message | undefined): string {
    return cardText(message);
  }

  /** The gateway's task id as the card shows it (`task_…` on the compatibility layer, `req_…` on the native one). */
  function gatewayIdOn(card: Message): string | undefined {
    return cardGatewayId(card);
  }

  async function finalCard(run: InteractionHandle, words: string): Promise<string> {
    await e2e.world.discord.waitFor(
      () => (run.record.original && details(run.record.original).includes(words) ? true : undefined),
      15_000,
      `a card saying "${words}"`,
    );
    return details(run.record.original);
  }

  describe('asynchronous outcomes, told on the status card', () => {
    it('explains a failure in plain words, with the refund and the request id', async () => {
      const run = generate('x [[fail:invalid_argument]]');
      const card = await finalCard(run, 'Failed');
      expect(card).toContain('could not make this video');
      expect(card).toContain('refunded automatically');
      expect(card).toMatch(/request id `req_[0-9a-f]+`/);
    });

    it.each([
      ['failed_precondition', 'The model cannot do this'],
      ['service_unavailable', 'overloaded'],
      ['internal_error', 'internal error'],
      ['permission_denied', 'not allowed to do this operation'],
    ])('explains %s', async (code, words) => {
      const card = await finalCard(generate(`x [[fail:${code}]]`), 'Failed');
      expect(card).toContain(words);
    });

    it('says the provider withheld a video it returned with respect_moderation false, and posts nothing', async () => {
      const before = e2e.world.discord.messages(e2e.world.guild.textChannelId).filter((message) => message.attachments.length > 0).length;
      const run = generate('x [[moderate]]');
      const card = await finalCard(run, '**Withheld by the provider**');
      expect(card).toContain("The provider's content moderation withheld the finished video, so it is not posted.");
      expect(galleryItems(run.record.original)).toEqual([]);
      expect(cardButtons(run.record.original).filter((button) => button.url !== undefined)).toEqual([]);
      expect(e2e.world.discord.messages(e2e.world.guild.textChannelId).filter((message) => message.attachments.length > 0)).toHaveLength(
        before,
      );
    });

    it("says plainly when the provider's moderation refused the prompt, and that nothing was charged", async () => {
      const { emulator } = e2e.world;
      const quota = emulator.quotaUsd('emulator-key');
      const run = generate(`a refused one [[fail:imagine:content-moderated]] ${Math.random()}`);
      const card = await finalCard(run, "**Refused by the provider's moderation**");
      expect(card).toContain("The provider's content moderation refused this prompt. Nothing was charged.");
      expect(card).not.toContain('**Failed**');
      expect(card).toMatch(/request id `req_[0-9a-f]+`/);
      expect(emulator.quotaUsd('emulator-key')).toBeCloseTo(quota, 6);
    });

    it("tells the provider's refusal of a prompt plainly on both layers: its code, or invalid_argument saying moderation", async () => {
      const run = generate(`a prompt moderation refuses [[moderate:prompt]] ${Math.random()}`);
      const card = await finalCard(run, 'refused this prompt');
      expect(card).toContain("**Refused by the provider's moderation**");
      expect(card).toContain('Nothing was charged.');
      expect(card).not.toContain('**Failed**');
    });

    it('says when the gateway timed a task out, and that the quota was refunded', async () => {
      const card = await finalCard(generate('x [[hang]]'), 'Failed');
      expect(card).toContain('did not finish this video in time');
      expect(card).toContain('refunded automatically');
    });

    it('keeps the card up to date after the interaction token expired, as a channel message', async () => {
      const run = generate('a slow one', { duration: 10 });
      await finalCard(run, '**Done**');
      expect(galleryItems(run.record.original)).toHaveLength(1);
      expect(
        e2e.world.discord.requests.some(
          (request) => request.method === 'PATCH' && /^\/channels\/\d+\/messages\/\d+$/.test(request.path) && request.status === 200,
        ),
      ).toBe(true);
    });
  });

  describe('submissions the gateway refuses', () => {
    it.each([
      ['[[http:429:insufficient_quota]]', 'quota is used up'],
      ['[[http:403:permission_denied]]', 'not allowed to use `svc-imagine-video-1.5`'],
      ['[[http:400:invalid_request_error]]', 'The gateway rejected the request'],
    ])('%s is told plainly and privately, sent once, and nothing is charged', async (trigger, words) => {
      const { emulator, discord } = e2e.world;
      const quota = emulator.quotaUsd('emulator-key');
      const prompt = `refused ${trigger} ${Math.random()}`;
      const run = generate(prompt);
      expect((await run.response()).type).toBe(5);
      const told = await discord.waitFor(() => run.followUps[0], 10_000, 'a follow-up saying why');
      expect(told.flags & 64).toBe(64);
      expect(told.content).toContain(words);
      expect(told.content).toMatch(/request id `req_/);
      // The public "thinking…" reply is gone: only the caller reads the refusal.
      expect(run.record.original?.deleted).toBe(true);
      expect(emulator.requests.filter((entry) => entry.method === 'POST' && JSON.stringify(entry.body).includes(prompt))).toHaveLength(1);
      expect(emulator.quotaUsd('emulator-key')).toBeCloseTo(quota, 6);
    });

    it("an unknown voice is told privately with the gateway's own list, naming the `voice` option", async () => {
      const run = generate(`a voice ${Math.random()}`, { voice: 'eve, nobody' });
      const told = await e2e.world.discord.waitFor(() => run.followUps[0], 10_000, 'a follow-up saying why');
      expect(told.flags & 64).toBe(64);
      expect(told.content).toContain('The gateway rejected the request (`voice`)');
      expect(told.content).toMatch(/Unknown voice_id "nobody"\. Available voices: altair, ara, .*zenith/);
      expect(told.content).toMatch(/request id `req_/);
    });

    it("retries an overloaded gateway within the spec's rules and then succeeds", async () => {
      const { discord, emulator, guild } = e2e.world;
      const prompt = `busy [[http:503:overloaded:1]] ${Math.random()}`;
      const before = e2e.messageIds();
      generate(prompt);
      await discord.waitForMessage(guild.textChannelId, (message) => !before.has(message.id) && message.attachments.length > 0, 20_000);
      const attempts = emulator.requests.filter((entry) => entry.method === 'POST' && JSON.stringify(entry.body).includes(prompt));
      expect(attempts.map((entry) => entry.status)).toEqual([503, 200]);
      expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(950);
    });
  });

  describe('bad input', () => {
    it.each([
      [{ resolution: '1080p', model: 'svc-imagine-video' }, '`resolution`'],
      [{ model: 'svc-imagine-video', voice: 'eve' }, '`voice` / `reference_audio`'],
      [{ voice: 'eve, no!body' }, '`voice`: reference_audios[1].voice_id must be a voice id'],
      [{ voice: 'eve, leo, ara, rex' }, 'at most 3 voices'],
    ])('is refused at once, ephemerally, naming the option: %j', async (options, option) => {
      const run = generate('a test', options);
      const callback = await run.response();
      expect(callback.type).toBe(4);
      expect(callback.data.flags).toBe(64);
      expect(String(callback.data.content)).toContain(option);
    });

    it('asks for exactly one source for an edit (none opens a form that takes the .mp4)', async () => {
      const mp4 = { filename: 'clip.mp4', bytes: Buffer.from('x'), contentType: 'video/mp4' };
      const both = e2e.video('edit', { prompt: 'x', video: mp4, task: 'v1' });
      expect((await both.response()).data).toMatchObject({ flags: 64, content: expect.stringContaining('exactly one source') });
      const none = e2e.video('edit', { prompt: 'x' });
      expect((await none.modal()).inputs).toEqual(['prompt', 'video']);
      const wrong = e2e.video('edit', {
        prompt: 'x',
        video: { filename: 'clip.mov', bytes: Buffer.from('x'), contentType: 'video/quicktime' },
      });
      expect((await wrong.response()).data).toMatchObject({ flags: 64, content: expect.stringContaining('`video` must be an .mp4 file') });
    });
  });

  describe('status and history', () => {
    it("shows a task's card and the caller's recent tasks", async () => {
      const { guild } = e2e.world;
      const run = generate('for the record');
      const card = await run.waitForReply((message) => gatewayIdOn(message) !== undefined);
      const gatewayId = gatewayIdOn(card)!;
      const status = e2e.video('status', { task: gatewayId });
      const shown = await status.reply();
      expect(shown.flags & EPHEMERAL).toBe(EPHEMERAL);
      expect(shown.flags & IS_COMPONENTS_V2).toBe(IS_COMPONENTS_V2);
      expect(componentsV2Problems(shown, [])).toEqual([]);
      expect(details(shown)).toContain('for the record');
      const list = e2e.video('list');
      const text = (await list.reply()).content;
      expect(text).toContain('Your recent videos');
      expect(text).toContain('for the record');
      const other = e2e.video('list', undefined, { user: guild.admin });
      expect((await other.reply()).content).toContain('no videos');
    });
  });

  describe('long prompts', () => {
    it('shows a prompt of 990 emoji on its card cut between whole emoji, within Discord’s limits', async () => {
      const dragon = '🐉';
      const run = generate(dragon.repeat(990));
      const card = await finalCard(run, 'Done');
      const quoted = card.split('\n').find((line) => line.startsWith('> '))!;
      // A whole number of dragons, then the ellipsis: no half of a surrogate pair before it.
      expect(quoted).toMatch(/^> (🐉)+…$/u);
      expect(cardEditProblems(run.record.original!)).toEqual([]);
    });
  });

  describe('upload limits', () => {
    it("posts a link instead of the file when the video is over the server's limit, and says why", async () => {
      const { discord } = e2e.world;
      const small = discord.createGuild({ attachmentSizeLimit: 5000 });
      const run = generate('too big for this server', {}, small);
      expect((await run.response()).type).toBe(5);
      const posted = await run.waitForReply((message) => details(message).includes('shown by its link'), 20_000);
      expect(posted.attachments).toHaveLength(0);
      expect(details(posted)).toContain("over this server's upload limit");
      expect(details(posted)).toMatch(/http:\/\/127\.0\.0\.1:\d+\/files\/[0-9a-f]+\.mp4/);
      expect(details(posted)).toContain('temporary link');
      // The emulator's link is no public https address Discord could play in the gallery: a link button instead.
      expect(galleryItems(posted)).toEqual([]);
      expect(cardButtons(posted).find((button) => button.label === 'Open the video')?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/files\//);
      expect(cardEditProblems(posted)).toEqual([]);
      expect(discord.requests.some((request) => request.status === 413)).toBe(false);
    });

    it('falls back to a link when Discord enforces a lower limit than it announced', async () => {
      const { discord } = e2e.world;
      const shrinking = discord.createGuild();
      const run = generate('the limit shrank', {}, shrinking);
      await run.response();
      discord.setAttachmentSizeLimit(shrinking.id, 5000);
      const posted = await run.waitForReply((message) => details(message).includes('shown by its link'), 20_000);
      expect(posted.attachments).toHaveLength(0);
      expect(details(posted)).toContain('upload limit');
      expect(discord.requests.filter((request) => request.status === 413)).toHaveLength(1);
    });
  });

  it('drew every card of this layer (running, done, linked, failed, moderated, timed out, unknown) as a valid Components V2 message', () => {
    const cards = [...e2e.world.discord.state.messages.values()].filter(
      (message) => (message.flags & IS_COMPONENTS_V2) !== 0 && (message.flags & EPHEMERAL) === 0,
    );
    expect(cards.length).toBeGreaterThan(10);
    expect(cards.flatMap((message) => cardEditProblems(message).map((problem) => `${message.id}: ${problem}`))).toEqual([]);
  });
});
