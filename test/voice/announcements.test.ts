// Announcements (VoiceSession.announce: "a video is ready") while the model is answering, with the real
// @discordjs/voice on the Discord stand-in's voice server and the realtime session on the emulator, which
// refuses a force_message during another response as realtime services refuse a second response. The
// member's speech goes through Discord, the bot and the emulator's VAD like any turn.

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { audible, byTone, type VoiceServer } from 'discord-standin';
import { startEmulator, type Emulator } from '../../src/emulator/server.ts';
import { DEFAULT_AUDIO_FORMAT } from '../../src/emulator/realtime/audio-format.ts';
import { FORCE_MESSAGE_TONE_HZ, type JournaledEvent, type RealtimeSession } from '../../src/emulator/realtime/session.ts';
import { RealtimeClient } from '../../src/gateway/realtime/client.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { defaultVoiceSettings } from '../../src/settings/voice-settings.ts';
import { VoiceSession } from '../../src/voice/session.ts';
import { startRealtimeGate, type RealtimeGate } from '../support/realtime-gate.ts';
import { startScriptedVoice, type ScriptedVoice } from '../support/scripted-voice.ts';
import { ENGLISH } from '../../src/i18n/index.ts';
import { word } from '../../src/wording/notice.ts';

const BOT_ID = '100000000000000003';
const USER_ID = '400000000000000003';
const GUILD_ID = '200000000000000003';
const CHANNEL_ID = '300000000000000003';
const ANSWER_HZ = 440;

let rig: ScriptedVoice;
let voice: VoiceServer;
let emulator: Emulator;
let gate: RealtimeGate;
let session: VoiceSession | undefined;

beforeAll(async () => {
  rig = await startScriptedVoice({ botId: BOT_ID, userId: USER_ID, guildId: GUILD_ID, channelId: CHANNEL_ID });
  voice = rig.voice;
  emulator = await startEmulator();
  gate = await startRealtimeGate(emulator.wsUrl);
});

afterEach(() => {
  session?.stop();
  session = undefined;
  voice.clearBotAudio(GUILD_ID);
});

afterAll(async () => {
  await gate.close();
  await emulator.close();
  await rig.close();
});

interface Started {
  session: VoiceSession;
  /** Its realtime session as the emulator sees it. */
  gateway: RealtimeSession;
  /** What the bot would have said in the text channel. */
  problems: string[];
}

/** A voice session on the emulator (through the gate when `wsBaseUrl` says so), answering every turn with server VAD. */
async function startSession(wsBaseUrl = emulator.wsUrl): Promise<Started> {
  const problems: string[] = [];
  const before = emulator.realtime.sessions.length;
  session = new VoiceSession({
    guildId: GUILD_ID,
    connection: rig.connection,
    settings: defaultVoiceSettings('svc'),
    connectRealtime: () =>
      RealtimeClient.connect({
        wsBaseUrl,
        apiKey: 'emulator-key',
        model: 'svc-voice-latest',
        session: { turnDetection: { type: 'server_vad', silenceDurationMs: 200, prefixPaddingMs: 0 } },
      }),
    log: silentLogger,
    sessionLimitMs: 3_600_000,
    reconnect: { baseMs: 10, maxMs: 40, maxAttempts: 5 },
    botUserId: BOT_ID,
    onProblem: (problem) => problems.push(word(ENGLISH, problem)),
  });
  await session.start();
  const gateway = emulator.realtime.sessions[before];
  if (!gateway) throw new Error('the emulator has no session for the voice session');
  return { session, gateway, problems };
}

const isForced = (event: Readonly<Record<string, unknown>>) =>
  event.type === 'conversation.item.create' && (event.item as { type?: unknown } | undefined)?.type === 'force_message';
const forcedText = (entry: JournaledEvent) => (entry.event.item as { content: { text: string }[] }).content[0]!.text;

/** The emulator's events of `gateway`, of one type. */
const sent = (gateway: RealtimeSession, type: string) => gateway.serverEvents.filter((entry) => entry.event.type === type);

/** How many 20 ms frames of audio the emulator's first response on `gateway` holds (PCM16 at its default rate). */
function firstResponseFrames(gateway: RealtimeSession): number {
  const first = sent(gateway, 'response.created')[0]?.event.response as { id?: unknown } | undefined;
  const bytes = sent(gateway, 'response.output_audio.delta')
    .filter((entry) => entry.event.response_id === first?.id)
    .reduce((sum, entry) => sum + Buffer.from(String(entry.event.delta), 'base64').length, 0);
  return Math.floor((bytes / 2 / DEFAULT_AUDIO_FORMAT.rate) * 50);
}

/** The member speaks `ms` of the answer's tone; the emulator's echo of it is the model's answer. */
async function memberSpeaks(ms: number): Promise<void> {
  await voice.speakTone(GUILD_ID, USER_ID, { hz: ANSWER_HZ, ms, amplitude: 0.5 });
}

