import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { analyzeTone, audible, type BotAudioFrame, byTone, type HeldWelcome, type User } from 'discord-standin';
import { FORCE_MESSAGE_TONE_HZ, type RealtimeSession } from '../../src/emulator/realtime/session.ts';
import { parsePrometheus, total, type Sample } from '../support/prometheus.ts';
import { refuseNextAnswer } from '../support/refused-answer.ts';
import { startWorld, type World } from '../support/world.ts';
import { resolveLocale, t } from '../../src/i18n/index.ts';

// Live voice on the stand-ins: the bot in a voice channel of the Discord stand-in, its realtime session
// on the emulator, whose model echoes each turn back.

let world: World;
/** The bot's /metrics (OPS_PORT), parsed. */
let metrics: () => Promise<Sample[]>;
beforeAll(async () => {
  world = await startWorld({ env: { OPS_PORT: '0' }, emulator: { timing: { generation_ms: 200 } } });
  const ops = await world.bot.waitForLog((line) => line.msg === 'ops port listening');
  metrics = async () => parsePrometheus(await (await fetch(`http://127.0.0.1:${String(ops.port)}/metrics`)).text());
  // These tests are about what is heard and played: the bot answers every turn, however many people
  // are in the channel (test/e2e/voice-addressing.test.ts covers when it answers).
  const { discord, guild } = world;
  await discord
    .runCommand({
      user: guild.admin,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'settings',
      options: { respond: 'always' },
    })
    .reply();
}, 60_000);
afterAll(() => world?.stop());

afterEach(async () => {
  const { discord, guild } = world;
  if (discord.botVoiceChannel(guild.id)) {
    const leave = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'leave',
    });
    await leave.response();
    await discord.waitFor(() => (discord.botVoiceChannel(guild.id) ? undefined : true), 10_000, 'the bot leaving voice');
  }
  for (const user of [guild.member, guild.admin]) discord.leaveVoice(user, guild.id);
  discord.voice.clearBotAudio(guild.id);
});

function joined(frames: readonly BotAudioFrame[]): Int16Array {
  const out = new Int16Array(frames.reduce((sum, frame) => sum + frame.pcm.length, 0));
  let offset = 0;
  for (const frame of frames) {
    out.set(frame.pcm, offset);
    offset += frame.pcm.length;
  }
  return out;
}

const PRIVACY_CODE = /Voice privacy code: `(\d{5}(?: \d{5}){5})`/;

/**
 * The member joins voice, then runs `/voice join`: the reply says the call is end-to-end encrypted and
 * shows the voice privacy code, the one the member's own client derives for the call.
 */
async function joinVoice(): Promise<void> {
  const { discord, guild } = world;
  discord.joinVoice(guild.member, guild.id, guild.voiceChannelId);
  const run = discord.runCommand({
    user: guild.member,
    guildId: guild.id,
    channelId: guild.textChannelId,
    command: 'voice',
    subcommand: 'join',
  });
  const reply = (await run.reply()).content;
  expect(reply).toMatch(new RegExp(`^Joined <#${guild.voiceChannelId}>\\. 🔒 This call is end-to-end encrypted\\. Voice privacy code: `));
  await discord.voice.waitForBotConnection(guild.id);
  // Answered once its first line (that the bot listens) was heard: what the bot plays next is new.
  discord.voice.clearBotAudio(guild.id);
  const code = PRIVACY_CODE.exec(reply)?.[1];
  expect(code).toBeDefined();
  await discord.voice.dave.waitForMember(guild.id, guild.member.id, (state) => state.privacyCode === code);
}

/** `user` speaks a tone burst; the bot's answer (the emulator's echo) is heard as the same tone. */
async function speakAndHear(w: World, user: User, hz: number): Promise<void> {
  const { discord, guild } = w;
  discord.voice.clearBotAudio(guild.id);
  await discord.voice.speakTone(guild.id, user.id, { hz, ms: 500, amplitude: 0.5 });
  const frames = await discord.voice.waitForBotAudio(guild.id, (received) => audible(received).length >= 20, 15_000);
  expect(analyzeTone(joined(audible(frames))).dominantHz).toBeCloseTo(hz, -1);
}

