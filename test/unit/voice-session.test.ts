// The voice session against a scripted realtime server (a local websocket that answers what each test
// tells it to, the way a spec-faithful gateway may) and the real @discordjs/voice connected to the
// Discord stand-in's voice server in this process: what the session sends to the gateway, and what a
// listener in the channel really hears.

import { VoiceConnectionStatus, entersState, joinVoiceChannel, type VoiceConnection } from '@discordjs/voice';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RealtimeClient } from '../../src/gateway/realtime/client.ts';
import { silentLogger } from '../../src/log.ts';
import { defaultVoiceSettings, type VoiceSettings } from '../../src/voice/settings.ts';
import { VoiceSession, type VoiceSessionOptions } from '../../src/voice/session.ts';
import { analyzeTone, rms } from '../support/discord/audio-analysis.ts';
import { REALTIME_PCM } from '../support/discord/audio-format.ts';
import { generateTone } from '../support/discord/audio-tone.ts';
import { trustCertificateInThisProcess } from '../support/discord/tls-trust.ts';
import { InProcessVoiceGateway } from '../support/discord/voice-adapter.ts';
import { joinFramePcm } from '../support/discord/voice-bot-recorder.ts';
import { startVoiceServer, type BotAudioFrame, type VoiceServer } from '../support/discord/voice-server.ts';
import { ScriptedRealtime, type ScriptedSocket } from '../support/scripted-realtime.ts';

const BOT_ID = '100000000000000001';
const USER_ID = '400000000000000001';
const GUILD_ID = '200000000000000001';
const CHANNEL_ID = '300000000000000001';

let voice: VoiceServer;
let untrust: () => void;
let connection: VoiceConnection;
let realtime: ScriptedRealtime;
let session: VoiceSession | undefined;
const connectionErrors: Error[] = [];

beforeAll(async () => {
  voice = await startVoiceServer();
  untrust = trustCertificateInThisProcess(voice.certPem);
  realtime = await ScriptedRealtime.start();
  const gateway = new InProcessVoiceGateway(voice, BOT_ID);
  voice.userJoined(GUILD_ID, CHANNEL_ID, USER_ID);
  connection = joinVoiceChannel({ guildId: GUILD_ID, channelId: CHANNEL_ID, adapterCreator: gateway.adapterCreator(GUILD_ID), selfDeaf: false });
  connection.on('error', (error) => connectionErrors.push(error));
  await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
  await voice.waitForBotConnection(GUILD_ID);
});

afterEach(() => {
  session?.stop();
  session = undefined;
  realtime.configure = true;
  realtime.refusals.length = 0;
  voice.clearBotAudio(GUILD_ID);
});

afterAll(async () => {
  if (connection.state.status !== VoiceConnectionStatus.Destroyed) connection.destroy();
  await realtime.close();
  await voice.close();
  untrust();
  expect(connectionErrors).toEqual([]);
});

interface Started {
  session: VoiceSession;
  socket: ScriptedSocket;
  problems: string[];
}

async function startSession(overrides: Partial<VoiceSessionOptions> = {}, settings: Partial<VoiceSettings> = {}): Promise<Started> {
  const problems: string[] = [];
  const started = new VoiceSession({
    guildId: GUILD_ID,
    connection,
    settings: { ...defaultVoiceSettings('svc'), ...settings },
    connectRealtime: () =>
      RealtimeClient.connect({ wsBaseUrl: realtime.url, apiKey: 'scripted-key-0001', model: 'svc-voice-latest', session: { turnDetection: { type: 'server_vad' } }, timeoutMs: 2000 }),
    log: silentLogger,
    renewAfterMs: 3_600_000,
    reconnect: { baseMs: 10, maxMs: 40 },
    botUserId: BOT_ID,
    onProblem: (message) => {
      problems.push(message);
      realtime.changed();
    },
    ...overrides,
  });
  session = started;
  const before = realtime.sockets.length;
  await started.start();
  const socket = await realtime.waitFor(() => realtime.sockets[before], 'the realtime socket');
  return { session: started, socket, problems };
}

/** 24 kHz mono PCM as base64 deltas of `chunkMs` each. */
function deltas(pcm: Int16Array, chunkMs = 100): string[] {
  const chunk = (REALTIME_PCM.sampleRate / 1000) * chunkMs;
  const parts: string[] = [];
  for (let offset = 0; offset < pcm.length; offset += chunk) {
    const piece = pcm.subarray(offset, offset + chunk);
    parts.push(Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength).toString('base64'));
  }
  return parts;
}

function tone(hz: number, ms: number): Int16Array {
  return generateTone({ hz, ms, amplitude: 0.4, format: REALTIME_PCM });
}

function audible(frames: readonly BotAudioFrame[]): BotAudioFrame[] {
  return frames.filter((frame) => rms(frame.pcm) > 0.02);
}

function heard(minimumFrames: number): Promise<readonly BotAudioFrame[]> {
  return voice.waitForBotAudio(GUILD_ID, (frames) => audible(frames).length >= minimumFrames, 10_000);
}

describe('a voice session against a spec-faithful gateway', () => {
  it('plays audio deltas that carry nothing but `delta`, under either name', async () => {
    const { socket } = await startSession();
    socket.send({ type: 'response.created' });
    deltas(tone(440, 300)).forEach((delta, index) => socket.send({ type: index % 2 === 0 ? 'response.output_audio.delta' : 'response.audio.delta', delta }));
    socket.send({ type: 'response.output_audio.done' });
    socket.send({ type: 'response.done' });
    const frames = await heard(14);
    expect(analyzeTone(joinFramePcm(audible(frames))).dominantHz).toBeCloseTo(440, -1);
  });

  it('tells the channel about errors people should know of, once, and keeps routine ones to the log', async () => {
    const { socket, problems } = await startSession();
    socket.send({ type: 'error', error: { type: 'invalid_request_error', code: 'session_expired', message: 'The session reached its maximum duration.', param: null, event_id: null } });
    socket.send({ type: 'error', error: 'You exceeded your current quota.', code: 'insufficient_quota' });
    socket.send({ type: 'error', error: 'You exceeded your current quota.', code: 'insufficient_quota' });
    socket.send({ type: 'error', error: { type: 'server_error', code: 'server_error', message: 'The server had an error.', param: null, event_id: null } });
    await realtime.waitFor(() => (problems.length >= 2 ? true : undefined), 'the problems told');
    expect(problems).toEqual(['The voice model reported a problem: You exceeded your current quota.', 'The voice model reported a problem: The server had an error.']);
  });
});
