// A voice conversation across a restart, with the real libraries: the voice service in this process, with
// discord.js and @discordjs/voice on the Discord stand-in, its realtime sessions on the emulator, and its
// record in a real SQLite store. A graceful stop says so aloud and keeps the record; a new voice service on
// the same store (the next start) brings the conversation back with its earlier turns in the new session.

import { Events } from 'discord.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { DiscordStandIn, TestGuild } from 'discord-standin';
import type { RealtimeSession } from '../../src/emulator/realtime/session.ts';
import type { Emulator } from '../../src/emulator/server.ts';
import type { SettingsService } from '../../src/settings/service.ts';
import { createLogger, type Logger } from '../../src/lib/log.ts';
import { CONVERSATION_RECORDS, conversationRecordParser, type ConversationRecords } from '../../src/voice/conversation-record.ts';
import { defaultVoiceSettings } from '../../src/settings/voice-settings.ts';
import type { VoiceService } from '../../src/voice/service.ts';
import { pollUntil } from '../support/poll.ts';
import { startVoiceServiceRig, type VoiceServiceRig } from '../support/voice-service-rig.ts';
import { forcedLines, textMessages } from '../support/realtime-lines.ts';
import { BACK_LINE, BACK_WITHIN_MS, exchange as exchangeIn, RESTART_LINE } from '../support/voice-restart.ts';
import { SUPPORTED_LOCALES } from '../../src/i18n/index.ts';

let rig: VoiceServiceRig;
let emulator: Emulator;
let discord: DiscordStandIn;
let records: ConversationRecords;
let settings: SettingsService;
/** Every voice service a test started (one per "start" of the bot), stopped after it. */
const services: VoiceService[] = [];

beforeAll(async () => {
  rig = await startVoiceServiceRig();
  ({ emulator, discord, settings } = rig);
  // Short lines: a force_message or a scripted answer is a tone 5 ms per character.
  emulator.realtime.options.toneMsPerCharacter = 5;
  records = rig.store.collection(CONVERSATION_RECORDS, conversationRecordParser(defaultVoiceSettings('svc'), SUPPORTED_LOCALES));
}, 60_000);

afterEach(async () => {
  for (const service of services.splice(0)) await service.stopAll();
  emulator.realtime.options.messageItems = true;
});

afterAll(async () => {
  await rig?.close();
});

/** A voice service as the bot starts one, on the shared store; `log` where it logs (nowhere by default). */
function startService(log?: Logger): VoiceService {
  const service = rig.voiceService({ spending: settings.spending, meterHeartbeatMs: 200, conversations: records, ...(log ? { log } : {}) });
  services.push(service);
  return service;
}

function memberInVoice(guild: TestGuild): Promise<void> {
  return rig.memberInVoice(guild);
}

/** The member says something and hears the bot's answer to its end, on this file's stand-ins. */
function exchange(guild: TestGuild, session: RealtimeSession, transcript: string, answer: string): Promise<void> {
  return exchangeIn({ discord, emulator, guild }, session, transcript, answer);
}

/** Until the store's record of the guild's conversation has `count` turns. */
function recordedTurns(guildId: string, count: number) {
  return pollUntil({
    ask: () => records.get(guildId),
    found: (record) => (record && record.turns.length >= count ? record : undefined),
    intervalMs: 50,
    timeoutMs: 15_000,
    timeoutError: () => new Error(`the record did not reach ${count} turns`),
  });
}

/** A logger that keeps its lines, parsed. */
function keptLog(): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  return { log: createLogger({ write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) }), lines };
}

async function voiceMsOf(guildId: string, userId: string): Promise<number> {
  return (await settings.spending.ledger.day(guildId, Date.now())).users[userId]?.voiceMs ?? 0;
}