describe('announcements while the model is answering', () => {
  it('are said after the answer ends, in the order asked for, and the channel hears of no refusal', async () => {
    // The emulator streams in real time: its answer is in progress for as long as it is heard.
    emulator.realtime.options.paceFactor = 1;
    try {
      const { session, gateway, problems } = await startSession();
      const speaking = memberSpeaks(1200);
      await emulator.realtime.waitForServerEvent(
        (event, which) => which === gateway && event.type === 'response.output_audio.delta',
        15_000,
      );
      session.announce('A video is ready: a quiet harbour.');
      session.announce('A video is ready: a lighthouse.');
      await speaking;

      // Three responses in all: the echo and the two announcements.
      await emulator.realtime.waitForServerEvent(
        (event, which) => which === gateway && event.type === 'response.done' && sent(gateway, 'response.done').length === 3,
        20_000,
      );
      const forced = gateway.clientEvents.filter((entry) => isForced(entry.event));
      expect(forced.map(forcedText)).toEqual(['A video is ready: a quiet harbour.', 'A video is ready: a lighthouse.']);
      // Each went after the response before it was done: the echo's, then the first announcement's.
      const [echoDone, firstDone] = sent(gateway, 'response.done');
      expect(forced[0]!.at).toBeGreaterThanOrEqual(echoDone!.at);
      expect(forced[1]!.at).toBeGreaterThanOrEqual(firstDone!.at);
      expect(sent(gateway, 'error')).toEqual([]);
      expect(problems).toEqual([]);

      // What the member hears: the whole answer, then the announcements, never over it.
      const frames = await voice.waitForBotAudio(
        GUILD_ID,
        (received) => byTone(received, FORCE_MESSAGE_TONE_HZ, ANSWER_HZ).length >= 40,
        20_000,
      );
      const answer = byTone(audible(frames), ANSWER_HZ, FORCE_MESSAGE_TONE_HZ);
      const announced = byTone(audible(frames), FORCE_MESSAGE_TONE_HZ, ANSWER_HZ);
      expect(answer.length).toBeGreaterThanOrEqual(40);
      expect(announced[0]!.receivedAt).toBeGreaterThan(answer.at(-1)!.receivedAt);
    } finally {
      emulator.realtime.options.paceFactor = 1.25;
    }
  });

  it('tries again once the response ends when the gateway refused one for an active response, and tells the channel nothing', async () => {
    emulator.realtime.options.paceFactor = 1;
    try {
      // The gateway's events are held in flight: the bot has not heard of the answer it started.
      const { session, gateway, problems } = await startSession(gate.url);
      gate.holdUntil(isForced);
      const speaking = memberSpeaks(1500);
      await emulator.realtime.waitForServerEvent((event, which) => which === gateway && event.type === 'response.created', 15_000);
      await speaking;
      session.announce('A video is ready: a quiet harbour.');

      // The emulator refused it, and the bot asked again once the echo was done.
      const refusal = await emulator.realtime.waitForServerEvent((event, which) => which === gateway && event.type === 'error', 15_000);
      expect(refusal.event.event).toMatchObject({ error: { code: 'conversation_already_has_active_response' } });
      await emulator.realtime.waitForServerEvent(
        (event, which) => which === gateway && event.type === 'response.done' && sent(gateway, 'response.done').length === 2,
        20_000,
      );
      const forced = gateway.clientEvents.filter((entry) => isForced(entry.event));
      expect(forced).toHaveLength(2);
      const [echoDone] = sent(gateway, 'response.done');
      expect(forced[1]!.at).toBeGreaterThanOrEqual(echoDone!.at);
      expect(sent(gateway, 'error')).toHaveLength(1);
      expect(problems).toEqual([]);
      const frames = await voice.waitForBotAudio(
        GUILD_ID,
        (received) => byTone(received, FORCE_MESSAGE_TONE_HZ, ANSWER_HZ).length >= 20,
        20_000,
      );
      // Told apart by what was heard before the announcement, not by when: a later answer (a member's turn
      // split in two on a busy machine) may follow it, but the first answer is heard whole before it.
      const announced = byTone(audible(frames), FORCE_MESSAGE_TONE_HZ, ANSWER_HZ);
      const answerBefore = byTone(audible(frames), ANSWER_HZ, FORCE_MESSAGE_TONE_HZ).filter(
        (frame) => frame.receivedAt < announced[0]!.receivedAt,
      );
      // A frame or two at each end of a tone counts for neither (a fade, a codec transient).
      expect(answerBefore.length).toBeGreaterThanOrEqual(firstResponseFrames(gateway) - 4);
    } finally {
      emulator.realtime.options.paceFactor = 1.25;
    }
  });
});
