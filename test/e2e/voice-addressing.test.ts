import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RealtimeSession } from '../../src/emulator/realtime/session.ts';
import { audible, concatPcm, generateSilence, generateTone, type User } from 'discord-standin';
import { sendBotAway } from '../support/voice-restart.ts';
import { startWorld, type World } from '../support/world.ts';
import { cardEditProblems, cardText, galleryItems } from '../support/cards.ts';

// Voice that knows when it is spoken to (respond, wake_words) and makes videos when asked (tools), on
// the stand-ins. The emulator's model is an echo; each turn's transcript and the model's function calls
// are scripted with POST /_emulator/realtime/script.

let world: World;
/** Who the test brought into the voice channel, to take out after it. */
const inVoice: User[] = [];
beforeAll(async () => {
  world = await startWorld({ emulator: { timing: { generation_ms: 300 } } });
}, 60_000);
afterAll(() => world?.stop());

afterEach(async () => {
  const { discord, guild } = world;
  await sendBotAway(world);
  for (const user of inVoice.splice(0)) discord.leaveVoice(user, guild.id);
  discord.voice.clearBotAudio(guild.id);
});

/** The stand-in's bot is "video-voice-bot": its display name is what it answers to by default. */
const BOT_NAME = 'video-voice-bot';

type ScriptBody = {
  transcript?: string;
  response?: { text?: string; function_call?: { name: string; arguments?: Record<string, unknown> } };
};

/** Scripts the session's next user turn through the emulator's HTTP endpoint. */
async function script(session: RealtimeSession, body: ScriptBody): Promise<void> {
  const response = await fetch(`${world.emulator.baseUrl}/_emulator/realtime/script`, {
    method: 'POST',
    headers: { authorization: 'Bearer emulator-key', 'content-type': 'application/json' },
    body: JSON.stringify({ session_id: session.id, ...body }),
  });
  expect(response.status, await response.clone().text()).toBe(200);
}

async function settings(options: Record<string, string | number | boolean>): Promise<string> {
  const { discord, guild } = world;
  return (
    await discord
      .runCommand({
        user: guild.admin,
        guildId: guild.id,
        channelId: guild.textChannelId,
        command: 'voice',
        subcommand: 'settings',
        options,
      })
      .reply()
  ).content;
}

async function config(subcommand: string, options: Record<string, string | number | boolean>): Promise<void> {
  const { discord, guild } = world;
  await discord
    .runCommand({ user: guild.admin, guildId: guild.id, channelId: guild.textChannelId, command: 'config', subcommand, options })
    .reply();
}

/** `people` join the voice channel, then the first runs /voice join; the conversation's realtime session. */
async function joinWith(...people: User[]): Promise<RealtimeSession> {
  const { discord, emulator, guild } = world;
  for (const user of people) {
    discord.joinVoice(user, guild.id, guild.voiceChannelId);
    inVoice.push(user);
  }
  const earlier = [...emulator.realtime.sessions];
  const run = discord.runCommand({
    user: people[0]!,
    guildId: guild.id,
    channelId: guild.textChannelId,
    command: 'voice',
    subcommand: 'join',
  });
  expect((await run.reply()).content).toMatch(/^Joined/);
  await discord.voice.waitForBotConnection(guild.id);
  // Answered once its first line (that the bot listens) was heard: what the bot plays next is new.
  discord.voice.clearBotAudio(guild.id);
  const { session } = await emulator.realtime.waitForClientEvent(
    (event, candidate) => event.type === 'session.update' && !earlier.includes(candidate),
    10_000,
  );
  return session;
}

/** The first event of the session's journal (`server` or `client`) of this type that was not there before; waits for it. */
async function nextEvent(
  session: RealtimeSession,
  side: 'server' | 'client',
  type: string,
  match: (event: Readonly<Record<string, unknown>>) => boolean = () => true,
): Promise<{ at: number; event: Readonly<Record<string, unknown>> }> {
  const journal = () => (side === 'server' ? session.serverEvents : session.clientEvents);
  const earlier = new Set(journal().map((entry) => entry.event));
  const predicate = (event: Readonly<Record<string, unknown>>, which: RealtimeSession) =>
    which === session && event.type === type && !earlier.has(event) && match(event);
  const { realtime } = world.emulator;
  const found = await (side === 'server' ? realtime.waitForServerEvent(predicate, 20_000) : realtime.waitForClientEvent(predicate, 20_000));
  return found.event;
}

