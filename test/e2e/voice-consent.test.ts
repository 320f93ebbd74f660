import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Message, User } from 'discord-standin';
import type { RealtimeSession } from '../../src/emulator/realtime/session.ts';
import { forcedLines } from '../support/realtime-lines.ts';
import { backMessages, beforeRestart, sendBotAway } from '../support/voice-restart.ts';
import { startWorld, type World } from '../support/world.ts';

// Members decide whether the bot hears them, on the stand-ins: the join message and the bot's first
// spoken line say that it listens and how not to be heard; a member who ran /voice ignore-me is never
// heard (nothing loud of them reaches the realtime session) while the others are, and the choice holds
// across a restart; in an opt-in conversation only the member who brought the bot in is heard until the
// others agree (the join message's button, or /voice listen-to-me).

/** An append at least this loud (of full scale) carries speech; the bot's silence is 0. */
const LOUD = 0.1;
const SPOKEN_OPEN = 'I send what you say here to the voice model; not to be heard, use voice ignore me.';

let world: World;
/** Who the test brought into the voice channel, to take out after it. */
const inVoice: User[] = [];
beforeAll(async () => {
  world = await startWorld();
  // Short lines: a force_message is a tone 5 ms per character.
  world.emulator.realtime.options.toneMsPerCharacter = 5;
}, 60_000);
afterAll(() => world?.stop());
afterEach(async () => {
  const { discord, guild } = world;
  await sendBotAway(world);
  for (const user of inVoice.splice(0)) discord.leaveVoice(user, guild.id);
  await run(guild.admin, 'listen-to-me');
  await run(guild.admin, 'settings', { consent: 'open' });
});

/** `user` runs a /voice subcommand; its answer's text. */
async function run(user: User, subcommand: string, options: Record<string, string> = {}): Promise<string> {
  const { discord, guild } = world;
  return (
    await discord.runCommand({ user, guildId: guild.id, channelId: guild.textChannelId, command: 'voice', subcommand, options }).reply()
  ).content;
}

/** `people` join the voice channel, then the first brings the bot in; the conversation's realtime session. */
async function joinWith(...people: User[]): Promise<RealtimeSession> {
  const { discord, emulator, guild } = world;
  for (const user of people) {
    discord.joinVoice(user, guild.id, guild.voiceChannelId);
    inVoice.push(user);
  }
  const before = emulator.realtime.sessions.length;
  expect(await run(people[0]!, 'join')).toMatch(/^Joined/);
  await discord.voice.waitForBotConnection(guild.id);
  return emulator.realtime.sessions[before]!;
}

/** The bot's latest message saying it listens (it joined, or came back). */
function listeningMessage(): Message {
  const { discord, guild } = world;
  const message = discord
    .messages(guild.textChannelId)
    .findLast(
      (candidate) =>
        candidate.content.startsWith(`🎙️ Listening in <#${guild.voiceChannelId}>`) || candidate.content.startsWith('🎙️ Back in'),
    );
  if (!message) throw new Error('the bot said nowhere that it listens');
  return message;
}

const loudSince = (session: RealtimeSession, at: number) => session.appendLevels.filter((level) => level.at >= at && level.peak >= LOUD);

/**
 * `silent` speaks, then `heard` does: once `heard`'s speech reached the session (a loud append), nothing
 * loud reached it before, while only `silent` spoke. Packets of one channel arrive in order, so the first
 * speaker's audio, had it been heard, would have been appended first.
 */
async function onlySecondHeard(session: RealtimeSession, silent: User, heard: User): Promise<void> {
  const { discord, emulator, guild } = world;
  const start = Date.now();
  await discord.voice.speakTone(guild.id, silent.id, { hz: 440, ms: 600, amplitude: 0.5 });
  const second = Date.now();
  await discord.voice.speakTone(guild.id, heard.id, { hz: 660, ms: 600, amplitude: 0.5 });
  await emulator.realtime.waitForClientEvent((_event, candidate) => candidate === session && loudSince(session, second).length > 0, 10_000);
  expect(loudSince(session, start).filter((level) => level.at < second)).toEqual([]);
}

/** `user` speaks, and their speech reaches the session. */
async function heardSpeaking(session: RealtimeSession, user: User): Promise<void> {
  const { discord, emulator, guild } = world;
  const start = Date.now();
  await discord.voice.speakTone(guild.id, user.id, { hz: 440, ms: 600, amplitude: 0.5 });
  await emulator.realtime.waitForClientEvent((_event, candidate) => candidate === session && loudSince(session, start).length > 0, 10_000);
}

describe('voice consent', () => {
  it('says in the join message and aloud that it listens, whom it hears and how not to be heard', async () => {
    const session = await joinWith(world.guild.member);
    const message = listeningMessage();
    expect(message.content).toContain('sent to the voice model');
    expect(message.content).toContain('Consent: open');
    expect(message.content).toMatch(/Not to be heard: <\/voice ignore-me:\d+>\./);
    // The join was answered after its first line was said.
    expect(forcedLines(session)).toEqual([SPOKEN_OPEN]);
  }, 60_000);

  it('never sends an ignored member’s speech to the session, and still the others’; the choice holds after a restart', async () => {
    const { guild } = world;
    const answer = await run(guild.admin, 'ignore-me');
    expect(answer).toMatch(/no longer hears you.*<\/voice listen-to-me:\d+>/s);
    const session = await joinWith(guild.member, guild.admin);
    await onlySecondHeard(session, guild.admin, guild.member);

    expect(await world.bot.stop('SIGTERM')).toBe(0);
    const before = beforeRestart(world);
    await world.restartBot();
    await world.discord.waitFor(() => (backMessages(world).length > before.backMessages ? true : undefined), 15_000, 'the bot back');
    expect(listeningMessage().content).toMatch(/<\/voice ignore-me:\d+>/);
    const resumed = world.emulator.realtime.sessions.at(-1)!;
    expect(resumed).not.toBe(session);
    await onlySecondHeard(resumed, guild.admin, guild.member);

    // Heard again from the moment they ask.
    expect(await run(guild.admin, 'listen-to-me')).toMatch(/hears you again.*<\/voice ignore-me:\d+>/s);
    await heardSpeaking(resumed, guild.admin);
  }, 120_000);

  it('stops hearing a member the moment they ask, mid-conversation', async () => {
    const { guild } = world;
    const session = await joinWith(guild.member, guild.admin);
    await heardSpeaking(session, guild.admin);
    await run(guild.admin, 'ignore-me');
    await onlySecondHeard(session, guild.admin, guild.member);
  }, 60_000);

  it('in opt-in mode hears only the member who brought it in, until the others agree by the button or the command', async () => {
    const { discord, guild } = world;
    expect(await run(guild.admin, 'settings', { consent: 'opt-in' })).toContain('**Who is heard:** opt-in');
    // Members who never chose anything.
    const [bringer, second, third] = ['bringer', 'second', 'third'].map((name) => discord.createUser({ guildId: guild.id, name }));
    const session = await joinWith(bringer!, second!, third!);
    const message = listeningMessage();
    expect(message.content).toContain('Consent: opt-in');
    expect(forcedLines(session)[0]).toContain('to agree');
    await onlySecondHeard(session, second!, bringer!);
    await onlySecondHeard(session, third!, bringer!);

    const pressed = await discord.clickButton({ user: second!, message, customId: 'voice:hear-me' }).reply();
    expect(pressed.content).toMatch(/hears you again/);
    await heardSpeaking(session, second!);
    await onlySecondHeard(session, third!, second!);

    await run(third!, 'listen-to-me');
    await heardSpeaking(session, third!);
  }, 90_000);
});
