// Who said what in a voice conversation, with the real libraries: discord.js and @discordjs/voice on the
// Discord stand-in, the realtime session and the videos on the emulator, the video part built as the bot
// builds it. Each turn is named for the members whose audio made it: the transcript thread says who spoke
// each line, the stored conversation keeps their ids, and a video asked for in a turn several members
// spoke is made only when each of them may make one.

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TestGuild, User } from 'discord-standin';
import { DiscordOutbox } from '../../src/discord/outbox.ts';
import type { RealtimeSession } from '../../src/emulator/realtime/session.ts';
import { SUPPORTED_LOCALES } from '../../src/i18n/index.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { defaultVoiceSettings } from '../../src/settings/voice-settings.ts';
import { createVideo, type Video } from '../../src/video/index.ts';
import { DEFAULT_POLL_POLICY } from '../../src/video/poll-policy.ts';
import { VoiceVideo } from '../../src/video/voice-requests.ts';
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
let video: Video;
let records: ConversationRecords;
let service: VoiceService;
/** The conversation of the test under way. */
let guild: TestGuild | undefined;

beforeAll(async () => {
  rig = await startVoiceServiceRig({
    emulator: { config: { timing: { generation_ms: 300 } } },
  });
  const outbox = new DiscordOutbox(rig.client.rest);
  video = createVideo({
    store: rig.store,
    clients: rig.clients,
    policy: rig.settings,
    outbox,
    vendor: 'svc',
    log: silentLogger,
    pollPolicy: { ...DEFAULT_POLL_POLICY, intervalMs: 50, maxIntervalMs: 50 },
    cardEditIntervalMs: 0,
  });
  // As src/app.ts wires it: /video's role rules and the moderators' denied members.
  const videoRequests = new VoiceVideo({
    prepare: video.prepare,
    submit: (plan, context) => video.submit(plan, context),
    tasks: video.tasks,
    outbox,
    mayUseVideo: (guildId, member) => rig.settings.mayUse(guildId, 'video', member.roleIds, member.isServerManager),
    deniedMembers: async (guildId) => (await rig.settings.rules(guildId)).denied,
    log: silentLogger,
  });
  records = rig.store.collection(CONVERSATION_RECORDS, conversationRecordParser(defaultVoiceSettings('svc'), SUPPORTED_LOCALES));
  service = rig.voiceService({ videoRequests, conversations: records });
}, 60_000);

afterEach(async () => {
  if (guild) await service.leave(guild.id, { why: 'asked', by: 'test' });
  guild = undefined;
});

afterAll(async () => {
  await video?.tracker.stop();
  await service?.stopAll();
  await rig?.close();
});