const clientEvents = (session: RealtimeSession, type: string) => session.clientEvents.filter((entry) => entry.event.type === type);

/** `user` speaks a turn the gateway hears as `transcript`; resolves once its transcript arrived. */
async function say(session: RealtimeSession, user: User, transcript: string, response?: ScriptBody['response']): Promise<number> {
  const { discord, guild } = world;
  await script(session, { transcript, ...(response ? { response } : {}) });
  const heard = nextEvent(session, 'server', 'conversation.item.input_audio_transcription.completed');
  await discord.voice.speakTone(guild.id, user.id, { hz: 440, ms: 500, amplitude: 0.5 });
  const { at, event } = await heard;
  expect(event.transcript).toBe(transcript);
  return at;
}

/** The bot's answer, played to its end. */
async function answerPlayed(what = 'the answer'): Promise<void> {
  const { discord, guild } = world;
  await discord.voice
    .waitForBotAudio(guild.id, (received) => audible(received).length >= 10, 20_000)
    .catch((error: unknown) => {
      throw new Error(`${what} was not heard`, { cause: error });
    });
  await discord.voice.waitForBotSpeaking(
    guild.id,
    (events) => events.some((event) => event.speaking !== 0) && events.at(-1)?.speaking === 0,
    15_000,
  );
  discord.voice.clearBotAudio(guild.id);
}

