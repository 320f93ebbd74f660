import { expect } from 'vitest';
import { audible, type DiscordStandIn, type TestGuild } from 'discord-standin';
import type { RealtimeSession } from '../../src/emulator/realtime/session.ts';
import type { Emulator } from '../../src/emulator/server.ts';
import type { BotProcess } from './bot-process.ts';
import { forcedLines, scriptTurn, textMessages } from './realtime-lines.ts';

// A voice conversation across restarts of the bot as a process, as the end-to-end tests of it drive it: a
// member brings the bot in and talks with it, and after the next start the test checks that it came back
// with what was said. Shared by the restart tests (test/e2e/voice-restart.test.ts) and the deploy test
// (test/e2e/deploy.test.ts); sendBotAway also by test/e2e/voice-addressing.test.ts.

/** The bound: a conversation is back within this long of the bot being ready again. */
export const BACK_WITHIN_MS = 10_000;
export const RESTART_LINE = 'I am restarting now. I will be back in a moment.';
/** What the bot says when a conversation comes back: that it is back, and that it listens. */
export const BACK_LINE = 'I am back. Where were we? I send what you say here to the voice model; not to be heard, use voice ignore me.';

/** Where a conversation runs: the stand-ins, and the guild. */
export interface Place {
  discord: DiscordStandIn;
  emulator: Emulator;
  guild: TestGuild;
}

export interface Turn {
  role: string;
  text: string;
}

/** The member joins voice and brings the bot in; the conversation's realtime session. */
export async function joinVoice(place: Place): Promise<RealtimeSession> {
  const { discord, emulator, guild } = place;
  discord.joinVoice(guild.member, guild.id, guild.voiceChannelId);
  const before = emulator.realtime.sessions.length;
  const reply = await discord
    .runCommand({ user: guild.member, guildId: guild.id, channelId: guild.textChannelId, command: 'voice', subcommand: 'join' })
    .reply();
  expect(reply.content).toMatch(new RegExp(`^Joined <#${guild.voiceChannelId}>`));
  await discord.voice.waitForBotConnection(guild.id);
  // Answered once its first line (that the bot listens) was heard: what the bot plays next is new.
  discord.voice.clearBotAudio(guild.id);
  return emulator.realtime.sessions[before]!;
}

/** The member sends the bot away with /voice leave, when it is in voice, and waits for it to leave. */
export async function sendBotAway(place: Pick<Place, 'discord' | 'guild'>): Promise<void> {
  const { discord, guild } = place;
  if (!discord.botVoiceChannel(guild.id)) return;
  await discord
    .runCommand({ user: guild.member, guildId: guild.id, channelId: guild.textChannelId, command: 'voice', subcommand: 'leave' })
    .response();
  await discord.waitFor(() => (discord.botVoiceChannel(guild.id) ? undefined : true), 10_000, 'the bot leaving voice');
}

/** The member sends the bot away (when it is in voice) and leaves the channel: no conversation is left. */
export async function endConversation(place: Place): Promise<void> {
  await sendBotAway(place);
  place.discord.leaveVoice(place.guild.member, place.guild.id);
}

/** The member says something (heard as `transcript`), and the bot's answer `answer` is played to its end. */
export async function exchange(place: Place, session: RealtimeSession, transcript: string, answer: string): Promise<void> {
  const { discord, emulator, guild } = place;
  await scriptTurn(emulator.baseUrl, session, transcript, answer);
  discord.voice.clearBotAudio(guild.id);
  await discord.voice.speakTone(guild.id, guild.member.id, { hz: 440, ms: 600, amplitude: 0.5 });
  await emulator.realtime.waitForServerEvent(
    (event, candidate) => candidate === session && event.type === 'response.output_audio_transcript.done' && event.transcript === answer,
    15_000,
  );
  // The answer's tone is at least 200 ms: ten frames, most of them heard.
  await discord.voice.waitForBotAudio(guild.id, (frames) => audible(frames).length >= 8, 15_000);
}

/** Two exchanges, and `bot`'s record of all four turns written to the store; the turns. */
export async function twoExchanges(place: Place, bot: BotProcess, session: RealtimeSession): Promise<Turn[]> {
  const mark = bot.logs.length;
  await exchange(place, session, 'My name is Ada.', 'Nice to meet you, Ada.');
  await exchange(place, session, 'I keep bees.', 'Bees are wonderful.');
  await bot.waitForLog((line) => line.msg === 'voice conversation recorded' && line.turns === 4 && bot.logs.indexOf(line) >= mark);
  return [
    { role: 'user', text: 'My name is Ada.' },
    { role: 'assistant', text: 'Nice to meet you, Ada.' },
    { role: 'user', text: 'I keep bees.' },
    { role: 'assistant', text: 'Bees are wonderful.' },
  ];
}

/** What a test counts before a restart, to tell what the next start added. */
export interface BeforeRestart {
  sessions: number;
  backMessages: number;
}

export function beforeRestart(place: Place): BeforeRestart {
  return { sessions: place.emulator.realtime.sessions.length, backMessages: backMessages(place).length };
}

/**
 * After a start (call it once `bot` is ready): the bot is back in the voice channel within BACK_WITHIN_MS,
 * says so in the text channel (one message more than `before`), and its one new realtime session holds
 * `earlier` first and says "back" (BACK_LINE) once, having answered it. Returns that session.
 */
export async function cameBack(place: Place, bot: BotProcess, before: BeforeRestart, earlier: Turn[]): Promise<RealtimeSession> {
  const { discord, emulator, guild } = place;
  await discord.waitFor(
    () => (backMessages(place).length > before.backMessages ? true : undefined),
    BACK_WITHIN_MS,
    'the bot back in voice',
  );
  await bot.waitForLog((line) => line.msg === 'voice conversations brought back' && line.count === 1, BACK_WITHIN_MS);
  expect(discord.botVoiceChannel(guild.id)).toBe(guild.voiceChannelId);
  const resumed = emulator.realtime.sessions.slice(before.sessions);
  expect(resumed).toHaveLength(1);
  expect(textMessages(resumed[0]!)).toEqual(earlier);
  await waitForLine(emulator, resumed[0]!, BACK_LINE);
  // Said once (its answer done, nothing more asked of it), and written once.
  await emulator.realtime.waitForServerEvent(
    (event, candidate) => candidate === resumed[0] && event.type === 'response.done',
    BACK_WITHIN_MS,
  );
  expect(forcedLines(resumed[0]!)).toEqual([BACK_LINE]);
  expect(backMessages(place)).toHaveLength(before.backMessages + 1);
  return resumed[0]!;
}

/** Resolves once the bot has had `session` say `line` (a force_message). */
export function waitForLine(emulator: Emulator, session: RealtimeSession, line: string): Promise<unknown> {
  return emulator.realtime.waitForClientEvent(
    (_event, candidate) => candidate === session && forcedLines(session).includes(line),
    BACK_WITHIN_MS,
  );
}

/** The bot's messages in the text channel saying it is back in the voice channel. */
export function backMessages(place: Pick<Place, 'discord' | 'guild'>) {
  const { discord, guild } = place;
  return discord.messages(guild.textChannelId).filter((message) => message.content.startsWith(`🎙️ Back in <#${guild.voiceChannelId}>`));
}