/** A server with the member ("member") and Bo, both in its voice channel, with transcripts on. */
async function serverWithBo(options: { boRoles?: string[] } = {}): Promise<{ guild: TestGuild; bo: User }> {
  const created = rig.discord.createGuild();
  guild = created;
  const bo = rig.discord.createUser({
    guildId: created.id,
    name: 'Bo',
    roles: options.boRoles ?? [],
  });
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

/** The session's next turn is heard as `transcript`, and the model answers with `call` when given. */
async function script(
  session: RealtimeSession,
  transcript: string,
  call?: { name: string; arguments: Record<string, unknown> },
): Promise<void> {
  const response = await fetch(`${rig.emulator.baseUrl}/_emulator/realtime/script`, {
    method: 'POST',
    headers: {
      authorization: 'Bearer emulator-key',
      'content-type': 'application/json',
    },
    body: JSON.stringify({
      session_id: session.id,
      transcript,
      ...(call ? { response: { function_call: call } } : {}),
    }),
  });
  expect(response.status, await response.clone().text()).toBe(200);
}

/** Members speak at once, each for as long as given: one turn. */
async function speak(server: TestGuild, ...parts: [User, number][]): Promise<void> {
  await Promise.all(
    parts.map(([user, ms]) =>
      rig.discord.voice.speakTone(server.id, user.id, {
        hz: 440,
        ms,
        amplitude: 0.5,
      }),
    ),
  );
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

/** What the model was told of its function call in `session`: the output the bot sent back. */
async function functionOutput(session: RealtimeSession): Promise<{ status: string; message: string; task?: string }> {
  const { event } = await rig.emulator.realtime.waitForClientEvent(
    (candidate, which) =>
      which === session &&
      candidate.type === 'conversation.item.create' &&
      (candidate.item as { type?: unknown } | undefined)?.type === 'function_call_output',
    20_000,
  );
  return JSON.parse(String((event.event.item as { output?: unknown }).output)) as { status: string; message: string; task?: string };
}

const generations = () =>
  rig.emulator.requests.filter((entry) => entry.method === 'POST' && entry.path === '/v1/videos/generations').length;

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
      {
        speaker: 'user',
        text: 'I will have the soup',
        members: [server.member.id],
      },
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

  it('makes no video for a turn a member without the video role spoke in, and tells the model who; the allowed member alone gets one', async () => {
    const { guild: server, bo } = await serverWithBo();
    await rig.settings.update(server.id, server.admin.id, 'video role', (settings) => ({
      ...settings,
      roles: { ...settings.roles, video: [server.memberRoleId] },
    }));
    const session = await join(server);
    const before = generations();

    await script(session, `${BOT_NAME}, make a video of a fox`, {
      name: 'generate_video',
      arguments: { prompt: 'a fox', duration: 2 },
    });
    await speak(server, [server.member, 1_200], [bo, 700]);
    const refused = await functionOutput(session);
    expect(refused).toEqual({
      status: 'refused',
      message: `No video was made: Bo (<@${bo.id}>) spoke in this request too, and may not make videos on this server. On this server, /video is for members with <@&${server.memberRoleId}>. Ask a server admin if you need it.`,
    });
    expect(await video.tasks.recentForUser(server.id, server.member.id, 5)).toEqual([]);
    expect(generations()).toBe(before);

    // The same request from the allowed member alone is made.
    await script(session, `${BOT_NAME}, make a video of a fox`, {
      name: 'generate_video',
      arguments: { prompt: 'a fox', duration: 2 },
    });
    const outputs = () =>
      session.clientEvents.filter(({ event }) => (event.item as { type?: unknown } | undefined)?.type === 'function_call_output').length;
    await speak(server, [server.member, 700]);
    const { event } = await rig.emulator.realtime.waitForClientEvent(
      (candidate, which) =>
        which === session &&
        outputs() === 2 &&
        (candidate.item as { type?: unknown } | undefined)?.type === 'function_call_output' &&
        !JSON.stringify(candidate).includes('refused'),
      20_000,
    );
    expect(JSON.parse(String((event.event.item as { output?: unknown }).output))).toMatchObject({ status: 'submitted' });
    expect(await video.tasks.recentForUser(server.id, server.member.id, 5)).toHaveLength(1);
  }, 60_000);

  it('refuses a video for a turn a member the moderators deny spoke most of, naming them to the model', async () => {
    const { guild: server, bo } = await serverWithBo({ boRoles: [] });
    await rig.settings.update(server.id, server.admin.id, 'deny Bo', (settings) => ({
      ...settings,
      rules: { ...settings.rules, denied: [bo.id] },
    }));
    const session = await join(server);
    const before = generations();

    await script(session, `${BOT_NAME}, make a video of a cat`, {
      name: 'generate_video',
      arguments: { prompt: 'a cat', duration: 2 },
    });
    await speak(server, [bo, 1_200], [server.member, 700]);
    expect(await functionOutput(session)).toEqual({
      status: 'refused',
      message: `Nothing was done: Bo (<@${bo.id}>) spoke in this request, and this server's moderators do not let them use this bot.`,
    });
    expect(await video.tasks.recentForUser(server.id, bo.id, 5)).toEqual([]);
    expect(await video.tasks.recentForUser(server.id, server.member.id, 5)).toEqual([]);
    expect(generations()).toBe(before);
  }, 60_000);
});
