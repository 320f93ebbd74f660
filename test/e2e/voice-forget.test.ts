import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { User } from 'discord-standin';
import type { RealtimeSession } from '../../src/emulator/realtime/session.ts';
import { isRecord } from '../../src/lib/json.ts';
import { scriptTurn, textMessages } from '../support/realtime-lines.ts';
import { beforeRestart, cameBack, endConversation, joinVoice } from '../support/voice-restart.ts';
import { startWorld, type World } from '../support/world.ts';

// Forgetting a member, with the bot as a process on the stand-ins: two members talk with it, each turn named
// for its member in the transcript thread; one runs /voice forget-me and their turn, the bot's answer to it
// and their transcript lines are gone: from the live realtime session, from the bot's messages, and from
// what the next start gives the new session. A member who leaves the server is forgotten the same way when
// the operator turned FORGET_MEMBERS_WHO_LEAVE on.

let world: World;
let bo: User;
beforeAll(async () => {
  world = await startWorld({ env: { FORGET_MEMBERS_WHO_LEAVE: 'on' } });
  // Short lines: a force_message or a scripted answer is a tone 5 ms per character.
  world.emulator.realtime.options.toneMsPerCharacter = 5;
  const { discord, guild } = world;
  bo = discord.createUser({ guildId: guild.id, name: 'Bo' });
  // Transcripts on, and every turn answered though two people are in the channel.
  const settings = discord.runCommand({
    user: guild.admin,
    guildId: guild.id,
    channelId: guild.textChannelId,
    command: 'voice',
    subcommand: 'settings',
    options: { transcripts: true, respond: 'always' },
  });
  expect((await settings.reply()).content).toContain('Transcripts:** on');
}, 60_000);
afterAll(() => world?.stop());
afterEach(async () => {
  await endConversation(world);
  world.discord.leaveVoice(bo, world.guild.id);
});

/** `speaker` says something (heard as `transcript`), and the bot's answer `answer` is done. */
async function exchange(session: RealtimeSession, speaker: User, transcript: string, answer: string): Promise<void> {
  const { discord, emulator, guild } = world;
  await scriptTurn(emulator.baseUrl, session, transcript, answer);
  await discord.voice.speakTone(guild.id, speaker.id, { hz: 440, ms: 600, amplitude: 0.5 });
  await emulator.realtime.waitForServerEvent(
    (event, candidate) => candidate === session && event.type === 'response.output_audio_transcript.done' && event.transcript === answer,
    15_000,
  );
}

function transcriptThreadId(): string {
  const { discord, guild } = world;
  const thread = discord.state.guilds
    .get(guild.id)
    ?.channels.filter((channel) => channel.type === 11 && channel.parentId === guild.textChannelId)
    .at(-1);
  if (!thread) throw new Error('no transcript thread');
  return thread.id;
}

/** Every message of the bot's in the text channel and its threads, as they stand. */
function botTexts(): string[] {
  const { discord, guild } = world;
  const channels = [guild.textChannelId, ...(discord.state.guilds.get(guild.id)?.channels.map((channel) => channel.id) ?? [])];
  return [...new Set(channels)].flatMap((channelId) => discord.messages(channelId).map((message) => message.content));
}

/** Ada's and Bo's exchanges, each line named in the transcript; resolves once all four are posted and recorded. */
async function adaAndBo(session: RealtimeSession): Promise<void> {
  const { discord, guild } = world;
  const mark = world.bot.logs.length;
  await exchange(session, guild.member, 'My name is Ada.', 'Nice to meet you, Ada.');
  await exchange(session, bo, 'I keep bees.', 'Bees are wonderful.');
  const thread = transcriptThreadId();
  for (const line of [
    `**member** (<@${guild.member.id}>): My name is Ada. · ✅ answered`,
    '**video-voice-bot**: Nice to meet you, Ada.',
    `**Bo** (<@${bo.id}>): I keep bees. · ✅ answered`,
    '**video-voice-bot**: Bees are wonderful.',
  ])
    await discord.waitForMessage(thread, (message) => message.content === line, 15_000);
  await world.bot.waitForLog(
    (line) => line.msg === 'voice conversation recorded' && line.turns === 4 && world.bot.logs.indexOf(line) >= mark,
    10_000,
  );
}

/** Whether anything of Ada's turn (her words, or the answer repeating her name) is in `session`'s context or instructions. */
function holdsAda(session: RealtimeSession): boolean {
  const instructions = session.clientEvents.flatMap(({ event }) =>
    event.type === 'session.update' && isRecord(event.session) ? [String(event.session.instructions)] : [],
  );
  return [...instructions, JSON.stringify(session.items)].some((text) => text.includes('Ada'));
}

describe('forgetting a member', () => {
  it('takes their turn and its answer out of the live session, the transcript and the record, and a restart brings none back', async () => {
    const { discord, guild } = world;
    discord.joinVoice(bo, guild.id, guild.voiceChannelId);
    const session = await joinVoice(world);
    await adaAndBo(session);
    expect(textMessages(session)).toEqual([]);
    const itemsBefore = session.items.length;

    const forget = discord.runCommand({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'voice',
      subcommand: 'forget-me',
    });
    const reply = await forget.reply();
    expect(reply.flags & 64).toBe(64);
    expect(reply.content).toBe(
      'Forgotten. 1 turn of yours was removed from the conversation I keep for restarts (my answers to them too); 2 transcript messages were deleted.',
    );
    // The live session no longer holds her turn nor the answer to it: two items fewer, Bo's kept.
    await discord.waitFor(() => (session.items.length === itemsBefore - 2 ? true : undefined), 10_000, 'the items deleted');
    expect(session.clientEvents.filter(({ event }) => event.type === 'conversation.item.delete')).toHaveLength(2);
    expect(holdsAda(session)).toBe(false);
    const thread = transcriptThreadId();
    expect(discord.messages(thread).map((message) => message.content)).toEqual([
      // The line the bot said as it joined (that it listens) is nobody's words: it stays.
      expect.stringContaining('not to be heard'),
      `**Bo** (<@${bo.id}>): I keep bees. · ✅ answered`,
      '**video-voice-bot**: Bees are wonderful.',
    ]);

    expect(await world.bot.stop('SIGTERM')).toBe(0);
    const before = beforeRestart(world);
    const bot = await world.restartBot();
    const resumed = await cameBack(world, bot, before, [
      { role: 'user', text: 'I keep bees.' },
      { role: 'assistant', text: 'Bees are wonderful.' },
    ]);
    expect(holdsAda(resumed)).toBe(false);
    expect(botTexts().some((text) => text.includes('Ada'))).toBe(false);
  }, 120_000);

  it('forgets a member who leaves the server the same way', async () => {
    const { discord, guild } = world;
    const leaver = discord.createUser({ guildId: guild.id, name: 'Cy' });
    discord.joinVoice(leaver, guild.id, guild.voiceChannelId);
    const session = await joinVoice(world);
    await exchange(session, leaver, 'I am Cyrus from Tulsa.', 'Hello Cyrus.');
    const thread = transcriptThreadId();
    await discord.waitForMessage(thread, (message) => message.content === '**video-voice-bot**: Hello Cyrus.', 15_000);
    const mark = world.bot.logs.length;

    discord.removeMember(guild.id, leaver);
    await world.bot.waitForLog((line) => line.msg === 'forgot a member' && world.bot.logs.indexOf(line) >= mark, 10_000);
    expect(session.items.some((item) => JSON.stringify(item).includes('Cyrus'))).toBe(false);
    expect(botTexts().some((text) => text.includes('Cyrus'))).toBe(false);
  }, 60_000);
});
