import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  VoiceConnectionStatus,
  entersState,
  joinVoiceChannel,
  type DiscordGatewayAdapterCreator,
  type VoiceConnection,
} from '@discordjs/voice';
import { RealtimeClient } from '../src/gateway/realtime/client.ts';
import { REALTIME_SESSION_MAX_MS } from '../src/gateway/spec.ts';
import { isRecord, readArray, readNumber, readString } from '../src/lib/json.ts';
import { NO_METRICS } from '../src/lib/metrics.ts';
import { silentLogger } from '../src/lib/log.ts';
import { OpusScriptCodec } from 'opusscript-codec';
import { FRAME_SAMPLES } from '../src/voice/audio/format.ts';
import { OpusFrameDecoder, OpusFrameEncoder } from '../src/voice/audio/opus.ts';
import { availableOpusCodecs } from '../src/voice/audio/opus-codec.ts';
import { VoiceSession } from '../src/voice/session.ts';
import { defaultVoiceSettings } from '../src/settings/voice-settings.ts';
import { type BotPacketProblems, parseVoiceStateRequest } from 'discord-standin';
import type { MeteredConversation, RunningMeter } from './voice-meter.ts';
import { percentile } from '../test/support/percentile.ts';

// What the voice benchmarks share (bench/voice.ts: one conversation, plain and DAVE; bench/voice-capacity.ts:
// many at once): the far ends in a child process (bench/ws-sink.ts) driven over its stdin/stdout, the
// bot's side of the voice handshake, a conversation as the bot holds it (the real VoiceSession on the real
// @discordjs/voice) with its timing probes, the bare-opusscript baseline, and the statistics.

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const CHANNEL_ID = '300000000000000001';
export const BOT_ID = '100000000000000001';
export const USER_ID = '400000000000000001';

export const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

export interface Latency {
  p50: number;
  p95: number;
  p99: number;
  samples: number;
}

export function latencyOf(values: number[]): Latency {
  return { p50: percentile(values, 50), p95: percentile(values, 95), p99: percentile(values, 99), samples: values.length };
}

/**
 * CPU ms of bare opusscript decoding and encoding this audio at 48 kHz stereo, the way a naive bot would.
 * Through OpusScriptCodec (the same libopus calls): opusscript's own encode() and decode() would write
 * PCM into the bot's codecs in this process.
 */
export function baselineCpuMs(packets: Buffer[], pcm48kStereo: Int16Array): number {
  const decoder = new OpusScriptCodec(48_000, 2, 'audio');
  const encoder = new OpusScriptCodec(48_000, 2, 'audio');
  const frame = 960 * 2;
  const start = process.cpuUsage();
  for (const packet of packets) decoder.decode(packet);
  for (let offset = 0; offset + frame <= pcm48kStereo.length; offset += frame)
    encoder.encode(pcm48kStereo.subarray(offset, offset + frame), 960);
  const used = process.cpuUsage(start);
  decoder.delete();
  encoder.delete();
  return (used.user + used.system) / 1000;
}

/**
 * The native codec's floor: CPU ms of native libopus doing the bot's own codec work on the same audio,
 * decoding the packets to 24 kHz mono and encoding as much 24 kHz mono (the bot's encoder settings), or
 * undefined where the native build is not there. No bot that decodes and encodes this audio costs less.
 */