describe('voice conversations', () => {
  it("joins the caller's channel, says it is listening, and leaves on request", async () => {
    const { discord, guild } = world;
    await joinVoice();
    expect(discord.botVoiceChannel(guild.id)).toBe(guild.voiceChannelId);
    const listening = await discord.waitForMessage(
      guild.textChannelId,
      (message) => message.content.includes('Listening in') && message.content.includes('/voice leave'),
    );
    expect(PRIVACY_CODE.exec(listening.content)?.[1]).toBe(discord.voice.dave.member(guild.id, guild.member.id)?.privacyCode);
    expect(listening.content).toContain('🔒 This call is end-to-end encrypted.');
    const leave = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'leave',
    });
    expect((await leave.reply()).content).toBe('Left the voice channel.');
    expect(discord.botVoiceChannel(guild.id)).toBeUndefined();
    await discord.waitForMessage(guild.textChannelId, (message) => message.content.startsWith('Stopped listening'));
  });

  it('says which permission it lacks in a voice channel it may not connect to or speak in, without trying to join', async () => {
    const { discord, guild } = world;
    discord.joinVoice(guild.member, guild.id, guild.voiceChannelId);
    for (const [permission, name] of [
      ['connect', 'Connect'],
      ['speak', 'Speak'],
    ] as const) {
      discord.denyBotPermission(guild.voiceChannelId, permission);
      try {
        const run = discord.runCommand({
          user: guild.member,
          guildId: guild.id,
          channelId: guild.textChannelId,
          command: 'voice',
          subcommand: 'join',
        });
        const reply = await run.reply(5_000);
        expect(reply.flags & 64).toBe(64);
        expect(reply.content).toBe(
          `I may not join <#${guild.voiceChannelId}>: I lack **${name}** there. A server admin can give me View Channel, Connect and Speak in that channel, or pick another with the \`channel\` option.`,
        );
        expect(discord.botVoiceChannel(guild.id)).toBeUndefined();
      } finally {
        discord.restoreBotPermissions(guild.voiceChannelId);
      }
    }
    discord.leaveVoice(guild.member, guild.id);
    // A German member reads it in German, the permission by the name their Discord gives it.
    const germanMember = discord.createUser({ guildId: guild.id, locale: 'de' });
    const german = resolveLocale('de', undefined, 'member');
    discord.joinVoice(germanMember, guild.id, guild.voiceChannelId);
    discord.denyBotPermission(guild.voiceChannelId, 'connect');
    try {
      const reply = await discord
        .runCommand({ user: germanMember, guildId: guild.id, channelId: guild.textChannelId, command: 'voice', subcommand: 'join' })
        .reply(5_000);
      expect(reply.content).toBe(
        t(german, 'voice.join.missing-permissions', {
          channel: `<#${guild.voiceChannelId}>`,
          missing: t(german, 'voice.permission', { permission: 'connect' }),
        }),
      );
      expect(reply.content).toContain('**Verbinden**');
    } finally {
      discord.restoreBotPermissions(guild.voiceChannelId);
      discord.leaveVoice(germanMember, guild.id);
    }
    await joinVoice();
  });

  it("hears a user's tone, decoded, and plays the model's echo back as the same tone", async () => {
    const { discord, emulator, guild } = world;
    await joinVoice();
    const session = emulator.realtime.sessions.at(-1)!;
    await discord.voice.speakTone(guild.id, guild.member.id, { hz: 440, ms: 600, amplitude: 0.5 });
    const frames = await discord.voice.waitForBotAudio(guild.id, (received) => audible(received).length >= 25, 15_000);
    // What reached the gateway was the user's speech, decoded to 24 kHz PCM: its VAD heard one turn of it.
    expect(session.serverEvents.filter((entry) => entry.event.type === 'input_audio_buffer.committed')).toHaveLength(1);
    const tone = analyzeTone(joined(audible(frames)));
    expect(tone.dominantHz).toBeGreaterThan(430);
    expect(tone.dominantHz).toBeLessThan(450);
    // The call is end-to-end encrypted (DAVE) and the member heard all of it: nothing came in the clear.
    expect(discord.voice.botConnection(guild.id)?.dave).toMatchObject({
      protocolVersion: 1,
      groupMembers: expect.arrayContaining([guild.member.id]),
    });
    expect(discord.voice.botPacketProblems(guild.id)).toMatchObject({ unencrypted: 0, daveUndecryptable: 0 });
  });

  it('stops talking when talked over, cancels, truncates to what was really heard, and never plays the rest', async () => {
    const { discord, emulator, guild } = world;
    // A fast gateway: the whole answer arrives long before it has been played, and response.done with it.
    emulator.realtime.options.paceFactor = 20;
    try {
      await joinVoice();
      const session = emulator.realtime.sessions.at(-1)!;
      await discord.voice.speakTone(guild.id, guild.member.id, { hz: 330, ms: 2000, amplitude: 0.5 });
      // The whole answer has come (response.done); let the bot play it for a while, then speak over it.
      await emulator.realtime.waitForServerEvent((event, candidate) => candidate === session && event.type === 'response.done', 15_000);
      await discord.voice.waitForBotAudio(guild.id, (received) => audible(received).length >= 20, 15_000);
      await discord.voice.speakTone(guild.id, guild.member.id, { hz: 660, ms: 400, amplitude: 0.5 });
      const { event: truncate } = await emulator.realtime.waitForClientEvent(
        (event, candidate) => candidate === session && event.type === 'conversation.item.truncate',
        15_000,
      );
      // The gateway's echo of the interruption is the next answer: wait until it has been heard.
      const frames = await discord.voice.waitForBotAudio(guild.id, (received) => byTone(received, 660, 330).length >= 15, 15_000);
      expect(session.clientEvents.some((entry) => entry.event.type === 'response.cancel')).toBe(true);

      const answer = byTone(frames, 330, 660);
      const next = byTone(frames, 660, 330);
      const stopped = session.serverEvents.findLastIndex((entry) => entry.event.type === 'input_audio_buffer.speech_stopped');
      // The bot's voice stops while it is talked over, not once the interruption is over…
      expect(truncate.at).toBeLessThanOrEqual(session.serverEvents[stopped]!.at);
      // …what it tells the gateway was heard is what reached Discord, to a frame or two: every frame of the
      // cut-off answer, the silence in it included (the echo has some where a packet of the member's came
      // late), is sent before the next answer's first audio could have reached the bot…
      const nextAudio = session.serverEvents.slice(stopped).find((entry) => entry.event.type === 'response.output_audio.delta')!;
      const cutOff = frames.filter((frame) => frame.receivedAt < nextAudio.at);
      expect(Math.abs(Number(truncate.event.audio_end_ms) - cutOff.length * 20)).toBeLessThanOrEqual(40);
      // …and nothing of the cut-off answer is heard after that, however late.
      expect(answer.every((frame) => frame.receivedAt < next[0]!.receivedAt)).toBe(true);
      expect(answer.length).toBeLessThan(100);
    } finally {
      emulator.realtime.options.paceFactor = 1.25;
    }
  });

  it('keeps hearing a speaker whose receive stream the voice library destroyed mid-utterance', async () => {
    const { discord, emulator, guild } = world;
    await joinVoice();
    const turns = emulator.realtime.sessions.at(-1)!;
    // Frame 15 fails transport decryption: @discordjs/voice destroys the receive stream, as it does after
    // 36 DAVE decryption failures. The speaker keeps talking without the pause that restarts "speaking".
    const spoken = await discord.voice.speakTone(
      guild.id,
      guild.member.id,
      { hz: 350, ms: 1400, amplitude: 0.5 },
      { brokenSealFrames: [15] },
    );
    expect(spoken.audioPackets).toBe(70);
    await emulator.realtime.waitForClientEvent(
      () => turns.serverEvents.some((entry) => entry.event.type === 'conversation.item.input_audio_transcription.completed'),
      15_000,
    );
    const transcript = turns.serverEvents.find((entry) => entry.event.type === 'conversation.item.input_audio_transcription.completed')!
      .event.transcript;
    // The whole utterance reached the session, not only the 0.3 s before the stream was destroyed.
    expect(Number(/\(([\d.]+) s of speech\)/.exec(String(transcript))?.[1])).toBeGreaterThanOrEqual(1.3);
  });

  it('mixes two people speaking at once into one turn', async () => {
    const { discord, emulator, guild } = world;
    discord.joinVoice(guild.admin, guild.id, guild.voiceChannelId);
    await joinVoice();
    const session = emulator.realtime.sessions.at(-1)!;
    await Promise.all([
      discord.voice.speakTone(guild.id, guild.member.id, { hz: 300, ms: 700, amplitude: 0.3 }),
      discord.voice.speakTone(guild.id, guild.admin.id, { hz: 800, ms: 700, amplitude: 0.3 }),
    ]);
    const frames = await discord.voice.waitForBotAudio(guild.id, (received) => audible(received).length >= 25, 15_000);
    const pcm = joined(audible(frames));
    expect(analyzeTone(pcm, { maxHz: 550 }).dominantHz).toBeGreaterThan(290);
    expect(analyzeTone(pcm, { maxHz: 550 }).dominantHz).toBeLessThan(310);
    expect(analyzeTone(pcm, { minHz: 550 }).dominantHz).toBeGreaterThan(790);
    expect(analyzeTone(pcm, { minHz: 550 }).dominantHz).toBeLessThan(810);
    // Both voices arrived as one turn of one session.
    expect(session.serverEvents.filter((entry) => entry.event.type === 'input_audio_buffer.committed')).toHaveLength(1);
  });

  it('tells the admin voice settings were saved when Discord refuses the answer showing them, and they hold', async () => {
    const { discord, guild } = world;
    const settings = (options: Record<string, string | number | boolean>) =>
      discord.runCommand({
        user: guild.admin,
        guildId: guild.id,
        channelId: guild.textChannelId,
        command: 'voice',
        subcommand: 'settings',
        options,
      });
    refuseNextAnswer(discord);
    const answer = await settings({ idle_minutes: 7 }).reply();
    expect(answer.content).toMatch(/^Saved: .*idle.*7/i);
    expect((await settings({}).reply()).content).toMatch(/7 min/);
    await settings({ idle_minutes: 10 }).reply();
  });

  it('posts transcripts in a thread when the server enables them', async () => {
    const { discord, guild } = world;
    const enable = discord.runCommand({
      user: guild.admin,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'settings',
      options: { transcripts: true },
    });
    expect((await enable.reply()).content).toContain('Transcripts:** on');
    await joinVoice();
    await discord.voice.speakTone(guild.id, guild.member.id, { hz: 500, ms: 500, amplitude: 0.5 });
    await discord.waitForMessage(guild.textChannelId, (message) => message.content.startsWith('📝 Transcript'));
    const thread = await discord.waitFor(
      () => discord.state.guilds.get(guild.id)?.channels.find((channel) => channel.type === 11 && channel.parentId === guild.textChannelId),
      10_000,
      'the transcript thread',
    );
    // The member's half second, as the gateway heard it: on a busy machine the bot feeds silence where a
    // packet comes late (as it must, in real time), so the turn may run a little longer (0.6 or 0.7 s
    // with the suite beside two busy loops). The bot's line answers that same turn.
    // Each line is named: the member by name and mention, the bot by its name.
    const line = await discord.waitForMessage(
      thread.id,
      (message) => message.content.startsWith(`**member** (<@${guild.member.id}>): (`) && message.content.includes(' s of speech)'),
      15_000,
    );
    const heard = /\(([\d.]+) s of speech\)/.exec(line.content)![1]!;
    expect(Number(heard)).toBeGreaterThanOrEqual(0.5);
    expect(Number(heard)).toBeLessThan(1);
    await discord.waitForMessage(
      thread.id,
      (message) => message.content.startsWith(`**video-voice-bot**: Echo of ${heard} seconds.`),
      15_000,
    );
  });

  it('posts no transcript when the server has them off', async () => {
    const { discord, guild } = world;
    const disable = discord.runCommand({
      user: guild.admin,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'settings',
      options: { transcripts: false },
    });
    expect((await disable.reply()).content).toContain('Transcripts:** off');
    const threads = () => discord.state.guilds.get(guild.id)?.channels.filter((channel) => channel.type === 11) ?? [];
    const threadLines = () => threads().flatMap((thread) => discord.messages(thread.id));
    const linesBefore = threadLines().length;
    const threadsBefore = threads().length;
    await joinVoice();
    const since = discord.messages(guild.textChannelId).length;
    await discord.voice.speakTone(guild.id, guild.member.id, { hz: 500, ms: 500, amplitude: 0.5 });
    // The whole turn: the echo played to its end (its transcript is final long before).
    await discord.voice.waitForBotSpeaking(
      guild.id,
      (events) => events.some((event) => event.speaking !== 0) && events.at(-1)?.speaking === 0,
      15_000,
    );
    expect(audible(discord.voice.botAudio(guild.id)).length).toBeGreaterThanOrEqual(20);
    // The bot's posts to the channel go out in order: a transcript would come before the leave notice.
    const leave = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'leave',
    });
    await leave.reply();
    await discord.waitForMessage(guild.textChannelId, (message) => message.content.startsWith('Stopped listening'));
    expect(
      discord
        .messages(guild.textChannelId)
        .slice(since)
        .filter((message) => message.content.startsWith('📝')),
    ).toEqual([]);
    expect(threads()).toHaveLength(threadsBefore);
    expect(threadLines()).toHaveLength(linesBefore);
  });

  it('says once that it may not open a transcript thread, and posts no anchor per line', async () => {
    const { discord, guild } = world;
    const enable = discord.runCommand({
      user: guild.admin,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'settings',
      options: { transcripts: true },
    });
    await enable.reply();
    discord.denyBotPermission(guild.textChannelId, 'createPublicThreads');
    try {
      const since = discord.messages(guild.textChannelId).length;
      await joinVoice();
      const played = (count: number) => (events: readonly { speaking: number }[]) =>
        events.filter((event) => event.speaking !== 0).length >= count && events.at(-1)?.speaking === 0;
      await discord.voice.speakTone(guild.id, guild.member.id, { hz: 500, ms: 500, amplitude: 0.5 });
      await discord.waitForMessage(guild.textChannelId, (message) => message.content.includes('**Create Public Threads**'));
      await discord.voice.waitForBotSpeaking(guild.id, played(1), 15_000);
      await discord.voice.speakTone(guild.id, guild.member.id, { hz: 500, ms: 500, amplitude: 0.5 });
      await discord.voice.waitForBotSpeaking(guild.id, played(2), 15_000);
      const leave = discord.runCommand({
        user: guild.member,
        guildId: guild.id,
        channelId: guild.textChannelId,
        command: 'voice',
        subcommand: 'leave',
      });
      await leave.reply();
      await discord.waitForMessage(guild.textChannelId, (message) => message.content.startsWith('Stopped listening'));
      const posted = discord
        .messages(guild.textChannelId)
        .slice(since)
        .map((message) => message.content);
      expect(posted.filter((content) => content.startsWith('📝'))).toHaveLength(1);
      expect(posted.filter((content) => content.includes('Create Public Threads'))).toHaveLength(1);
    } finally {
      discord.restoreBotPermissions(guild.textChannelId);
      const disable = discord.runCommand({
        user: guild.admin,
        guildId: guild.id,
        channelId: guild.textChannelId,
        command: 'voice',
        subcommand: 'settings',
        options: { transcripts: false },
      });
      await disable.reply();
    }
  });

  it('refuses voice settings changes from members without Manage Server, naming the rule', async () => {
    const { discord, guild } = world;
    const run = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'settings',
      options: { transcripts: false },
    });
    const reply = await run.reply();
    expect(reply.flags & 64).toBe(64);
    expect(reply.content).toContain('Manage Server');
  });

  it("records voice settings changes in the server's change history, with who and when", async () => {
    const { discord, guild } = world;
    const change = discord.runCommand({
      user: guild.admin,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'settings',
      options: { voice: 'Ara', idle_minutes: 7 },
    });
    expect((await change.reply()).content).toContain('**Voice:** ara');
    const show = discord.runCommand({
      user: guild.admin,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'config',
      subcommand: 'show',
    });
    expect((await show.reply()).content).toMatch(
      new RegExp(`<t:\\d+:R> <@${guild.admin.id}> changed voice settings: voice ara, idle_minutes 7`),
    );
  });

  it('takes instructions as long as the option allows and still fits its answers in a Discord message', async () => {
    const { discord, guild } = world;
    const instructions = `Speak like a lighthouse keeper. ${'Keep it brief. '.repeat(200)}`.slice(0, 2000);
    const change = discord.runCommand({
      user: guild.admin,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'settings',
      options: { instructions },
    });
    const saved = await change.reply();
    expect(saved.content).toContain('**Instructions:** Speak like a lighthouse keeper.');
    expect(saved.content).toContain('(2,000 characters)');
    const show = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'settings',
    });
    expect((await show.reply()).content).toContain('**Instructions:** Speak like a lighthouse keeper.');
  });

  it('says so in the voice channel when a video of the server finishes', async () => {
    const { discord, emulator, guild } = world;
    // A fast gateway: the forced turn is over (response.done) long before the bot has played it.
    emulator.realtime.options.paceFactor = 20;
    try {
      await joinVoice();
      const run = discord.runCommand({
        user: guild.member,
        guildId: guild.id,
        channelId: guild.textChannelId,
        command: 'video',
        subcommand: 'generate',
        options: { prompt: 'a quiet harbour' },
      });
      await run.response();
      // Not the line the join began with (that the bot listens): the notice of this video.
      const { event, session } = await emulator.realtime.waitForClientEvent(
        (candidate) => candidate.type === 'conversation.item.create' && JSON.stringify(candidate).includes('a quiet harbour'),
        20_000,
      );
      expect(event.event).toMatchObject({
        item: {
          type: 'force_message',
          role: 'assistant',
          content: [{ type: 'output_text', text: expect.stringContaining('a quiet harbour') }],
        },
      });
      // The forced message is a whole turn: wait until the gateway ended it (response.done) and the bot has
      // played it to the end, and only then look for a response.create sent after it.
      await discord.voice.waitForBotSpeaking(
        guild.id,
        (events) => events.some((entry) => entry.speaking !== 0) && events.at(-1)?.speaking === 0,
        20_000,
      );
      expect(session.serverEvents.some((entry) => entry.at >= event.at && entry.event.type === 'response.done')).toBe(true);
      expect(analyzeTone(joined(audible(discord.voice.botAudio(guild.id)))).dominantHz).toBeCloseTo(FORCE_MESSAGE_TONE_HZ, -1);
      expect(session.clientEvents.filter((entry) => entry.at >= event.at && entry.event.type === 'response.create')).toEqual([]);
    } finally {
      emulator.realtime.options.paceFactor = 1.25;
    }
  });

  it('survives a voice connection error: it reconnects, keeps listening and keeps answering commands', async () => {
    const { bot, discord, guild } = world;
    await joinVoice();
    // The voice server goes away: the bot's socket is closed with a code that makes it rejoin, and its
    // next two connections are refused (a websocket error, emitted by the voice connection).
    discord.voice.refuseConnections(2);
    discord.voice.disconnectBot(guild.id, 4006, 'session no longer valid');
    await bot.waitForLog((line) => line.msg === 'voice connection error', 10_000);
    await discord.voice.waitForBotConnection(guild.id, 15_000);
    expect(discord.voice.refusedConnections).toBe(2);
    const settings = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'settings',
    });
    expect((await settings.reply()).content).toContain('**Voice:**');
    await speakAndHear(world, guild.member, 520);
    expect(discord.voice.botPacketProblems(guild.id)).toMatchObject({ unencrypted: 0, daveUndecryptable: 0 });
    expect(bot.child.exitCode).toBeNull();
  });

  it('ends the conversation when a moderator disconnects it, says so, and can join again', async () => {
    const { bot, discord, guild } = world;
    await joinVoice();
    const since = bot.logs.length;
    discord.disconnectBotFromVoice(guild.id);
    await discord.waitForMessage(
      guild.textChannelId,
      (message) => message.content === `Stopped listening in <#${guild.voiceChannelId}> (I was disconnected from the voice channel).`,
    );
    // The conversation, realtime session included, is over.
    await bot.waitForLog((line) => line.msg === 'voice session state' && line.to === 'closed' && bot.logs.indexOf(line) >= since, 10_000);
    await discord.voice.waitForBotDisconnect(guild.id);
    await joinVoice();
    await speakAndHear(world, guild.member, 450);
  });

  it('stays while someone it has no member data for is still in the channel', async () => {
    const { discord, guild } = world;
    // Not a member the stand-in lists in GUILD_CREATE, and voice states without `member`: as real Discord
    // does to a bot without the members intent (GUILD_CREATE lists only a few members).
    const listener = discord.createUser();
    discord.joinVoice(listener, guild.id, guild.voiceChannelId);
    await joinVoice();
    discord.leaveVoice(guild.member, guild.id);
    // Still listening: the one left in the channel is heard and answered.
    await speakAndHear(world, listener, 610);
    expect(discord.botVoiceChannel(guild.id)).toBe(guild.voiceChannelId);
    discord.leaveVoice(listener, guild.id);
    await discord.waitForMessage(guild.textChannelId, (message) => message.content.includes('the channel is empty'));
  });

  it('leaves when everyone else has left the channel', async () => {
    const { discord, guild } = world;
    await joinVoice();
    discord.leaveVoice(guild.member, guild.id);
    await discord.waitFor(() => (discord.botVoiceChannel(guild.id) ? undefined : true), 10_000, 'the bot leaving an empty channel');
    await discord.waitForMessage(guild.textChannelId, (message) => message.content.includes('the channel is empty'));
  });
});