describe('when the bot answers', () => {
  it('with two people answers only a turn that names it (manual turns, a commit and response.create for that turn alone), marks the transcript, and answers every turn once one is left, on the same session', async () => {
    const { discord, emulator, guild } = world;
    expect(await settings({ transcripts: true })).toContain('**Answers:** auto');
    try {
      const session = await joinWith(guild.member, guild.admin);
      expect(clientEvents(session, 'session.update')[0]?.event.session).toMatchObject({ turn_detection: null });

      const unaddressed = await say(session, guild.member, 'what time is it');
      const addressed = await say(session, guild.member, `Hey ${BOT_NAME}, what time is it`);
      await answerPlayed('answer 1');
      // One commit per turn, and response.create only after the turn that named the bot.
      expect(clientEvents(session, 'input_audio_buffer.commit')).toHaveLength(2);
      const creates = clientEvents(session, 'response.create');
      expect(creates).toHaveLength(1);
      expect(creates[0]!.at).toBeGreaterThanOrEqual(addressed);
      expect(
        session.serverEvents.filter((entry) => entry.event.type === 'response.created' && entry.at < addressed && entry.at >= unaddressed),
      ).toEqual([]);

      const thread = await discord.waitFor(
        () =>
          discord.state.guilds.get(guild.id)?.channels.find((channel) => channel.type === 11 && channel.parentId === guild.textChannelId),
        10_000,
        'the transcript thread',
      );
      await discord.waitForMessage(
        thread.id,
        (message) => message.content === `**member** (<@${guild.member.id}>): what time is it · not answered (not addressed to me)`,
        10_000,
      );
      await discord.waitForMessage(
        thread.id,
        (message) => message.content === `**member** (<@${guild.member.id}>): Hey ${BOT_NAME}, what time is it · ✅ answered`,
        10_000,
      );

      // The admin leaves: one person left, every turn is answered, with server VAD on the same session.
      const sessions = emulator.realtime.sessions.length;
      discord.leaveVoice(guild.admin, guild.id);
      await emulator.realtime.waitForClientEvent(
        (event, candidate) => candidate === session && event.type === 'session.update' && JSON.stringify(event).includes('server_vad'),
        10_000,
      );
      const alone = await say(session, guild.member, 'what time is it');
      await answerPlayed('answer 2');
      expect(session.serverEvents.some((entry) => entry.event.type === 'response.created' && entry.at >= alone)).toBe(true);
      expect(clientEvents(session, 'response.create')).toHaveLength(1);
      expect(emulator.realtime.sessions.length).toBe(sessions);
      expect(session.closedAt).toBeUndefined();

      // Someone joins again: back to answering only when named, still the same session.
      discord.joinVoice(guild.admin, guild.id, guild.voiceChannelId);
      await emulator.realtime.waitForClientEvent(
        (event, candidate) =>
          candidate === session &&
          event.type === 'session.update' &&
          (event.session as { turn_detection?: unknown } | undefined)?.turn_detection === null &&
          clientEvents(session, 'session.update').length >= 3,
        10_000,
      );
      const again = await say(session, guild.admin, 'so what did you think');
      const named = await say(session, guild.admin, `ok ${BOT_NAME.toUpperCase()}! tell us a joke`);
      await answerPlayed('answer 3');
      const later = clientEvents(session, 'response.create').filter((entry) => entry.at >= again);
      expect(later).toHaveLength(1);
      expect(later[0]!.at).toBeGreaterThanOrEqual(named);
      // The other member's lines name them, not the member who spoke before.
      await discord.waitForMessage(
        thread.id,
        (message) => message.content === `**admin** (<@${guild.admin.id}>): so what did you think · not answered (not addressed to me)`,
        10_000,
      );
    } finally {
      await settings({ transcripts: false });
    }
  });

  it('keeps a sentence one turn when its audio drops out for a moment (the talk spurt not closed by silence frames)', async () => {
    const { discord, guild } = world;
    const session = await joinWith(guild.member, guild.admin);
    await script(session, { transcript: 'what time is it' });
    const heard = nextEvent(session, 'server', 'conversation.item.input_audio_transcription.completed');
    // A network hiccup: 250 ms without packets mid-sentence, longer than a closed spurt is waited for.
    const word = generateTone({ hz: 440, ms: 300, amplitude: 0.5 });
    await discord.voice.speak(guild.id, guild.member.id, concatPcm(word, generateSilence(250), word), { trailingSilenceFrames: 0 });
    expect(clientEvents(session, 'input_audio_buffer.commit'), 'a turn ended mid-sentence').toEqual([]);
    expect((await heard).event.transcript).toBe('what time is it');
    expect(clientEvents(session, 'input_audio_buffer.commit')).toHaveLength(1);
  });

  it('answers every turn with respond: always, and only named turns with respond: when_named, to the wake words set', async () => {
    const { discord, guild } = world;
    expect(await settings({ respond: 'always' })).toContain('**Answers:** always');
    try {
      const session = await joinWith(guild.member, guild.admin);
      expect(clientEvents(session, 'session.update')[0]?.event.session).toMatchObject({ turn_detection: { type: 'server_vad' } });
      const first = await say(session, guild.member, 'what time is it');
      await answerPlayed('answer 4');
      const second = await say(session, guild.admin, `Hey ${BOT_NAME}, what time is it`);
      await answerPlayed('answer 5');
      for (const at of [first, second])
        expect(session.serverEvents.some((entry) => entry.event.type === 'response.created' && entry.at >= at)).toBe(true);
      await discord
        .runCommand({ user: guild.member, guildId: guild.id, channelId: guild.textChannelId, command: 'voice', subcommand: 'leave' })
        .reply();
      discord.leaveVoice(guild.admin, guild.id);
      discord.leaveVoice(guild.member, guild.id);

      expect(await settings({ respond: 'when_named', wake_words: 'Robo, Hey Pixel' })).toContain(
        '**Answers:** when_named: only turns that name it (its names: "Robo", "Hey Pixel")',
      );
      const alone = await joinWith(guild.member);
      await say(alone, guild.member, `hey ${BOT_NAME}, are you there`);
      const named = await say(alone, guild.member, 'Pixel, are you there?');
      await answerPlayed('answer 6');
      const creates = clientEvents(alone, 'response.create');
      expect(creates).toHaveLength(1);
      expect(creates[0]!.at).toBeGreaterThanOrEqual(named);
    } finally {
      await settings({ respond: 'auto', wake_words: ',' });
    }
  });

  it('refuses a bad respond or wake_words privately, naming the option', async () => {
    const { discord, guild } = world;
    const run = discord.runCommand({
      user: guild.admin,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'settings',
      options: { wake_words: '!!!, ???' },
    });
    const reply = await run.reply();
    expect(reply.flags & 64).toBe(64);
    expect(reply.content).toMatch(/^`wake_words`: "!!!" has no letters or digits/);
    const respond = discord.runCommand({
      user: guild.admin,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'settings',
      options: { respond: 'sometimes' },
    });
    const refused = await respond.reply();
    expect(refused.flags & 64).toBe(64);
    expect(refused.content).toBe('`respond` must be one of auto, always, when_named; got "sometimes".');
  });
});

