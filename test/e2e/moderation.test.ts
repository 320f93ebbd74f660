import { describe, expect, it } from 'vitest';
import type { InteractionHandle, Message } from 'discord-standin';
import { EPHEMERAL, isDone, mp4, videoRefOf, videoWorld } from '../support/video-e2e.ts';
import { cardText } from '../support/cards.ts';

// The moderators' rules at work (issue 36, "Done when"), on the stand-ins with the bot as a process: a
// blocked word refused privately before anything reaches the gateway, whatever its case and punctuation
// and wherever the prompt is typed, while a longer word that starts with it goes through; /video kept to
// its channel; a denied member refused everything while another is served; and the log channel holding
// the config change, the job and every refusal, its members mentioned but pinged by no line. (Setting
// the rules is config-rules.test.ts's; the Delete button is video-card-delete.test.ts's; the voice tool's
// refusal is voice-addressing.test.ts's.)

const DENIED = 'You may not use this bot on this server: a moderator has denied it.';

describe("a server's moderators' rules", () => {
  const e2e = videoWorld();
  const { where, submissions } = e2e;

  /** The private answer an interaction got at once. */
  async function privateAnswer(handle: InteractionHandle): Promise<string> {
    const answer = await handle.response();
    expect(Number(answer.data.flags) & EPHEMERAL, JSON.stringify(answer.data)).toBe(EPHEMERAL);
    return String(answer.data.content);
  }

  /** The moderation log's messages so far: the bot's messages in the log channel (the text channel here) that are lines of it. */
  function logMessages(): Message[] {
    const { discord, guild } = e2e.world;
    return discord
      .messages(guild.textChannelId)
      .filter((message) => message.authorId === discord.botUserId && /^(🎬|🚫|⚙️|🛡️)/u.test(message.content));
  }

  /** Waits until the log holds a line matching each pattern; its lines then. */
  async function logLinesWith(patterns: RegExp[]): Promise<string[]> {
    return e2e.world.discord.waitFor(
      () => {
        const lines = logMessages().flatMap((message) => message.content.split('\n'));
        return patterns.every((pattern) => lines.some((line) => pattern.test(line))) ? lines : undefined;
      },
      10_000,
      `log lines matching ${patterns.join(', ')}`,
    );
  }

  let dragonfly: Message;

  it('refuses a blocked word privately with nothing sent: any case, punctuation, a phrase, a form; "dragonfly" goes', async () => {
    const { guild } = e2e.world;
    expect((await e2e.config('rules', { log_channel: guild.textChannelId }).reply()).content).toMatch(/^Saved\./);
    expect((await e2e.config('rules', { blocked_words_add: 'dragon, sea serpent' }).reply()).content).toMatch(/^Saved\./);
    const before = submissions().length;

    expect(await privateAnswer(e2e.video('generate', { prompt: 'A DRAGON!' }))).toBe(
      '`prompt`: this server\'s rules do not allow "dragon".',
    );
    expect(await privateAnswer(e2e.video('generate', { prompt: 'over the bay, a Sea   Serpent; rising' }))).toBe(
      '`prompt`: this server\'s rules do not allow "sea serpent".',
    );
    // A form: /video extend without a source, its prompt typed in the form.
    const form = await e2e.video('extend', { prompt: 'the tide comes in' }).modal();
    const submitted = e2e.world.discord.submitModal({
      ...where(),
      customId: form.customId,
      fields: { prompt: 'and then the dragon wakes', duration: '3' },
      files: { video: [mp4('beach.mp4')] },
    });
    expect(await privateAnswer(submitted)).toBe('`prompt`: this server\'s rules do not allow "dragon".');
    expect(submissions()).toHaveLength(before);

    dragonfly = await e2e.video('generate', { prompt: 'a dragonfly over a pond' }).waitForReply(isDone, 20_000);
    expect(submissions()).toHaveLength(before + 1);
  }, 40_000);

  it('refuses /video outside its channel privately, naming it as a link, whichever subcommand', async () => {
    const { discord, guild } = e2e.world;
    expect((await e2e.config('rules', { video_channel_add: guild.textChannelId }).reply()).content).toMatch(/^Saved\./);
    // The voice channel's text chat is not the video channel.
    const elsewhere = { ...where(), channelId: guild.voiceChannelId };
    for (const [subcommand, options] of [
      ['generate', { prompt: 'a lake at dawn' }],
      ['list', {}],
    ] as const) {
      expect(await privateAnswer(discord.runCommand({ ...elsewhere, command: 'video', subcommand, options }))).toBe(
        `\`/video ${subcommand}\` is used in <#${guild.textChannelId}> on this server.`,
      );
    }
    expect((await e2e.video('list').reply()).content).toContain('dragonfly');
    expect((await e2e.config('rules', { video_channels_clear: true }).reply()).content).toMatch(/^Saved\./);
  }, 20_000);

  it('refuses a denied member every command and button privately, while another member is served', async () => {
    const { discord, guild } = e2e.world;
    const other = discord.createUser({ guildId: guild.id, name: 'other', roles: [guild.memberRoleId] });
    expect((await e2e.config('rules', { deny: guild.member.id }).reply()).content).toMatch(/^Saved\./);
    const before = submissions().length;

    expect(await privateAnswer(e2e.video('generate', { prompt: 'a lake at dawn' }))).toBe(DENIED);
    expect(await privateAnswer(e2e.video('list'))).toBe(DENIED);
    expect(await privateAnswer(e2e.video('status', { task: videoRefOf(dragonfly) }))).toBe(DENIED);
    const regenerate = `video:regenerate:${videoRefOf(dragonfly)}`;
    expect(await privateAnswer(discord.clickButton({ user: guild.member, message: dragonfly, customId: regenerate }))).toBe(DENIED);
    expect(
      await privateAnswer(
        discord.runCommand({ ...where(), command: 'voice', subcommand: 'join', options: { channel: guild.voiceChannelId } }),
      ),
    ).toBe(DENIED);
    expect(await privateAnswer(discord.runCommand({ ...where(), command: 'usage', options: {} }))).toBe(DENIED);
    expect(submissions()).toHaveLength(before);

    const served = await e2e.video('generate', { prompt: 'a heron at dawn' }, { user: other }).waitForReply(isDone, 20_000);
    expect(served.content + JSON.stringify(served.components)).toContain('heron');
    expect(submissions()).toHaveLength(before + 1);
    expect((await e2e.config('rules', { allow: guild.member.id }).reply()).content).toMatch(/^Saved\./);
  }, 40_000);

  it("logs the config changes, the jobs, every refusal and the provider's moderation, one line each, in few messages that ping nobody", async () => {
    const { guild } = e2e.world;
    const member = `<@${guild.member.id}>`;
    // A prompt the provider's moderation refuses (on this compatibility layer, invalid_argument saying so).
    const refusedByProvider = e2e.video('generate', { prompt: 'a storm at sea [[moderate:prompt]]' });
    expect(cardText(await refusedByProvider.waitForReply((card) => cardText(card).includes('refused this prompt'), 20_000))).toContain(
      'Nothing was charged.',
    );
    const lines = await logLinesWith([
      new RegExp(
        `^🛡️ The provider's content moderation refused the prompt of ${member} \\(nothing was charged\\): “a storm at sea .*” https://discord\\.com/channels/`,
      ),
      new RegExp(`^⚙️ <@${guild.admin.id}> changed the settings: .*dragon`),
      new RegExp(`^🎬 ${member} asked for a video, about \\$[0-9.]+: “a dragonfly over a pond” https://discord\\.com/channels/`),
      new RegExp(`^🎬 <@\\d+> asked for a video, .*“a heron at dawn”`),
      new RegExp(`^🚫 ${member} was refused a video: \`prompt\`: this server's rules do not allow "dragon"\\. — “A DRAGON!”$`),
      new RegExp(`^🚫 ${member} was refused a video: .*"sea serpent"\\. — “over the bay, a Sea Serpent; rising”$`),
      new RegExp(`^🚫 ${member} was refused a video: .*"dragon"\\. — “and then the dragon wakes”$`),
      new RegExp(`^🚫 ${member} was refused \`/video generate\`: \`/video generate\` is used in <#${guild.textChannelId}>`),
      new RegExp(`^🚫 ${member} was refused \`/video list\`: ${DENIED}$`),
      new RegExp(`^🚫 ${member} was refused \`/voice join\`: ${DENIED}$`),
      new RegExp(`^⚙️ <@${guild.admin.id}> changed the settings: set rules: allowed ${member} the bot again$`),
      new RegExp(`^🚫 ${member} was refused \`/video\`: ${DENIED}$`),
    ]);
    // Each refusal once: three blocked words, two channels, six denials.
    expect(lines.filter((line) => line.startsWith(`🚫 ${member}`))).toHaveLength(11);
    const messages = logMessages();
    expect(messages.length).toBeLessThan(lines.length);
    for (const message of messages) expect(message.allowedMentions).toEqual({ parse: [] });
  }, 20_000);
});