export function nativeFloorCpuMs(packets: Buffer[], pcm48kStereo: Int16Array): number | undefined {
  if (!availableOpusCodecs().includes('native')) return undefined;
  const decoder = new OpusFrameDecoder('native');
  const encoder = new OpusFrameEncoder('native');
  // 24 kHz mono: every other frame of 48 kHz, its left channel (made before the clock starts).
  const pcm24kMono = new Int16Array(Math.floor(pcm48kStereo.length / 4));
  for (let index = 0; index < pcm24kMono.length; index++) pcm24kMono[index] = pcm48kStereo[index * 4]!;
  const start = process.cpuUsage();
  for (const packet of packets) decoder.decode(packet);
  for (let offset = 0; offset + FRAME_SAMPLES <= pcm24kMono.length; offset += FRAME_SAMPLES)
    encoder.encode(pcm24kMono.subarray(offset, offset + FRAME_SAMPLES));
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

/** A child process spoken to one JSON object per line: requests `{id, ...}` get `{id, ...}` back. */
export interface LineChild {
  readonly process: ChildProcess;
  /** The first line it printed (where it listens, for the far ends). */
  readonly hello: Record<string, unknown>;
  request(message: Record<string, unknown>): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

/**
 * Starts `script` under the project's node with `args`. Lines without an id that come after the first are
 * handed to `onMessage` (a worker's requests of its own); an answer with `error` rejects its request.
 */
export async function startLineChild(
  script: string,
  args: string[],
  options: { nodeFlags?: string[]; cpus?: string; asBot?: boolean; onMessage?(message: Record<string, unknown>): void } = {},
): Promise<LineChild> {
  // A process that holds the bot's conversations runs as the bot does (scripts/bot: its V8 settings).
  const node = join(ROOT, 'scripts', options.asBot ? 'bot' : 'node');
  const command = [
    ...(options.cpus === undefined ? [] : ['taskset', '-c', options.cpus]),
    node,
    ...(options.nodeFlags ?? []),
    join(ROOT, 'bench', script),
    ...args,
  ];
  const child = spawn(command[0]!, command.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
  // A line written as it exits (an answer to what it asked on its way out, once it was told to stop) has
  // nobody to read it.
  let stopping = false;
  child.stdin.on('error', (error) => {
    if (!stopping && child.exitCode === null && child.signalCode === null)
      process.stderr.write(`${script}: its stdin failed: ${error.message}\n`);
  });
  const lines = createInterface({ input: child.stdout });
  const pending = new Map<number, { resolve(answer: Record<string, unknown>): void; reject(error: Error): void }>();
  const exited = once(child, 'exit');
  let hello: ((message: Record<string, unknown>) => void) | undefined;
  const first = new Promise<Record<string, unknown>>((resolve, reject) => {
    hello = resolve;
    void exited.then(() => reject(new Error(`${script} exited before it was ready`)));
  });
  lines.on('line', (line) => {
    const message: unknown = JSON.parse(line);
    if (!isRecord(message)) return;
    const id = readNumber(message, 'id');
    if (id === undefined) {
      if (hello) {
        hello(message);
        hello = undefined;
      } else options.onMessage?.(message);
      return;
    }
    const waiter = pending.get(id);
    pending.delete(id);
    if (typeof message.error === 'string') waiter?.reject(new Error(`${script}: ${message.error}`));
    else waiter?.resolve(message);
  });
  void exited.then(() => {
    for (const waiter of pending.values()) waiter.reject(new Error(`${script} exited`));
    pending.clear();
  });
  const helloMessage = await first;
  let nextId = 0;
  return {
    process: child,
    hello: helloMessage,
    request(message) {
      const id = ++nextId;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        child.stdin.write(`${JSON.stringify({ id, ...message })}\n`);
      });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      stopping = true;
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** What a conversation needs of its far ends: where the voice server is, and a way to ask them things. */
export interface FarEndControl {
  /** `host:port` of the voice server. */
  endpoint: string;
  /** The realtime gateway's base URL (see realtimeUrlOf for a guild's). */
  wsUrl: string;
  request(message: Record<string, unknown>): Promise<Record<string, unknown>>;
}

export interface FarEnds extends FarEndControl {
  certPem: string;
  /** Cumulative CPU ms of the far ends' process, and its event-loop delay p99 since the last call (the sampling interval included). */
  cpu(): Promise<{ cpuMs: number; loopDelayP99Ms: number }>;
  stop(): Promise<void>;
}

/** The far ends (bench/ws-sink.ts) in a child process of their own, optionally on the given CPUs (taskset). */
export async function startFarEnds({ dave, cpus }: { dave: boolean; cpus?: string }): Promise<FarEnds> {
  const child = await startLineChild('ws-sink.ts', [dave ? '--dave' : '--no-dave'], { cpus });
  return {
    wsUrl: readString(child.hello, 'wsUrl') ?? '',
    endpoint: readString(child.hello, 'endpoint') ?? '',
    certPem: readString(child.hello, 'certPem') ?? '',
    request: (message) => child.request(message),
    async cpu() {
      const answer = await child.request({ op: 'cpu' });
      return { cpuMs: readNumber(answer, 'cpuMs') ?? 0, loopDelayP99Ms: readNumber(answer, 'loopDelayP99Ms') ?? 0 };
    },
    stop: () => child.stop(),
  };
}

/** The realtime URL the far end knows a guild's conversation by (one socket per guild). */
export function realtimeUrlOf(far: FarEndControl, guildId: string): string {
  return `${far.wsUrl}/guild/${guildId}`;
}

/** The bot's gateway side of the voice handshake, answered by the far end's voice server. */
export function adapterFor(far: FarEndControl, guildId: string): DiscordGatewayAdapterCreator {
  const sessionId = randomBytes(16).toString('hex');
  return (methods) => ({
    sendPayload(payload) {
      const request = parseVoiceStateRequest(payload);
      if (!request) return false;
      const state = {
        guild_id: guildId,
        channel_id: request.channelId,
        user_id: BOT_ID,
        session_id: sessionId,
        deaf: false,
        mute: false,
        self_deaf: false,
        self_mute: false,
        self_video: false,
        suppress: false,
        request_to_speak_timestamp: null,
      };
      if (request.channelId === null) {
        void far.request({ op: 'botLeft', guildId });
        methods.onVoiceStateUpdate(state);
        return true;
      }
      void far
        .request({ op: 'expectBot', guildId, session: { channelId: request.channelId, userId: BOT_ID, sessionId } })
        .then((answer) => {
          methods.onVoiceStateUpdate(state);
          methods.onVoiceServerUpdate({ token: readString(answer, 'token') ?? '', guild_id: guildId, endpoint: far.endpoint });
        });
      return true;
    },
    destroy() {},
  });
}

export function readPacketProblems(answer: Record<string, unknown>): BotPacketProblems {
  return {
    undecryptable: readNumber(answer, 'undecryptable') ?? 0,
    undecodable: readNumber(answer, 'undecodable') ?? 0,
    unencrypted: readNumber(answer, 'unencrypted') ?? 0,
    daveUndecryptable: readNumber(answer, 'daveUndecryptable') ?? 0,
  };
}

/** Opus silence, which the voice library plays between answers. */
const OPUS_SILENCE = Buffer.from([0xf8, 0xff, 0xfe]);

/**
 * When the connection sends audio (not silence): its own prepare and dispatch, watched. The library
 * prepares a packet on one tick of its 20 ms clock and sends it on the next.
 */
function watchAudioSent(connection: VoiceConnection): number[] {
  const sentAt: number[] = [];
  const prepare = connection.prepareAudioPacket.bind(connection);
  const dispatch = connection.dispatchAudio.bind(connection);
  let preparedAudio = false;
  connection.prepareAudioPacket = (buffer) => {
    preparedAudio = !buffer.equals(OPUS_SILENCE);
    return prepare(buffer);
  };
  connection.dispatchAudio = () => {
    const sent = dispatch();
    if (sent && preparedAudio) sentAt.push(Date.now());
    preparedAudio = false;
    return sent;
  };
  return sentAt;
}

/** One conversation as the bot holds it, with the probes the latencies are read from. */
export interface BotConversation {
  readonly guildId: string;
  readonly connection: VoiceConnection;
  /** The call as the voice server saw it once it settled: 1 for DAVE, 0 without; its MLS group's size. */
  readonly call: { daveProtocolVersion: number; daveGroupMembers: number };
  /** Forgets what the probes collected so far (before a measured window). */
  resetProbes(): void;
  /** Latencies in since the last reset or take, which it forgets: a user's packet arriving (ms) to the append that carried it. */
  takeInputLatencies(): number[];
  /** Appends sent since the last reset or take, which it forgets (each a websocket message). */
  takeAppends(): number;
  /**
   * The bot's own part of latency out since the last reset or take, which it forgets: each answer's first
   * audio to its play (the session's voice_latency out metric); the rest is the voice library's clock.
   */
  takePlayWaits(): number[];
  /** Latencies out of a `converse` answer: each answer's first delta arriving here to its first RTP packet there. */
  outputLatencies(converse: Record<string, unknown>): number[];
  /**
   * The same measured here (with `watchSending`): each answer's first delta to the first audio packet the
   * voice library sent after it, so the far end's own delays in noting the packet are not counted.
   */
  sentLatencies(converse: Record<string, unknown>): number[];
  leave(): void;
}

/**
 * The bot joins a call on `far` in `guildId` (a user is in the channel; with DAVE it waits for the call to
 * settle, so that its session holds the group's keys before anyone talks) and starts its VoiceSession.
 */
export async function openConversation(
  far: FarEndControl,
  {
    guildId,
    dave,
    onError,
    watchSending = false,
    meter,
  }: {
    guildId: string;
    dave: boolean;
    onError: (error: Error) => void;
    watchSending?: boolean;
    /** Starts the voice part's meter on the conversation once its session is up (bench/voice-meter.ts); default unmetered. */
    meter?: (conversation: MeteredConversation) => RunningMeter;
  },
): Promise<BotConversation> {
  const connection = joinVoiceChannel({ guildId, channelId: CHANNEL_ID, adapterCreator: adapterFor(far, guildId), selfDeaf: false });
  connection.on('error', onError);
  const audioSentAt = watchSending ? watchAudioSent(connection) : [];
  const firstDeltaAt = new Map<string, number>();
  const arrivals: number[] = [];
  const input: number[] = [];
  let appends = 0;
  const playWaits: number[] = [];
  const running = meter?.({ guildId, userId: USER_ID });
  const session = new VoiceSession({
    guildId,
    connection,
    settings: defaultVoiceSettings('svc'),
    connectRealtime: async () => {
      const client = await RealtimeClient.connect({
        wsBaseUrl: realtimeUrlOf(far, guildId),
        apiKey: 'bench-key-000000',
        model: 'svc-voice-latest',
        session: { turnDetection: { type: 'server_vad' } },
      });
      running?.opened(client);
      client.on('event', (event) => {
        if (event.type === 'response.output_audio.delta' && event.responseId !== undefined && !firstDeltaAt.has(event.responseId))
          firstDeltaAt.set(event.responseId, Date.now());
      });
      return client;
    },
    log: silentLogger,
    sessionLimitMs: REALTIME_SESSION_MAX_MS,
    reconnect: { baseMs: 500, maxMs: 5000, maxAttempts: 3 },
    botUserId: BOT_ID,
    metrics: {
      ...NO_METRICS,
      voiceLatency: (direction, seconds) => {
        if (direction === 'out') playWaits.push(seconds * 1000);
      },
    },
    probe: {
      onPacket: (receivedAt) => arrivals.push(receivedAt),
      onAppend: (frames, sentAt) => {
        appends++;
        for (let frame = 0; frame < frames && arrivals.length > 0; frame++) input.push(sentAt - arrivals.shift()!);
      },
    },
  });
  const leave = () => {
    running?.stop();
    session.stop();
    connection.destroy();
  };
  try {
    await far.request({ op: 'userJoined', guildId, channelId: CHANNEL_ID, userId: USER_ID });
    await entersState(connection, VoiceConnectionStatus.Ready, 10_000);
    const settled = await far.request({ op: 'waitForBotConnection', guildId });
    const call = {
      daveProtocolVersion: readNumber(settled, 'daveProtocolVersion') ?? 0,
      daveGroupMembers: readNumber(settled, 'daveGroupMembers') ?? 0,
    };
    if (call.daveProtocolVersion > 0 !== dave)
      throw new Error(`the ${dave ? 'DAVE' : 'plain'} call settled at DAVE protocol version ${call.daveProtocolVersion}`);
    await session.start();
    running?.start();
    return {
      guildId,
      connection,
      call,
      resetProbes() {
        arrivals.length = 0;
        input.length = 0;
        appends = 0;
        playWaits.length = 0;
        audioSentAt.length = 0;
      },
      takeInputLatencies: () => input.splice(0),
      takeAppends: () => {
        const taken = appends;
        appends = 0;
        return taken;
      },
      takePlayWaits: () => playWaits.splice(0),
      outputLatencies(converse) {
        const latencies: number[] = [];
        for (const answer of readArray(converse, 'answers') ?? []) {
          const deltaAt = firstDeltaAt.get(readString(answer, 'responseId') ?? '');
          const rtpAt = readNumber(answer, 'firstRtpAt');
          if (deltaAt !== undefined && rtpAt !== undefined) latencies.push(rtpAt - deltaAt);
        }
        return latencies;
      },
      sentLatencies(converse) {
        const latencies: number[] = [];
        for (const answer of readArray(converse, 'answers') ?? []) {
          const deltaAt = firstDeltaAt.get(readString(answer, 'responseId') ?? '');
          const sentAt = deltaAt === undefined ? undefined : audioSentAt.find((at) => at >= deltaAt);
          if (deltaAt !== undefined && sentAt !== undefined) latencies.push(sentAt - deltaAt);
        }
        return latencies;
      },
      leave,
    };
  } catch (error) {
    leave();
    throw error;
  }
}
