// The voice session against a scripted realtime server (a local websocket that answers what each test
// tells it to, the way a spec-faithful gateway may) and the real @discordjs/voice connected to the
// Discord stand-in's voice server in this process: what the session sends to the gateway, and what a
// listener in the channel really hears.

import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { VoiceConnectionStatus, entersState, joinVoiceChannel, type VoiceConnection } from '@discordjs/voice';
import { WebSocketServer, type WebSocket } from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RealtimeClient } from '../../src/gateway/realtime/client.ts';
import { isRecord } from '../../src/json.ts';
import { silentLogger } from '../../src/log.ts';
import { defaultVoiceSettings, type VoiceSettings } from '../../src/voice/settings.ts';
import { VoiceSession, type VoiceSessionOptions } from '../../src/voice/session.ts';
import { websocketText } from '../../src/websocket-text.ts';
import { analyzeTone, rms } from '../support/discord/audio-analysis.ts';
import { REALTIME_PCM } from '../support/discord/audio-format.ts';
import { generateTone } from '../support/discord/audio-tone.ts';
import { trustCertificateInThisProcess } from '../support/discord/tls-trust.ts';
import { InProcessVoiceGateway } from '../support/discord/voice-adapter.ts';
import { joinFramePcm } from '../support/discord/voice-bot-recorder.ts';
import { startVoiceServer, type BotAudioFrame, type VoiceServer } from '../support/discord/voice-server.ts';

const BOT_ID = '100000000000000001';
const USER_ID = '400000000000000001';
const GUILD_ID = '200000000000000001';
const CHANNEL_ID = '300000000000000001';

type ClientEvent = Readonly<Record<string, unknown>>;

/** One realtime socket of the scripted server: what the bot sent (appends only counted), and a way to answer. */
class ScriptedSocket {
  readonly received: ClientEvent[] = [];
  appends = 0;
  readonly #socket: WebSocket;
  readonly #changed: () => void;

  constructor(socket: WebSocket, changed: () => void, configure: boolean) {
    this.#socket = socket;
    this.#changed = changed;
    socket.on('message', (data) => {
      const text = websocketText(data);
      if (text.startsWith('{"type":"input_audio_buffer.append"')) {
        this.appends++;
      } else {
        const event: unknown = JSON.parse(text);
        if (!isRecord(event)) return;
        this.received.push(event);
        if (configure && event.type === 'session.update') this.send({ type: 'session.updated', session: {} });
      }
      this.#changed();
    });
    socket.on('close', () => this.#changed());
  }

  get open(): boolean {
    return this.#socket.readyState === this.#socket.OPEN;
  }

  send(event: Record<string, unknown>): void {
    this.#socket.send(JSON.stringify(event));
  }

  close(code = 1000, reason = ''): void {
    this.#socket.close(code, reason);
  }

  sent(type: string): ClientEvent[] {
    return this.received.filter((event) => event.type === type);
  }
}

class ScriptedRealtime {
  readonly sockets: ScriptedSocket[] = [];
  /** Answer session.update with session.updated (a server that never does is tested too). */
  configure = true;
  /** HTTP statuses for the next upgrades, refused in order (an empty list accepts). */
  readonly refusals: number[] = [];
  refused = 0;
  readonly #server: Server;
  readonly #sockets = new WebSocketServer({ noServer: true });
  readonly #waiters = new Set<() => void>();

  private constructor(server: Server) {
    this.#server = server;
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      const status = this.refusals.shift();
      if (status !== undefined) {
        this.refused++;
        const body = JSON.stringify({ code: 'invalid_api_key', error: 'Invalid API key.' });
        socket.end(`HTTP/1.1 ${status} Refused\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
        this.#notify();
        return;
      }
      this.#sockets.handleUpgrade(request, socket, head, (ws) => {
        this.sockets.push(new ScriptedSocket(ws, () => this.#notify(), this.configure));
        this.#notify();
      });
    });
  }

  static async start(): Promise<ScriptedRealtime> {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return new ScriptedRealtime(server);
  }

  get url(): string {
    const address = this.#server.address();
    if (address === null || typeof address === 'string') throw new Error('not listening');
    return `ws://127.0.0.1:${address.port}`;
  }

  get latest(): ScriptedSocket {
    const socket = this.sockets.at(-1);
    if (!socket) throw new Error('no realtime socket yet');
    return socket;
  }

  /** Resolves once `check` returns something; re-checked on every socket event. */
  waitFor<T>(check: () => T | undefined, what: string, timeoutMs = 10_000): Promise<T> {
    const now = check();
    if (now !== undefined) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      const waiter = () => {
        const value = check();
        if (value === undefined) return;
        cleanup();
        resolve(value);
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`waited ${timeoutMs} ms in vain for ${what}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.#waiters.delete(waiter);
      };
      this.#waiters.add(waiter);
    });
  }

  #notify(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }

  async close(): Promise<void> {
    for (const client of this.#sockets.clients) client.terminate();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

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
    onProblem: (message) => problems.push(message),
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
});
