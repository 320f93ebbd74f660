// Who said what in a voice conversation, with the real libraries: discord.js and @discordjs/voice on the
// Discord stand-in, the realtime session on the emulator. Each turn is named for the members whose audio
// made it: the transcript thread says who spoke each line, and the stored conversation keeps their ids.

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TestGuild, User } from 'discord-standin';
import type { RealtimeSession } from '../../src/emulator/realtime/session.ts';
import { SUPPORTED_LOCALES } from '../../src/i18n/index.ts';
import { defaultVoiceSettings } from '../../src/settings/voice-settings.ts';
import {
  CONVERSATION_RECORDS,
  conversationRecordParser,
  type ConversationRecords,
  type RecordedTurn,
} from '../../src/voice/conversation-record.ts';
import type { VoiceService } from '../../src/voice/service.ts';
import { pollUntil } from '../support/poll.ts';
import { startVoiceServiceRig, type VoiceServiceRig } from '../support/voice-service-rig.ts';

/** The stand-in's bot: its display name is what it answers to. */
const BOT_NAME = 'video-voice-bot';

let rig: VoiceServiceRig;
let records: ConversationRecords;
let service: VoiceService;
/** The conversation of the test under way. */
let guild: TestGuild | undefined;

beforeAll(async () => {
  rig = await startVoiceServiceRig();
  records = rig.store.collection(CONVERSATION_RECORDS, conversationRecordParser(defaultVoiceSettings('svc'), SUPPORTED_LOCALES));
  service = rig.voiceService({ conversations: records });
}, 60_000);

afterEach(async () => {
  if (guild) await service.leave(guild.id, { why: 'asked', by: 'test' });
  guild = undefined;
});

afterAll(async () => {
  await service?.stopAll();
  await rig?.close();
});

/** A server with the member ("member") and Bo, both in its voice channel, with transcripts on. */
async function serverWithBo(): Promise<{ guild: TestGuild; bo: User }> {
  const created = rig.discord.createGuild();
  guild = created;
  const bo = rig.discord.createUser({ guildId: created.id, name: 'Bo' });
  await rig.settings.changeVoiceSettings(created.id, { transcripts: true }, created.admin.id);
  await rig.memberInVoice(created);
  await rig.memberInVoice(created, bo);
  return { guild: created, bo };
}

/** The member brings the bot in: the conversation's realtime session (with two people, it answers only turns that name it). */
async function join(server: TestGuild): Promise<RealtimeSession> {
  const before = rig.emulator.realtime.sessions.length;
  expect(await service.join(server.id, server.voiceChannelId, server.textChannelId, server.member.id)).toMatchObject({ ok: true });
  return rig.emulator.realtime.sessions[before]!;
}

/** The session's next turn is heard as `transcript`. */
async function script(session: RealtimeSession, transcript: string): Promise<void> {
  const response = await fetch(`${rig.emulator.baseUrl}/_emulator/realtime/script`, {
    method: 'POST',
    headers: { authorization: 'Bearer emulator-key', 'content-type': 'application/json' },
    body: JSON.stringify({ session_id: session.id, transcript }),
  });
  expect(response.status, await response.clone().text()).toBe(200);
}

/** Members speak at once, each for as long as given: one turn. */
async function speak(server: TestGuild, ...parts: [User, number][]): Promise<void> {
  await Promise.all(parts.map(([user, ms]) => rig.discord.voice.speakTone(server.id, user.id, { hz: 440, ms, amplitude: 0.5 })));
}

/** The turns of the server's stored conversation, once it holds `count` of them (it is written every 2 s at most). */
async function recordedTurns(server: TestGuild, count: number): Promise<RecordedTurn[]> {
  const record = await pollUntil({
    ask: () => records.get(server.id),
    found: (stored) => (stored && stored.turns.length >= count ? stored : undefined),
    intervalMs: 50,
    timeoutMs: 10_000,
    timeoutError: () => new Error(`the record did not reach ${count} turns`),
  });
  return record.turns;
}

/** The conversation's transcript thread, once opened. */
function transcriptThread(server: TestGuild): Promise<{ id: string }> {
  return rig.discord.waitFor(
    () =>
      rig.discord.state.guilds.get(server.id)?.channels.find((channel) => channel.type === 11 && channel.parentId === server.textChannelId),
    10_000,
    'the transcript thread',
  );
}

async function transcriptLine(server: TestGuild, content: string): Promise<void> {
  const thread = await transcriptThread(server);
  await rig.discord.waitForMessage(thread.id, (message) => message.content === content, 10_000);
}

describe('who said what', () => {
  it('names the member who spoke each turn in the transcript, and keeps their ids with the stored turns', async () => {
    const { guild: server, bo } = await serverWithBo();
    const session = await join(server);

    await script(session, 'I will have the soup');
    await speak(server, [server.member, 600]);
    await transcriptLine(server, `**member** (<@${server.member.id}>): I will have the soup · not answered (not addressed to me)`);
    await script(session, 'and I will have the salad');
    await speak(server, [bo, 600]);
    await transcriptLine(server, `**Bo** (<@${bo.id}>): and I will have the salad · not answered (not addressed to me)`);

    expect(await recordedTurns(server, 2)).toEqual([
      { speaker: 'user', text: 'I will have the soup', members: [server.member.id] },
      { speaker: 'user', text: 'and I will have the salad', members: [bo.id] },
    ]);
  }, 60_000);

  it('names both members of a turn they spoke together, the one heard most first, and labels the bot by its name', async () => {
    const { guild: server, bo } = await serverWithBo();
    const session = await join(server);

    await script(session, `${BOT_NAME}, which of us spoke`);
    await speak(server, [bo, 1_200], [server.member, 700]);
    await transcriptLine(
      server,
      `**Bo** (<@${bo.id}>) and **member** (<@${server.member.id}>): ${BOT_NAME}, which of us spoke · ✅ answered`,
    );
    expect((await recordedTurns(server, 1))[0]).toEqual({
      speaker: 'user',
      text: `${BOT_NAME}, which of us spoke`,
      members: [bo.id, server.member.id],
    });
    // The emulator's model answers with an echo: the bot's line is named by the bot's name.
    const thread = await transcriptThread(server);
    await rig.discord.waitForMessage(thread.id, (message) => message.content.startsWith(`**${BOT_NAME}**: `), 15_000);
    expect(rig.discord.messages(thread.id).some((message) => message.content.includes('**Voice**'))).toBe(false);
  }, 60_000);
});