describe('voice conversations under DAVE end-to-end encryption', () => {
  const turns = (session: { serverEvents: readonly { event: { type?: unknown } }[] }) =>
    session.serverEvents.filter((entry) => entry.event.type === 'input_audio_buffer.committed').length;
  const NOT_SETTLED = ' 🔒 This call is end-to-end encrypted; its voice privacy code is not settled yet.';

  /**
   * Two members make the call's group before the bot comes, so the bot is added with a Welcome, which
   * the call holds back: /voice join answers before the bot holds the call's keys. Returns the held
   * Welcome and the conversation's realtime session.
   */
  async function joinWithWelcomeHeld(): Promise<{ held: HeldWelcome; session: RealtimeSession }> {
    const { discord, emulator, guild } = world;
    discord.joinVoice(guild.admin, guild.id, guild.voiceChannelId);
    discord.joinVoice(guild.member, guild.id, guild.voiceChannelId);
    await discord.voice.dave.waitForMember(guild.id, guild.member.id, (state) => state.sendingEpoch !== undefined);
    const held = discord.voice.dave.holdNextWelcome(guild.id, discord.botUserId, guild.voiceChannelId);
    const earlier = [...emulator.realtime.sessions];
    const run = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'join',
    });
    expect((await run.reply()).content).toBe(`Joined <#${guild.voiceChannelId}>.${NOT_SETTLED}`);
    const { session } = await emulator.realtime.waitForClientEvent(
      (event, candidate) => event.type === 'session.update' && !earlier.includes(candidate),
      10_000,
    );
    await held.held;
    return { held, session };
  }

  const spokenSeconds = (entry: { event: { transcript?: unknown } } | undefined) =>
    Number(/\(([\d.]+) s of speech\)/.exec(String(entry?.event.transcript))?.[1]);

  it('hears a member whole while others join and leave mid-sentence (the keys rotate), and every member decrypts its answers', async () => {
    const { discord, emulator, guild } = world;
    await joinVoice();
    const session = emulator.realtime.sessions.at(-1)!;
    const transcripts = () =>
      session.serverEvents.filter((entry) => entry.event.type === 'conversation.item.input_audio_transcription.completed');
    const before = discord.voice.dave.state(guild.id).epoch ?? 0n;
    // The admin comes in while the member talks: a new epoch, new sender keys on every side.
    const first = discord.voice.speakTone(guild.id, guild.member.id, { hz: 440, ms: 1500, amplitude: 0.5 });
    discord.joinVoice(guild.admin, guild.id, guild.voiceChannelId);
    await first;
    const answer = await discord.voice.waitForBotAudio(guild.id, (received) => audible(received).length >= 60, 15_000);
    expect(analyzeTone(joined(audible(answer))).dominantHz).toBeCloseTo(440, -1);
    expect(spokenSeconds(transcripts()[0])).toBeGreaterThan(1.3);
    const admin = await discord.voice.dave.waitForMember(guild.id, guild.admin.id, (state) => state.stats.decrypted >= 60);
    expect(admin.stats).toMatchObject({ unencrypted: 0, undecryptable: 0 });
    // And leaves while the member talks again: the group shrinks, the keys rotate once more.
    await discord.voice.waitForBotSpeaking(guild.id, (events) => events.at(-1)?.speaking === 0, 15_000);
    discord.voice.clearBotAudio(guild.id);
    const second = discord.voice.speakTone(guild.id, guild.member.id, { hz: 620, ms: 1500, amplitude: 0.5 });
    discord.leaveVoice(guild.admin, guild.id);
    await second;
    const again = await discord.voice.waitForBotAudio(guild.id, (received) => audible(received).length >= 60, 15_000);
    expect(analyzeTone(joined(audible(again))).dominantHz).toBeCloseTo(620, -1);
    await emulator.realtime.waitForServerEvent(
      (candidate, which) =>
        which === session && candidate.type === 'conversation.item.input_audio_transcription.completed' && transcripts().length >= 2,
      10_000,
    );
    expect(spokenSeconds(transcripts()[1])).toBeGreaterThan(1.3);
    expect(discord.voice.dave.state(guild.id).epoch).toBeGreaterThan(before + 1n);
    const member = discord.voice.dave.member(guild.id, guild.member.id)!;
    expect(member.stats).toMatchObject({ unencrypted: 0, undecryptable: 0 });
    expect(member.stats.decrypted).toBeGreaterThanOrEqual(120);
    expect(discord.voice.botPacketProblems(guild.id)).toMatchObject({ unencrypted: 0, daveUndecryptable: 0 });
  });

  it('hears nothing of a member it holds no key for yet (its Welcome comes late), then hears that member', async () => {
    const { discord, guild } = world;
    const { held, session } = await joinWithWelcomeHeld();
    // The member was talking already and goes on, with a key the bot does not hold yet: Discord
    // forwards those frames to the bot all the same.
    await discord.voice.speakTone(guild.id, guild.member.id, { hz: 300, ms: 800, amplitude: 0.5 }, { waitForBotKey: false });
    held.release();
    await discord.voice.waitForBotConnection(guild.id);
    discord.voice.clearBotAudio(guild.id);
    await discord.voice.speakTone(guild.id, guild.member.id, { hz: 520, ms: 500, amplitude: 0.5 });
    const frames = await discord.voice.waitForBotAudio(guild.id, (received) => audible(received).length >= 20, 15_000);
    // The gateway heard one turn: the half second the member said once the bot could decrypt it. Frames
    // it could not decrypt must not reach the gateway as sound (they would be heard as loud noise).
    const transcripts = session.serverEvents.filter(
      (entry) => entry.event.type === 'conversation.item.input_audio_transcription.completed',
    );
    expect(transcripts).toHaveLength(1);
    // Had the 0.8 s it could not decrypt reached the gateway, the turn would be 1.3 s at least; the half
    // second alone runs longer only where late packets were fed as silence (1.1 s seen beside two busy loops).
    expect(spokenSeconds(transcripts[0])).toBeLessThan(1.3);
    expect(analyzeTone(joined(audible(frames))).dominantHz).toBeCloseTo(520, -1);
  });

  it("holds back an answer that comes before it holds the call's keys, plays it once it does, and never plays in the clear", async () => {
    const { discord, emulator, guild } = world;
    const { held } = await joinWithWelcomeHeld();
    // A video finishes while the bot waits for its Welcome: the model's spoken notice arrives whole.
    const run = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'video',
      subcommand: 'generate',
      options: { prompt: 'a lantern at dusk' },
    });
    await run.response();
    const { event, session } = await emulator.realtime.waitForClientEvent(
      (candidate) => candidate.type === 'conversation.item.create',
      20_000,
    );
    await emulator.realtime.waitForServerEvent(
      (candidate, which) =>
        which === session &&
        candidate.type === 'response.done' &&
        session.serverEvents.some((entry) => entry.event === candidate && entry.at >= event.at),
      20_000,
    );
    expect(audible(discord.voice.botAudio(guild.id))).toEqual([]);
    held.release();
    const frames = await discord.voice.waitForBotAudio(guild.id, (received) => audible(received).length >= 20, 15_000);
    expect(analyzeTone(joined(audible(frames))).dominantHz).toBeCloseTo(FORCE_MESSAGE_TONE_HZ, -1);
    expect(discord.voice.botPacketProblems(guild.id)).toMatchObject({ unencrypted: 0, daveUndecryptable: 0 });
  });

  it('stops hearing a member whose frames it cannot decrypt (a stale key), and hears the member again once the key is good', async () => {
    const { discord, emulator, guild } = world;
    await joinVoice();
    const session = emulator.realtime.sessions.at(-1)!;
    const failuresBefore = total(await metrics(), 'bot_voice_decrypt_failures_total');
    discord.voice.dave.staleKey(guild.id, guild.member.id);
    await discord.voice.speakTone(guild.id, guild.member.id, { hz: 300, ms: 1500, amplitude: 0.5 });
    discord.voice.dave.staleKey(guild.id, guild.member.id, false);
    // @discordjs/voice gives up after 36 failures in a row: it reports op 31 and rebuilds its session.
    await discord.voice.dave.waitForEvent(guild.id, (event) => event.type === 'invalidReport' && event.userId === discord.botUserId);
    await discord.voice.waitForBotConnection(guild.id);
    await speakAndHear(world, guild.member, 520);
    expect(turns(session)).toBe(1);
    // The operator sees the frames that failed (each one the library could not decrypt, and any after).
    expect(total(await metrics(), 'bot_voice_decrypt_failures_total') - failuresBefore).toBeGreaterThanOrEqual(36);
  });

  it('with transition id 0 as its last transition, rebuilds its DAVE session after frames it cannot decrypt instead of failing on each', async () => {
    const { bot, discord, emulator, guild } = world;
    discord.voice.dave.zeroNextTransitionId(guild.id, guild.voiceChannelId);
    await joinVoice();
    expect(discord.voice.dave.state(guild.id).lastTransitionId).toBe(0);
    const session = emulator.realtime.sessions.at(-1)!;
    const since = bot.logs.length;
    discord.voice.dave.staleKey(guild.id, guild.member.id);
    await discord.voice.speakTone(guild.id, guild.member.id, { hz: 300, ms: 1500, amplitude: 0.5 });
    discord.voice.dave.staleKey(guild.id, guild.member.id, false);
    // Past 36 failures @discordjs/voice 0.19.2 throws instead of recovering (its last transition id, 0, is
    // falsy), which ends the receive stream. The bot recovers in its place, once: it reports op 31 and is
    // added to the group again, as the library does for any other transition id.
    await discord.voice.dave.waitForEvent(
      guild.id,
      (event) => event.type === 'invalidReport' && event.userId === discord.botUserId && event.transitionId === 0,
    );
    await discord.voice.waitForBotConnection(guild.id);
    await speakAndHear(world, guild.member, 520);
    expect(turns(session)).toBe(1);
    const logs = bot.logs.slice(since);
    expect(logs.filter((line) => line.msg === 'a voice receive stream failed; the speaker is subscribed again')).toHaveLength(1);
    expect(logs.some((line) => typeof line.msg === 'string' && line.msg.startsWith('DAVE decryption kept failing'))).toBe(true);
  });

  it('rejoins the channel when members stay undecryptable, and hears them again without losing the conversation', async () => {
    const { bot, discord, emulator, guild } = world;
    // The bot's Welcome never comes: its DAVE session stays without keys, and nothing in the library
    // changes that.
    const { session } = await joinWithWelcomeHeld();
    const sessions = emulator.realtime.sessions.length;
    const since = bot.logs.length;
    const stoppedNotices = () =>
      discord.messages(guild.textChannelId).filter((message) => message.content.startsWith('Stopped listening')).length;
    const stoppedBefore = stoppedNotices();
    const speaking = discord.voice.speakTone(guild.id, guild.member.id, { hz: 300, ms: 7000, amplitude: 0.5 }, { waitForBotKey: false });
    const rejoined = await bot.waitForLog(
      (line) => typeof line.msg === 'string' && line.msg.startsWith("members' voice has not decrypted for a while"),
      15_000,
    );
    expect(rejoined).toMatchObject({ withoutKey: expect.any(Number) });
    await speaking;
    await discord.voice.waitForBotConnection(guild.id);
    // What the bot heard of the long utterance after rejoining may still be answered (at 300 Hz): the
    // answer to the new one is told apart by its tone.
    discord.voice.clearBotAudio(guild.id);
    await discord.voice.speakTone(guild.id, guild.member.id, { hz: 520, ms: 500, amplitude: 0.5 });
    await discord.voice.waitForBotAudio(guild.id, (received) => byTone(received, 520, 300).length >= 20, 15_000);
    // The same conversation: its realtime session was kept, and the channel heard of no interruption.
    expect(emulator.realtime.sessions).toHaveLength(sessions);
    expect(session.closedAt).toBeUndefined();
    expect(stoppedNotices()).toBe(stoppedBefore);
    expect(
      bot.logs.slice(since).filter((line) => typeof line.msg === 'string' && line.msg.startsWith("members' voice has not decrypted")),
    ).toHaveLength(1);
  });
});