describe('tools the model can call', () => {
  /** The output the bot gave the model for the next call, parsed; and what the model then said. */
  async function nextOutput(
    session: RealtimeSession,
    since: number,
  ): Promise<{ output: { status: string; message: string; task?: string }; raw: string; said: string }> {
    const existing = session.clientEvents.find(
      (entry) =>
        entry.at >= since &&
        entry.event.type === 'conversation.item.create' &&
        (entry.event.item as { type?: unknown } | undefined)?.type === 'function_call_output',
    );
    const event =
      existing ??
      (await nextEvent(
        session,
        'client',
        'conversation.item.create',
        (candidate) => (candidate.item as { type?: unknown } | undefined)?.type === 'function_call_output',
      ));
    const raw = String((event.event.item as { output?: unknown }).output);
    const output: unknown = JSON.parse(raw);
    const spoken = (entry: { at: number; event: Readonly<Record<string, unknown>> }) =>
      entry.at >= event.at && entry.event.type === 'response.output_audio_transcript.done';
    const said = session.serverEvents.find(spoken) ?? (await nextEvent(session, 'server', 'response.output_audio_transcript.done'));
    return { output: output as { status: string; message: string; task?: string }, raw, said: String(said.event.transcript) };
  }

  it('makes a job of 2 variants when the model asks for variants: 2, and says what the whole job is expected to cost', async () => {
    const { discord, emulator, guild } = world;
    const generations = () => emulator.requests.filter((entry) => entry.method === 'POST' && entry.path === '/v1/videos/generations');
    const before = generations().length;
    const session = await joinWith(guild.member);
    const asked = await say(session, guild.member, `${BOT_NAME}, two videos of a heron please`, {
      function_call: { name: 'generate_video', arguments: { prompt: 'a heron fishing at dawn', duration: 2, variants: 2 } },
    });
    const submitted = await nextOutput(session, asked);
    expect(submitted.output).toMatchObject({ status: 'submitted', task: expect.stringMatching(/^\w+/) });
    // Two 2 s videos at 480p: $0.10 each.
    expect(submitted.output.message).toMatch(/^2 variants of the video are being made, for about \$0\.20/);
    const card = await discord.waitForMessage(
      guild.textChannelId,
      (message) => cardText(message).includes(`ref ${submitted.output.task}`),
      15_000,
    );
    await discord.waitFor(() => (galleryItems(card).length === 2 ? true : undefined), 20_000, 'two videos in the card');
    expect(generations().length - before).toBe(2);
    expect(discord.messages(guild.textChannelId).filter((message) => cardText(message).includes('a heron fishing at dawn'))).toEqual([
      card,
    ]);
    expect(cardEditProblems(card)).toEqual([]);
    await answerPlayed('the answer to the variants');
  }, 60_000);

  it("refuses a prompt with the server's blocked word, telling the model the server's rules refused it and which word; nothing is sent", async () => {
    const { discord, emulator, guild } = world;
    const generations = () => emulator.requests.filter((entry) => entry.method === 'POST' && entry.path === '/v1/videos/generations');
    await config('rules', { blocked_words_add: 'dragon' });
    try {
      const before = generations().length;
      const session = await joinWith(guild.member);
      const asked = await say(session, guild.member, `${BOT_NAME}, make a video of a dragon`, {
        function_call: { name: 'generate_video', arguments: { prompt: 'A DRAGON, over the bay!' } },
      });
      const refused = await nextOutput(session, asked);
      expect(refused.output).toEqual({
        status: 'refused',
        message: 'Refused by this server\'s rules: the request contains "dragon", which its moderators do not allow. No video was made.',
      });
      expect(refused.said).toBe(refused.raw);
      await answerPlayed('the refusal');
      expect(generations()).toHaveLength(before);
      expect(discord.messages(guild.textChannelId).filter((message) => cardText(message).includes('DRAGON'))).toEqual([]);
    } finally {
      await config('rules', { blocked_words_clear: true });
    }
  }, 60_000);

  it("makes a video for the member who asked, with a card mentioning them, posts it and says so; refuses a member without the video role and one past a limit in /video's words", async () => {
    const { discord, emulator, guild } = world;
    const outsider = discord.createUser({ guildId: guild.id, name: 'outsider' });
    await config('roles', { feature: 'video', action: 'add', role: guild.memberRoleId });
    try {
      const session = await joinWith(guild.member, outsider);
      const declared = clientEvents(session, 'session.update')[0]?.event.session as { tools?: { name: string }[] } | undefined;
      expect(declared?.tools?.map((tool) => tool.name)).toEqual(['generate_video', 'video_status']);

      // Member A asks: a card mentioning A, the video, and a spoken notice.
      const asked = await say(session, guild.member, `Hey ${BOT_NAME}, make a video of a fox surfing at sunset`, {
        function_call: { name: 'generate_video', arguments: { prompt: 'a fox surfing at sunset', duration: 2 } },
      });
      const submitted = await nextOutput(session, asked);
      expect(submitted.output).toMatchObject({ status: 'submitted', task: expect.stringMatching(/^\w+/) });
      // The model is told what the video is expected to cost (2 s at 480p), to say it aloud.
      expect(submitted.output.message).toContain('for about $0.10');
      expect(submitted.said).toBe(submitted.raw);
      const card = await discord.waitForMessage(
        guild.textChannelId,
        (message) => cardText(message).includes(`ref ${submitted.output.task}`),
        15_000,
      );
      expect(cardText(card)).toContain(`Requested by <@${guild.member.id}>`);
      // The video goes into that card, a channel message (no interaction to answer).
      const posted = await discord.waitFor(
        () => (card.attachments.length > 0 && cardText(card).includes('**Done**') ? card : undefined),
        20_000,
        'the video in its card',
      );
      expect(card.edits[0]?.json).not.toHaveProperty('content');
      expect(cardEditProblems(card)).toEqual([]);
      expect(posted.attachments[0]?.filename).toMatch(/\.mp4$/);
      await emulator.realtime.waitForClientEvent(
        (event, which) =>
          which === session &&
          event.type === 'conversation.item.create' &&
          JSON.stringify(event).includes('a fox surfing at sunset') &&
          JSON.stringify(event).includes('force_message'),
        20_000,
      );
      await answerPlayed('answer 7');

      // The outsider, without the video role: refused as /video refuses them, and the model says so.
      const cards = discord.messages(guild.textChannelId).length;
      const outsiderAsked = await say(session, outsider, `${BOT_NAME}, make a video of a cat`, {
        function_call: { name: 'generate_video', arguments: { prompt: 'a cat' } },
      });
      const refused = await nextOutput(session, outsiderAsked);
      expect(refused.output.status).toBe('refused');
      expect(refused.output.message).toContain(`<@&${guild.memberRoleId}>`);
      expect(refused.said).toBe(refused.raw);
      await answerPlayed('answer 8');

      // A limit reached: the same.
      await config('limits', { daily_per_user: 1 });
      try {
        const again = await say(session, guild.member, `${BOT_NAME}, another one please`, {
          function_call: { name: 'generate_video', arguments: { prompt: 'a second fox' } },
        });
        const limited = await nextOutput(session, again);
        expect(limited.output.status).toBe('refused');
        expect(limited.output.message).toMatch(/limit of 1 video a day\. Try again <t:\d+:R>/);
        await answerPlayed('answer 9');
      } finally {
        await config('limits', { daily_per_user: 0 });
      }
      // Nothing was posted for the refused calls.
      expect(
        discord
          .messages(guild.textChannelId)
          .slice(cards)
          .filter((message) => (message.flags & (1 << 15)) !== 0),
      ).toEqual([]);

      // video_status: the speaker's latest task.
      const status = await say(session, guild.member, `${BOT_NAME}, how is my video`, { function_call: { name: 'video_status' } });
      const found = await nextOutput(session, status);
      expect(found.output).toMatchObject({ status: 'found', task: submitted.output.task });
      expect(found.output.message).toContain('a fox surfing at sunset');
      await answerPlayed('answer 10');

      // Malformed arguments: an output naming the problem, and the conversation goes on.
      const malformed = await say(session, guild.member, `${BOT_NAME}, make a long one`, {
        function_call: { name: 'generate_video', arguments: { duration: 'long' } },
      });
      const invalid = await nextOutput(session, malformed);
      expect(invalid.output).toEqual({
        status: 'invalid_arguments',
        message: 'prompt is required: say what the video should show. Nothing was done.',
      });
      await answerPlayed('answer 11');
      expect(world.bot.child.exitCode).toBeNull();
    } finally {
      await config('roles', { feature: 'video', action: 'clear' });
    }
  }, 120_000);
});