describe('a voice conversation across a restart', () => {
  it('says it restarts, keeps its record, and comes back after the next start with its earlier turns, saying so once', async () => {
    const guild = discord.createGuild();
    await memberInVoice(guild);
    const first = startService();
    const before = emulator.realtime.sessions.length;
    expect(await first.join(guild.id, guild.voiceChannelId, guild.textChannelId, guild.member.id)).toMatchObject({ ok: true });
    const session = emulator.realtime.sessions[before]!;
    await exchange(guild, session, 'My name is Ada.', 'Nice to meet you, Ada.');
    await exchange(guild, session, 'I keep bees.', 'Bees are wonderful.');
    // Each member's turn keeps who spoke it; the bot's carry nobody.
    const turns = [
      { speaker: 'user', text: 'My name is Ada.', members: [guild.member.id] },
      { speaker: 'bot', text: 'Nice to meet you, Ada.', members: [] },
      { speaker: 'user', text: 'I keep bees.', members: [guild.member.id] },
      { speaker: 'bot', text: 'Bees are wonderful.', members: [] },
    ];
    // Kept while live: a crash now would leave this much.
    expect(await recordedTurns(guild.id, 4)).toMatchObject({ userId: guild.member.id, restarting: false, turns });

    await first.stopAll();
    // Said aloud (and heard: stopAll waited for it), and in the text channel.
    expect(forcedLines(session)).toContain(RESTART_LINE);
    await discord.waitForMessage(
      guild.textChannelId,
      (message) =>
        message.content ===
        `🔄 The bot is restarting: I will be back in <#${guild.voiceChannelId}> in a moment, and remember what was said.`,
    );
    expect(discord.messages(guild.textChannelId).some((message) => message.content.startsWith('Stopped listening'))).toBe(false);
    expect(await records.get(guild.id)).toMatchObject({ restarting: true, turns });
    const spentBefore = await voiceMsOf(guild.id, guild.member.id);
    expect(spentBefore).toBeGreaterThan(0);

    // The next start, on the same store.
    const second = startService();
    const sessions = emulator.realtime.sessions.length;
    expect(await second.resume()).toBe(1);
    const back = await discord.waitForMessage(
      guild.textChannelId,
      (message) => message.content.startsWith(`🎙️ Back in <#${guild.voiceChannelId}> after a restart`),
      BACK_WITHIN_MS,
    );
    expect(back.content).toContain('/voice leave');
    expect(second.channelOf(guild.id)).toBe(guild.voiceChannelId);
    expect(discord.botVoiceChannel(guild.id)).toBe(guild.voiceChannelId);
    // One new realtime session, whose context starts with the earlier turns, in order.
    const resumed = emulator.realtime.sessions.slice(sessions);
    expect(resumed).toHaveLength(1);
    expect(textMessages(resumed[0]!)).toEqual([
      { role: 'user', text: 'My name is Ada.' },
      { role: 'assistant', text: 'Nice to meet you, Ada.' },
      { role: 'user', text: 'I keep bees.' },
      { role: 'assistant', text: 'Bees are wonderful.' },
    ]);
    await emulator.realtime.waitForServerEvent(
      (event, candidate) => candidate === resumed[0] && event.type === 'response.done',
      BACK_WITHIN_MS,
    );
    expect(forcedLines(resumed[0]!)).toEqual([BACK_LINE]);

    // The conversation goes on, is kept as before, and is still counted for the member who brought the bot in.
    await exchange(guild, resumed[0]!, 'Where do I keep them?', 'In your garden.');
    expect((await recordedTurns(guild.id, 6)).turns.slice(-2)).toEqual([
      { speaker: 'user', text: 'Where do I keep them?', members: [guild.member.id] },
      { speaker: 'bot', text: 'In your garden.', members: [] },
    ]);
    expect(await second.leave(guild.id, { why: 'asked', by: 'test' })).toBe(true);
    expect(await voiceMsOf(guild.id, guild.member.id)).toBeGreaterThan(spentBefore);
    // Ended for good: nothing left to bring back.
    expect(await records.get(guild.id)).toBeUndefined();
    expect(forcedLines(resumed[0]!)).toEqual([BACK_LINE]);
  }, 60_000);

  it('is not brought back into a channel everyone left during the restart, and its record is dropped', async () => {
    const guild = discord.createGuild();
    await memberInVoice(guild);
    const first = startService();
    expect(await first.join(guild.id, guild.voiceChannelId, guild.textChannelId, guild.member.id)).toMatchObject({ ok: true });
    await recordedTurns(guild.id, 0);
    await first.stopAll();
    expect(await records.get(guild.id)).toMatchObject({ restarting: true });

    const left = new Promise((resolve) => rig.client.once(Events.VoiceStateUpdate, resolve));
    discord.leaveVoice(guild.member, guild.id);
    await left;
    const sessions = emulator.realtime.sessions.length;
    expect(await startService().resume()).toBe(0);
    expect(await records.get(guild.id)).toBeUndefined();
    expect(emulator.realtime.sessions.length).toBe(sessions);
    expect(discord.botVoiceChannel(guild.id)).toBeUndefined();
  }, 30_000);

  it('comes back speaking the language /voice settings chose for the conversation', async () => {
    const guild = discord.createGuild();
    await memberInVoice(guild);
    await settings.changeVoiceSettings(guild.id, { language: 'de' }, guild.admin.id);
    const first = startService();
    expect(await first.join(guild.id, guild.voiceChannelId, guild.textChannelId, guild.member.id)).toMatchObject({ ok: true });
    await recordedTurns(guild.id, 0);
    await first.stopAll();
    expect(await records.get(guild.id)).toMatchObject({ restarting: true, settings: { language: 'de' } });

    const second = startService();
    const sessions = emulator.realtime.sessions.length;
    expect(await second.resume()).toBe(1);
    const resumed = emulator.realtime.sessions[sessions]!;
    await emulator.realtime.waitForClientEvent(
      (_candidate, session) => session === resumed && forcedLines(resumed).length > 0,
      BACK_WITHIN_MS,
    );
    expect(forcedLines(resumed)).toEqual([
      'Ich bin zurück. Wo waren wir? Was ihr hier sagt, schicke ich an das Sprachmodell; wer nicht gehört werden will, benutzt voice ignore me.',
    ]);
    expect(await second.leave(guild.id, { why: 'asked', by: 'test' })).toBe(true);
  }, 30_000);

  it('gives the earlier turns in the instructions, each named by who spoke it, when the gateway takes no message items', async () => {
    const guild = discord.createGuild();
    await memberInVoice(guild);
    const first = startService();
    const before = emulator.realtime.sessions.length;
    expect(await first.join(guild.id, guild.voiceChannelId, guild.textChannelId, guild.member.id)).toMatchObject({ ok: true });
    await exchange(guild, emulator.realtime.sessions[before]!, 'My name is Ada.', 'Nice to meet you, Ada.');
    await recordedTurns(guild.id, 2);
    await first.stopAll();

    emulator.realtime.options.messageItems = false;
    const second = startService();
    const sessions = emulator.realtime.sessions.length;
    expect(await second.resume()).toBe(1);
    const resumed = emulator.realtime.sessions[sessions]!;
    const { event } = await emulator.realtime.waitForServerEvent(
      (candidate, session) =>
        session === resumed &&
        candidate.type === 'session.updated' &&
        String((candidate.session as { instructions?: unknown }).instructions).includes('What was said before'),
      BACK_WITHIN_MS,
    );
    expect((event.event.session as { instructions: string }).instructions).toMatch(
      /You were restarted in the middle of this conversation\. What was said before, oldest first:\nmember: My name is Ada\.\nYou: Nice to meet you, Ada\.$/,
    );
    expect(textMessages(resumed)).toEqual([]);
    await emulator.realtime.waitForClientEvent(
      (candidate, session) => session === resumed && forcedLines(resumed).includes(BACK_LINE),
      BACK_WITHIN_MS,
    );
    expect(await second.leave(guild.id, { why: 'asked', by: 'test' })).toBe(true);
  }, 60_000);

  // The gateway answered, and refused: its code says why, and another attempt gets the same answer. The log
  // said "The voice model is unreachable right now" (the member's wording), which sent operators to the network.
  it.each([
    {
      how: 'an HTTP refusal of the connection',
      settings: { model: 'svc-voice-that-never-was' },
      refusal: {
        code: 'model_not_found',
        status: 404,
        message: expect.stringContaining('The model svc-voice-that-never-was does not exist'),
      },
    },
    {
      how: "an error event refusing the session's configuration",
      settings: { voice: 'nobody' },
      refusal: { code: 'invalid_value', param: 'session.voice', message: expect.stringContaining('refused its configuration') },
    },
  ])(
    'that the gateway refuses to reopen is logged as refused, with its code ($how)',
    async ({ settings: refused, refusal }) => {
      const guild = discord.createGuild();
      await memberInVoice(guild);
      await records.set(guild.id, {
        v: 2,
        voiceChannelId: guild.voiceChannelId,
        textChannelId: guild.textChannelId,
        userId: guild.member.id,
        settings: { ...defaultVoiceSettings('svc'), ...refused },
        turns: [],
        restarting: true,
        // The last attempt: refused, the conversation is given up.
        rejoinAttempts: 2,
        updatedAt: Date.now(),
      });
      const { log, lines } = keptLog();
      expect(await startService(log).resume()).toBe(0);
      expect(lines.filter((line) => line.msg === 'the gateway refused the realtime session')).toEqual([
        expect.objectContaining({ level: 'warn', guild: guild.id, ...refusal }),
      ]);
      expect(lines.find((line) => line.msg === 'could not rejoin voice after the restart')).toMatchObject({
        failure: { kind: 'refused', ...refusal },
      });
      expect(lines.filter((line) => JSON.stringify(line).includes('unreachable'))).toEqual([]);
      expect(await records.get(guild.id)).toBeUndefined();
    },
    30_000,
  );
});