describe('voice conversations with DAVE off', () => {
  let plain: World;
  beforeAll(async () => {
    plain = await startWorld({ standIn: { dave: false } });
  }, 60_000);
  afterAll(() => plain?.stop());

  it('says the call is not end-to-end encrypted, and hears and answers as in an encrypted one', async () => {
    const { discord, guild } = plain;
    discord.joinVoice(guild.member, guild.id, guild.voiceChannelId);
    const run = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'join',
    });
    expect((await run.reply()).content).toBe(
      `Joined <#${guild.voiceChannelId}>. This call is not end-to-end encrypted (someone in it has a client without DAVE, or the voice server offered none).`,
    );
    await discord.voice.waitForBotConnection(guild.id);
    await speakAndHear(plain, guild.member, 440);
    expect(discord.voice.botConnection(guild.id)?.dave).toBeUndefined();
    expect(discord.voice.botPacketProblems(guild.id)).toEqual({ undecryptable: 0, undecodable: 0, unencrypted: 0, daveUndecryptable: 0 });
  });
});

describe('a short realtime session limit', () => {
  it('is crossed without leaving the channel or losing a turn: the bot learns it and renews at a quiet moment', async () => {
    const { discord, emulator, guild } = world;
    // The emulator reads its session limit as each session opens: this test's sessions alone are short.
    const usualLimit = emulator.config.timing.realtime_session_max_ms;
    emulator.config.timing.realtime_session_max_ms = 4000;
    const earlier = new Set(emulator.realtime.sessions);
    const earlierMessages = new Set(discord.messages(guild.textChannelId));
    const opened = (others: RealtimeSession[] = []) =>
      emulator.realtime.waitForClientEvent(
        (event, session) => event.type === 'session.update' && !earlier.has(session) && !others.includes(session),
        10_000,
      );
    try {
      const firstOpened = opened();
      await joinVoice();
      const first = (await firstOpened).session;
      // The first session runs into the limit, which the gateway announces before closing it; the bot reopens at once.
      const second = (await opened([first])).session;
      await speakAndHear(world, guild.member, 400);
      // Knowing the limit now, the bot replaces the second session at a quiet moment before it.
      const third = (await opened([first, second])).session;
      await speakAndHear(world, guild.member, 600);
      expect(second.serverEvents.filter((entry) => entry.event.type === 'error')).toEqual([]);
      // Each turn was heard whole in its own session (and answered: the echo was heard).
      for (const session of [second, third]) {
        const turns = session.serverEvents.filter((entry) => entry.event.type === 'conversation.item.input_audio_transcription.completed');
        expect(turns).toHaveLength(1);
        expect(Number(/\(([\d.]+) s of speech\)/.exec(String(turns[0]?.event.transcript))?.[1])).toBeGreaterThanOrEqual(0.5);
      }
      expect(discord.botVoiceChannel(guild.id)).toBe(guild.voiceChannelId);
      expect(
        discord
          .messages(guild.textChannelId)
          .filter((message) => !earlierMessages.has(message) && message.content.startsWith('Stopped listening')),
      ).toEqual([]);
    } finally {
      emulator.config.timing.realtime_session_max_ms = usualLimit;
    }
  });
});

describe('a server whose own gateway key goes away', () => {
  const serverKey = 'voice-server-key-5c1e7a90';
  let keyed: World;
  beforeAll(async () => {
    keyed = await startWorld({
      emulator: { keys: { [serverKey]: { group: 'default', quota_usd: 20 } }, timing: { realtime_session_max_ms: 3000 } },
      env: { GATEWAY_API_KEY: '', KEY_ENCRYPTION_SECRET: 'voice-test-encryption-secret-42' },
    });
  }, 60_000);
  afterAll(() => keyed?.stop());

  it('stops when its realtime session cannot be reopened, says why in the channel, and leaves', async () => {
    const { discord, guild } = keyed;
    const form = await discord
      .runCommand({ user: guild.admin, guildId: guild.id, channelId: guild.textChannelId, command: 'config', subcommand: 'key' })
      .modal();
    await discord
      .submitModal({
        user: guild.admin,
        guildId: guild.id,
        channelId: guild.textChannelId,
        customId: form.customId,
        fields: { key: serverKey },
      })
      .reply();
    discord.joinVoice(guild.member, guild.id, guild.voiceChannelId);
    const join = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'join',
    });
    expect((await join.reply()).content).toMatch(new RegExp(`^Joined <#${guild.voiceChannelId}>\\. 🔒`));
    await discord
      .runCommand({ user: guild.admin, guildId: guild.id, channelId: guild.textChannelId, command: 'config', subcommand: 'key-clear' })
      .reply();
    // The session ends at the gateway's limit; without a key it cannot be reopened.
    const notice = await discord.waitForMessage(guild.textChannelId, (message) => message.content.startsWith('Stopped listening'), 15_000);
    expect(notice.content).toBe(
      `Stopped listening in <#${guild.voiceChannelId}>. This server has no gateway key yet: a server admin can add one with \`/config key\`.`,
    );
    await discord.waitFor(() => (discord.botVoiceChannel(guild.id) ? undefined : true), 10_000, 'the bot leaving voice');
  });
});
